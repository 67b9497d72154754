//go:build chaos

package listener

import "github.com/redis/go-redis/v9"

// This file exists only in a chaos build (go build -tags chaos): it is the seam through
// which the harness's broken variants replace the fence. A default build has no such
// seam: its RedisStore always commits with commitScript.

// CommitScriptForChaos is the commit script's source, for variants that change it.
const CommitScriptForChaos = commitScript

// SetCommitScriptForChaos makes s commit with script instead of the fenced commit
// script. script must keep commitScript's contract of keys, arguments and reply (see
// commitScript). It is for self-validation only: what it installs is broken on purpose.
func SetCommitScriptForChaos[E Event](s *RedisStore[E], script string) {
	s.fence.script = redis.NewScript(script)
}
