// Package variants holds the deliberately broken designs that fenceline's self-validation
// runs to prove that the harness can fail. EVERY VARIANT BUT Reference IS BROKEN ON
// PURPOSE. They live here, in one place, so that no production code path can reach them:
// `fenceline node` accepts a variant other than reference only together with --chaos.
//
// Each variant names the fault kinds that expose it. `make validate` runs each under its
// faults and requires the checker to call the runs invalid.
package variants

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/source"
)

// Names of the variants.
const (
	Reference        = "reference"
	NoFence          = "no-fence"
	ClientCheck      = "client-check"
	StringCompare    = "string-compare"
	LeaseOnly        = "lease-only"
	NonAtomicRelease = "non-atomic-release"
	VolatileRedis    = "volatile-redis"
)

// Variant describes one design.
type Variant struct {
	Name        string
	Description string
	// Faults are the fault kinds that expose the variant.
	Faults []string
	// Unsafe is true when the variant must be caught (the checker must find runs under
	// Faults invalid). NonAtomicRelease is not: it breaks mutual exclusion of the lease,
	// which the fence is there to survive; the harness reports its overlap.
	Unsafe bool
}

var all = []Variant{
	{Reference, "the real design: fenced commit in one Lua script, lease with local step-down",
		nemesis.All, false},
	{NoFence, "the cursor and effects are written with a plain write, whoever writes last wins; an in-flight write is not abandoned when the term ends",
		[]string{nemesis.Pause, nemesis.Delay}, true},
	{ClientCheck, "the writer reads the stored token and cursor, compares them itself, then writes in a second round trip",
		[]string{nemesis.Pause, nemesis.Delay}, true},
	{StringCompare, "the store compares tokens as strings, so token 10 is older than 9",
		[]string{nemesis.Kill, nemesis.Stop}, true},
	{LeaseOnly, "no fence: the store accepts any write; the leader writes only while its local lease deadline holds",
		[]string{nemesis.Pause, nemesis.Delay, nemesis.Clock}, true},
	{NonAtomicRelease, "the lease is released with GET then DEL in two round trips, which can delete a newer leader's lock",
		[]string{nemesis.Stop, nemesis.Delay}, false},
	{VolatileRedis, "Redis runs without an append-only file, so a restart resets the token counter and tokens repeat",
		[]string{nemesis.RedisRestartVolatile}, true},
}

// ReferenceFaults are the faults under which the reference runs to be compared with v
// (`make validate`): v's faults, except that the reference's requirement of a
// persistent Redis stays met. redis-restart-volatile becomes redis-restart, which the
// schedule places at the same times, with the append-only file on: without it the
// reference repeats tokens too, by design, and VolatileRedis is exactly that deployment.
func (v Variant) ReferenceFaults() []string {
	out := make([]string, len(v.Faults))
	for i, f := range v.Faults {
		if f == nemesis.RedisRestartVolatile {
			f = nemesis.RedisRestart
		}
		out[i] = f
	}
	return out
}

// All returns every variant, the reference first.
func All() []Variant { return append([]Variant(nil), all...) }

// ErrUnknown is returned for a name that is not a variant.
var ErrUnknown = errors.New("variants: unknown variant")

// ByName returns the variant called name.
func ByName(name string) (Variant, error) {
	for _, v := range all {
		if v.Name == name {
			return v, nil
		}
	}
	var names []string
	for _, v := range all {
		names = append(names, v.Name)
	}
	return Variant{}, fmt.Errorf("%w %q (known: %s)", ErrUnknown, name, strings.Join(names, ", "))
}

// Store returns the cursor store of the named variant.
func Store(name string, client redis.UniversalClient, cfg listener.StoreConfig) (listener.CursorStore, error) {
	switch name {
	case Reference, NonAtomicRelease, VolatileRedis:
		return listener.NewRedisStore(client, cfg)
	case NoFence:
		cfg.Script = unfencedScript
		s, err := listener.NewRedisStore(client, cfg)
		return uncancellable{s}, err
	case LeaseOnly:
		cfg.Script = unfencedScript
		return listener.NewRedisStore(client, cfg)
	case StringCompare:
		cfg.Script = stringCompareScript
		return listener.NewRedisStore(client, cfg)
	case ClientCheck:
		cfg.Script = unfencedScript
		s, err := listener.NewRedisStore(client, cfg)
		return clientCheck{s}, err
	}
	_, err := ByName(name)
	return nil, err
}

// The broken scripts are the reference script with its check replaced, so that they
// differ from it in exactly one place (a test makes sure the replacement happened).
const referenceCheck = `if tonumber(ARGV[3]) < tonumber(stored) then
  result = 'stale-token'
elseif tonumber(ARGV[4]) ~= tonumber(cursor) then
  result = 'cursor-conflict'
end`

var (
	unfencedScript      = strings.Replace(listener.CommitScript, referenceCheck, `-- no check: whoever writes last wins`, 1)
	stringCompareScript = strings.Replace(listener.CommitScript, referenceCheck, `if ARGV[3] < stored then
  result = 'stale-token'
elseif tonumber(ARGV[4]) ~= tonumber(cursor) then
  result = 'cursor-conflict'
end`, 1)
)

// uncancellable finishes a commit it has started even when the term ends meanwhile, as a
// listener does that takes no context: the write lands whenever it lands.
type uncancellable struct{ *listener.RedisStore }

func (u uncancellable) Commit(ctx context.Context, token, from int64, events []source.Event) error {
	return u.RedisStore.Commit(context.WithoutCancel(ctx), token, from, events)
}

// clientCheck checks the fence in the client: it loads the stored token and cursor,
// compares, and only then writes, unfenced, in a second round trip. Anything that
// happens between the two round trips (a pause, a delay, another leader) goes unseen.
type clientCheck struct{ *listener.RedisStore }

func (c clientCheck) Commit(ctx context.Context, token, from int64, events []source.Event) error {
	cursor, stored, err := c.RedisStore.Load(ctx)
	if err != nil {
		return err
	}
	if token < stored {
		return &listener.RejectedError{Reason: listener.ErrStaleToken, Token: token, From: from, StoredToken: stored, StoredCursor: cursor}
	}
	if cursor != from {
		return &listener.RejectedError{Reason: listener.ErrCursorConflict, Token: token, From: from, StoredToken: stored, StoredCursor: cursor}
	}
	return c.RedisStore.Commit(ctx, token, from, events)
}
