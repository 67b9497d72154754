package election

import (
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// DefaultLeaseTTL is the LeaseTTL used when Config.LeaseTTL is zero. The other timings
// default to fractions of the LeaseTTL in use (see Config).
const DefaultLeaseTTL = 2 * time.Second

// Divisors of the derived defaults.
const (
	renewDivisor   = 3  // RenewInterval = LeaseTTL/3
	driftDivisor   = 20 // DriftMargin = LeaseTTL/20: tolerates a 5% clock-rate difference
	retryDivisor   = 4  // RetryInterval = LeaseTTL/4 (500ms with the default lease)
	requestDivisor = 2  // RequestTimeout = RenewInterval/2
)

// DefaultPresenceInterval is the PresenceInterval used when TakeoverOnDisconnect is set
// and PresenceInterval is zero (or the RetryInterval in use, if that is shorter).
const DefaultPresenceInterval = 20 * time.Millisecond

// Config configures an Elector. Zero fields take the documented default; New validates the
// result across fields and returns a *ConfigError (wrapping ErrInvalidConfig) if it is
// inconsistent.
type Config struct {
	// InstanceID names this elector in the lock value, in logs and in the history. It must
	// be unique among the electors of one Name and stable across restarts of the same node.
	// Required.
	InstanceID string

	// Name is the election's name: every key is prefixed with the hash tag "{Name}:"
	// (see LockKey, TokenKey, ReleaseChannel). It must not contain '{' or '}'.
	// Default: DefaultName ("fenceline").
	Name string

	// LeaseTTL is the lease's time to live in Redis, set by every acquire and renewal
	// (SET PX / PEXPIRE), so it must be a whole number of milliseconds. It bounds how long
	// the lease outlives a leader that stopped renewing. Default: 2s.
	LeaseTTL time.Duration

	// RenewInterval is the time between the send times of consecutive renewals (one is in
	// flight at a time; a renewal slower than this delays the next). Must be less than
	// LeaseTTL. Default: LeaseTTL/3.
	RenewInterval time.Duration

	// DriftMargin is subtracted from the local lease deadline: the leader steps down at
	// (send time of the last successful acquire or renew) + LeaseTTL - DriftMargin on its
	// own monotonic clock. It absorbs a clock-rate difference between this process and
	// Redis of up to DriftMargin/LeaseTTL. Must be less than LeaseTTL - RenewInterval, so
	// at least one renewal is sent before the deadline. Default: LeaseTTL/20.
	DriftMargin time.Duration

	// RetryInterval bounds how long a standby waits between acquire attempts when no
	// release notice arrives (it waits less when the lease's remaining PTTL is shorter),
	// and how long a node waits after an acquire error. Must be at most LeaseTTL.
	// Default: LeaseTTL/4 (500ms with the default lease).
	RetryInterval time.Duration

	// RequestTimeout is the deadline of each acquire, renew and release request, and of the
	// final release after Run's ctx is done. Must be less than RenewInterval.
	// Default: RenewInterval/2.
	RequestTimeout time.Duration

	// TakeoverOnDisconnect lets a standby take the lease from a leader whose process has
	// no connection to Redis left, without waiting for the lease to expire. Each elector
	// subscribes to its PresenceChannel while Run runs; a standby that finds the lease
	// held polls the holder's presence every PresenceInterval and, once no connection
	// listens on it, takes the lease with a new token in one script that checks, at
	// once, that the lock still holds that holder's value and that nobody listens.
	//
	// The trade-off: a crashed process (its kernel closes its sockets) is replaced in
	// milliseconds instead of a lease, but a leader that is alive and lost its
	// subscription's connection (a reset link, a Redis restart or failover) is deposed
	// while it still believes it leads, until its next renewal is rejected or its local
	// deadline passes. Its writes are then stale and a fenced store rejects them, so
	// use this option only if every write of the leader goes through such a store.
	// A host that vanishes without closing its sockets is still replaced only when the
	// lease expires. Needs the @pubsub commands SUBSCRIBE and PUBSUB (see the ACL in
	// docs/security.md). Default: false.
	TakeoverOnDisconnect bool

	// PresenceInterval is how often a standby polls the leader's presence when
	// TakeoverOnDisconnect is set: it bounds the takeover after a crash, at the cost of
	// one small script per standby per interval. Must be positive and at most
	// RetryInterval. Default: DefaultPresenceInterval, or RetryInterval if shorter.
	PresenceInterval time.Duration

	// LeadGrace bounds how long the elector waits, once a term has ended, for its lead
	// func to return before it calls lead overdue: it then logs lead-overdue (at error
	// level), counts it (Metrics.LeadOverdue), makes Check fail with ErrLeadOverdue and
	// calls OnLeadOverdue, and goes on waiting (no new term starts while lead runs). Must
	// not be negative. Default: LeaseTTL, the time another instance may need to lead.
	LeadGrace time.Duration

	// OnLeadOverdue, if set, is called once per term whose lead func has not returned
	// LeadGrace after the term ended, with that term, from Run's goroutine (Acquire's
	// for a Lock). A lead that ignores its context keeps working after another instance
	// may have taken over; its fenced writes are rejected, its unfenced effects are not.
	//
	// Default: nil, and the elector does not exit the process. A library that exits its
	// host by default would take down every other thing the process serves, and a test.
	// The conservative choice, the one client-go's users are told to make, is to exit:
	// set OnLeadOverdue: func(election.Term) { os.Exit(1) } and let the supervisor restart
	// the process. Without it, wire Check to a liveness probe: it fails from that moment.
	OnLeadOverdue func(t Term)

	// Clock measures the lease. Default: the system clock (monotonic readings and
	// runtime timers). Chaos runs inject a skewed one.
	Clock Clock

	// Logger receives the structured events became-leader, lost-leadership, renew-failed,
	// released, release-failed, acquire-failed, lead-overdue and lead-returned-late
	// (constant messages; data in attributes). Default: discard.
	Logger *slog.Logger

	// Metrics receives the elector's measurements (see NewPrometheusMetrics).
	// Default: NopMetrics, no metrics.
	Metrics Metrics

	// OnNewLeader, if set, is called with the lock holder (instance and token) each time
	// this elector observes one different from the last it observed: when it wins or
	// adopts a term (itself), and when an acquire attempt finds another instance holding
	// the lease. A standby attempts on a release notice, when the holder's PTTL runs out,
	// or after RetryInterval, whichever comes first, so it observes a new leader within
	// RetryInterval of the change. It is called from Run's goroutine, never concurrently
	// with itself and never after Run returns; it must return quickly (the elector waits
	// for it, on the lease's critical path). Default: nil, not called.
	OnNewLeader func(instance string, token int64)

	// Recorder is told about every request before it is sent and about its outcome, and
	// about every local step-down (see Recorder). Default: records nothing.
	Recorder Recorder
}

// WithDefaults returns c with every zero field set to its documented default: the
// config that New and NewLeadership use. It does not validate c.
func (c Config) WithDefaults() Config {
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.LeaseTTL == 0 {
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.RenewInterval == 0 {
		c.RenewInterval = c.LeaseTTL / renewDivisor
	}
	if c.DriftMargin == 0 {
		c.DriftMargin = c.LeaseTTL / driftDivisor
	}
	if c.RetryInterval == 0 {
		c.RetryInterval = c.LeaseTTL / retryDivisor
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = c.RenewInterval / requestDivisor
	}
	if c.TakeoverOnDisconnect && c.PresenceInterval == 0 {
		c.PresenceInterval = min(DefaultPresenceInterval, c.RetryInterval)
	}
	if c.LeadGrace == 0 {
		c.LeadGrace = c.LeaseTTL
	}
	if c.Clock == nil {
		c.Clock = systemClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Recorder == nil {
		c.Recorder = nopRecorder{}
	}
	if c.Metrics == nil {
		c.Metrics = NopMetrics{}
	}
	return c
}

// validate checks a config that has its defaults applied.
func (c Config) validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case c.InstanceID == "":
		return bad("InstanceID", "required")
	case strings.ContainsAny(c.Name, "{}"):
		return bad("Name", "%q must not contain '{' or '}' (it is the keys' hash tag)", c.Name)
	case c.LeaseTTL < time.Millisecond:
		return bad("LeaseTTL", "%v must be at least 1ms", c.LeaseTTL)
	case c.LeaseTTL%time.Millisecond != 0:
		return bad("LeaseTTL", "%v must be a whole number of milliseconds (Redis PX)", c.LeaseTTL)
	case c.RenewInterval <= 0:
		return bad("RenewInterval", "%v must be positive", c.RenewInterval)
	case c.RenewInterval >= c.LeaseTTL:
		return bad("RenewInterval", "%v must be less than LeaseTTL (%v)", c.RenewInterval, c.LeaseTTL)
	case c.DriftMargin < 0:
		return bad("DriftMargin", "%v must not be negative", c.DriftMargin)
	case c.DriftMargin >= c.LeaseTTL-c.RenewInterval:
		return bad("DriftMargin", "%v must be less than LeaseTTL - RenewInterval (%v - %v)",
			c.DriftMargin, c.LeaseTTL, c.RenewInterval)
	case c.RetryInterval <= 0:
		return bad("RetryInterval", "%v must be positive", c.RetryInterval)
	case c.RetryInterval > c.LeaseTTL:
		return bad("RetryInterval", "%v must be at most LeaseTTL (%v)", c.RetryInterval, c.LeaseTTL)
	case c.RequestTimeout <= 0:
		return bad("RequestTimeout", "%v must be positive", c.RequestTimeout)
	case c.RequestTimeout >= c.RenewInterval:
		return bad("RequestTimeout", "%v must be less than RenewInterval (%v)", c.RequestTimeout, c.RenewInterval)
	case c.LeadGrace < 0:
		return bad("LeadGrace", "%v must not be negative", c.LeadGrace)
	case !c.TakeoverOnDisconnect && c.PresenceInterval != 0:
		return bad("PresenceInterval", "%v is set but TakeoverOnDisconnect is not", c.PresenceInterval)
	case c.TakeoverOnDisconnect && c.PresenceInterval <= 0:
		return bad("PresenceInterval", "%v must be positive", c.PresenceInterval)
	case c.TakeoverOnDisconnect && c.PresenceInterval > c.RetryInterval:
		return bad("PresenceInterval", "%v must be at most RetryInterval (%v)", c.PresenceInterval, c.RetryInterval)
	}
	return nil
}
