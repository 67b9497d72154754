//go:build chaos

package pgstore

import (
	"fmt"
	"strings"
)

// This file exists only in a chaos build (go build -tags chaos): it is the seam through
// which the harness's broken variants change the fence. A default build has no such
// seam: its Store always commits through the full conditional UPDATE.

// ReplaceInFenceForChaos replaces old, once, in the fence's UPDATE of s (see the package
// doc: "$1 name, $2 token, $3 from, $4 to"). It fails if old is not in it, so that a
// variant cannot silently run the real fence. It is for self-validation only: what it
// installs is broken on purpose.
func ReplaceInFenceForChaos[E interface{ Position() int64 }](s *Store[E], old, replacement string) error {
	if !strings.Contains(s.fence.fence, old) {
		return fmt.Errorf("pgstore: the fence %q does not contain %q", s.fence.fence, old)
	}
	s.fence.fence = strings.Replace(s.fence.fence, old, replacement, 1)
	return nil
}
