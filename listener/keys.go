package listener

import (
	"fmt"
	"strings"
)

// DefaultName is the election name used when RedisConfig.Name is empty. It must match the
// election's, whose keys share the hash tag.
const DefaultName = "fenceline"

// Keys are the Redis keys of a store's own records. They share the election's hash tag
// "{name}", so they live in one Redis Cluster slot with the lease, the token counter and
// the batch's effects, and one Lua script may touch them all.
type Keys struct {
	// Cursor is a hash with fields "cursor" (position of the last applied event) and
	// "token" (the highest fencing token accepted). Missing fields read as 0.
	Cursor string
	// Audit is a stream with one entry per fenced write attempt, accepted or rejected:
	// fields op, node, token, from, to, result, time (Redis TIME, microseconds), and
	// error for a bad-argument result. It is trimmed to about RedisConfig.AuditMaxLen
	// entries.
	Audit string
	// prefix is "{name}:", the prefix of every key, effects' keys included.
	prefix string
}

// KeysFor returns the keys of election name (DefaultName if empty): "{name}:cursor" and
// "{name}:audit".
func KeysFor(name string) Keys {
	if name == "" {
		name = DefaultName
	}
	p := "{" + name + "}:"
	return Keys{Cursor: p + "cursor", Audit: p + "audit", prefix: p}
}

// Key returns the Redis key that an effect's key k names: "{name}:k".
func (k Keys) Key(name string) string { return k.prefix + name }

// reservedKeys are the names no effect may write: the store's own records and the
// election's lease and token counter, which share the prefix.
var reservedKeys = map[string]bool{"cursor": true, "audit": true, "lock": true, "token": true}

// checkEffectKey checks the name of an effect's key.
func checkEffectKey(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty key")
	case reservedKeys[name]:
		return fmt.Errorf("key %q is the store's or the election's own", name)
	case strings.ContainsAny(name, "{}"):
		return fmt.Errorf("key %q: braces would read as a hash tag", name)
	}
	return nil
}
