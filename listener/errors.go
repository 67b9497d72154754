package listener

import (
	"errors"
	"fmt"
)

// Sentinel errors. Functions wrap them with %w; test them with errors.Is.
var (
	// ErrStaleToken: a commit was rejected because its token is below the highest token
	// the store has accepted. Nothing was applied. Run returns it (wrapped) when its term's
	// token has been superseded.
	ErrStaleToken = errors.New("listener: stale fencing token")
	// ErrCursorConflict: a commit was rejected because the stored cursor is not the one the
	// batch starts from (another writer moved it). Nothing was applied.
	ErrCursorConflict = errors.New("listener: cursor conflict")
	// ErrOutcomeUnknown: a store request failed in a way that leaves its outcome unknown
	// (timeout, lost connection, unexpected reply): the commit may have been applied. Its
	// operation id (in the error text) can be looked up in the store's audit.
	ErrOutcomeUnknown = errors.New("listener: outcome unknown")
	// ErrUnexpectedReply: the store answered a fenced request, but not as its script's
	// protocol allows. It comes wrapped with ErrOutcomeUnknown (the script ran, and may
	// have written); no fault of the network or of Redis makes it, a bug of the
	// script's side does.
	ErrUnexpectedReply = errors.New("listener: unexpected reply from the fence's script")
	// ErrInvalidBatch: Commit was called with a batch it cannot send (empty, positions
	// not strictly increasing after from, effects the store cannot apply), or a fenced
	// write with work it cannot send. Nothing was sent, unless it is a RejectedError's
	// reason: then the store refused it.
	ErrInvalidBatch = errors.New("listener: invalid batch")
	// ErrBodyFailed: the Lua body of a fenced write (RedisFence.Eval) passed the fence
	// and raised an error. What it wrote before the error is applied, under its token.
	ErrBodyFailed = errors.New("listener: fenced body failed")
	// ErrInvalidConfig is wrapped by the errors of the constructors for a bad
	// configuration.
	ErrInvalidConfig = errors.New("listener: invalid config")
)

// RejectedError is the error of a commit or fenced write the store rejected. It unwraps to ErrStaleToken,
// ErrCursorConflict or (a commit the store found malformed) ErrInvalidBatch and carries
// what the store held at the time.
type RejectedError struct {
	Reason       error  // ErrStaleToken, ErrCursorConflict or ErrInvalidBatch
	Op           string // operation id of the commit
	Token        int64  // the writer's token
	From, To     int64  // the cursor move the writer asked for (0, 0: a write that moves none)
	StoredToken  int64  // the highest token the store had accepted
	StoredCursor int64  // the store's cursor
}

// Error describes the rejection with the store's values.
func (e *RejectedError) Error() string {
	return fmt.Sprintf("%v: commit %s with token %d from %d to %d; store has token %d, cursor %d",
		e.Reason, e.Op, e.Token, e.From, e.To, e.StoredToken, e.StoredCursor)
}

// Unwrap returns Reason.
func (e *RejectedError) Unwrap() error { return e.Reason }

// Outcome of the rejection, for metrics and recorders.
func (e *RejectedError) Outcome() Outcome {
	switch {
	case errors.Is(e.Reason, ErrStaleToken):
		return OutcomeStaleToken
	case errors.Is(e.Reason, ErrCursorConflict):
		return OutcomeCursorConflict
	}
	return OutcomeBadArgument
}

func configErr(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, a...)...)
}
