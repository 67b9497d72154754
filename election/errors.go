package election

import "errors"

// Sentinel errors. Functions wrap them with %w; test them with errors.Is.
var (
	// ErrInvalidConfig is wrapped by every *ConfigError that New returns.
	ErrInvalidConfig = errors.New("election: invalid config")
	// ErrRunning is returned by Run, Acquire and TryAcquire while the same Elector already
	// campaigns: a Run that has not returned, or a Lock whose Release has not returned.
	ErrRunning = errors.New("election: already running")
	// ErrLeaseHeld is the Recorder error of an acquire that found the lease held (by
	// another instance, or by an earlier term of this one).
	ErrLeaseHeld = errors.New("election: lease held")
	// ErrNotPresent is the Recorder error of an acquire refused because this instance's
	// own presence channel had no listener in Redis yet (Config.TakeoverOnDisconnect:
	// its subscription is still being made or remade).
	ErrNotPresent = errors.New("election: own presence not visible in redis")
	// ErrNotHeld is the Recorder error of a renew or release that found the lock no longer
	// holding this term's value, and the cause of a term context ended by such a renew.
	ErrNotHeld = errors.New("election: lease not held by this term")
	// ErrLeaseExpired is the cause of a term context ended because the local lease
	// deadline passed without a successful renewal.
	ErrLeaseExpired = errors.New("election: local lease deadline passed")
	// ErrLeaseLost is the cause of a term context ended because its lease said by itself
	// that it is lost (see LostLease).
	ErrLeaseLost = errors.New("election: lease lost")
	// ErrLeadReturned is the cause of a term context ended because lead returned on its
	// own while the term was still valid.
	ErrLeadReturned = errors.New("election: lead returned")
	// ErrReleased is the cause of a Lock's context ended by Release, and is wrapped by the
	// error of a second Release.
	ErrReleased = errors.New("election: lock released")
	// ErrMalformedLock is returned for a lock value that is not "<instance>:<token>".
	ErrMalformedLock = errors.New("election: malformed lock value")
	// ErrUnexpectedReply is returned when a script's reply does not have the expected shape.
	ErrUnexpectedReply = errors.New("election: unexpected reply from redis")
	// ErrRetryingClient is wrapped (with ErrInvalidConfig) by the *ConfigError that New
	// returns for a go-redis client that re-sends commands (MaxRetries not -1). The
	// listener's NewRedisStore refuses such a client with the same message.
	ErrRetryingClient = errors.New("redis client retries commands")
	// ErrLeaseOverdue is returned by Check when the elector believes it leads although its
	// local lease deadline passed more than the tolerated time ago: a stuck leader.
	ErrLeaseOverdue = errors.New("election: leader past its local lease deadline")
	// ErrLeadOverdue is returned by Check while a lead func has not returned LeadGrace
	// after its term ended.
	ErrLeadOverdue = errors.New("election: lead did not return after its term ended")
)

// ConfigError reports an invalid Config field. errors.Is(err, ErrInvalidConfig) holds, and
// errors.Is(err, Err) when Err is set.
type ConfigError struct {
	Field  string // the offending field, e.g. "RenewInterval"
	Reason string // what is wrong, with the values involved
	Err    error  // a more specific sentinel (ErrRetryingClient), or nil
}

func (e *ConfigError) Error() string {
	return ErrInvalidConfig.Error() + ": " + e.Field + ": " + e.Reason
}

// Unwrap returns ErrInvalidConfig.
func (e *ConfigError) Unwrap() error { return ErrInvalidConfig }

// Is reports whether target is e.Err, so that errors.Is finds the specific sentinel too.
func (e *ConfigError) Is(target error) bool { return e.Err != nil && target == e.Err }
