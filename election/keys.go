package election

import (
	"fmt"
	"strconv"
	"strings"
)

// DefaultName is the election name used when Config.Name (or the name passed to a key
// function) is empty.
const DefaultName = "fenceline"

// KeyPrefix returns "{name}:", the prefix of every key of the election name (DefaultName
// if name is empty). The braces are a Redis Cluster hash tag: every key with this prefix
// lives in one slot, so the Lua scripts can touch them together. Other packages that keep
// state next to the lease (the listener's cursor store) use the same prefix.
func KeyPrefix(name string) string {
	if name == "" {
		name = DefaultName
	}
	return "{" + name + "}:"
}

// LockKey returns the key of the lease, "{name}:lock". It holds LockValue(instance,
// token) of the current term and expires LeaseTTL after the last acquire or renewal.
func LockKey(name string) string { return KeyPrefix(name) + "lock" }

// TokenKey returns the key of the fencing-token counter, "{name}:token". Each successful
// acquire INCRs it; it never expires and is never decremented.
func TokenKey(name string) string { return KeyPrefix(name) + "token" }

// ReleaseChannel returns the pub/sub channel "{name}:released" on which a graceful
// release publishes the released lock value.
func ReleaseChannel(name string) string { return KeyPrefix(name) + "released" }

// PresenceChannel returns the pub/sub channel "{name}:presence:<instance>" to which an
// elector with Config.TakeoverOnDisconnect subscribes for as long as it runs: Redis drops
// the subscription when the connection closes, which is how a standby learns that the
// leader's process died without waiting out its lease.
func PresenceChannel(name, instance string) string { return KeyPrefix(name) + "presence:" + instance }

// LockValue returns the lock value of a term: "<instance>:<token>".
func LockValue(instance string, token int64) string {
	return instance + ":" + strconv.FormatInt(token, 10)
}

// ParseLockValue splits a lock value into its instance and token. The instance may itself
// contain colons: the token is what follows the last one. It returns an error wrapping
// ErrMalformedLock if v is not a lock value.
func ParseLockValue(v string) (instance string, token int64, err error) {
	i := strings.LastIndexByte(v, ':')
	if i <= 0 {
		return "", 0, fmt.Errorf("%w: %q", ErrMalformedLock, v)
	}
	token, err = strconv.ParseInt(v[i+1:], 10, 64)
	if err != nil || token <= 0 {
		return "", 0, fmt.Errorf("%w: %q", ErrMalformedLock, v)
	}
	return v[:i], token, nil
}
