package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Kind names what an event is about.
type Kind string

// Kinds of events. Store operations come from the cursor store, election steps from the
// elector, faults from the harness.
const (
	KindLoad     Kind = "load"      // cursor store: read cursor and highest accepted token
	KindCommit   Kind = "commit"    // cursor store: fenced write of effects and new cursor
	KindWrite    Kind = "write"     // cursor store: fenced write that moves no cursor (only its token is recorded)
	KindAcquire  Kind = "acquire"   // election: SET NX PX + INCR of the token counter
	KindRenew    Kind = "renew"     // election: compare-and-pexpire
	KindRelease  Kind = "release"   // election: compare-and-delete
	KindStepDown Kind = "step-down" // election: local decision to stop leading (Type info, no invoke)
	KindFault    Kind = "fault"     // harness: a fault injected (invoke) and healed (ok)
)

// FaultRedisUnavailable is the fault kind of a Redis outage that the harness did not
// inject but found with its own probe: an invoke when Redis stopped answering, an ok (or
// an info, if it never answered again) when it did, with the duration in Reason.
const FaultRedisUnavailable = "redis-unavailable"

// ReasonTakeover begins the Reason of an ok acquire that took the lease from a holder
// whose connection to Redis had closed (election.Config.TakeoverOnDisconnect), followed
// by a space and the lock value taken over: "takeover-on-disconnect n1:7".
const ReasonTakeover = "takeover-on-disconnect"

// Type is the phase of an event, as in Jepsen.
type Type string

// Types of events. An operation is an invoke followed by exactly one of ok, fail or info.
const (
	Invoke Type = "invoke"
	OK     Type = "ok"   // it happened
	Fail   Type = "fail" // it certainly did not happen (for example a rejected commit)
	Info   Type = "info" // unknown: it may or may not have happened
)

// Errors carried in Event.Error for failed store and election operations.
const (
	ErrStaleToken     = "stale-token"     // commit rejected: token below the highest accepted
	ErrCursorConflict = "cursor-conflict" // commit rejected: cursor moved since it was read
	// ErrBodyFailed is the error of an ok write whose Lua body raised an error after the
	// token check had passed: the token was recorded as accepted, and whatever the body
	// wrote before the error stands (Redis does not roll a script back).
	ErrBodyFailed = "body-failed"
	ErrNotHeld    = "not-held" // acquire: lease held by another; renew/release: not ours any more
	// ErrNotPresent: an acquire refused because the node's own presence was not yet
	// visible in Redis, which only an election with takeover on disconnect asks for.
	ErrNotPresent = "not-present"
	// ErrMalformedReply begins the error of an info election or store operation whose
	// server answered, but not as the protocol allows (a reply of the wrong shape, a
	// token that is not an integer): no fault makes that, a bug of the server's side does.
	ErrMalformedReply = "malformed-reply"
)

// Event is one line of a history. Fields that do not apply are omitted.
type Event struct {
	// ID identifies the operation; its invoke and completion share it. Unique within a run.
	ID string `json:"id"`
	// Type is invoke, ok, fail or info.
	Type Type `json:"type"`
	// Kind is what the operation is.
	Kind Kind `json:"kind"`
	// Node is the instance id of the node (or the harness target of a fault).
	Node string `json:"node"`
	// Time is host wall-clock time in nanoseconds since the Unix epoch.
	Time int64 `json:"time"`
	// Token is the fencing token: the writer's for commit, the one obtained (ok) for
	// acquire, the term's for renew, release and step-down, the store's highest accepted
	// token for an ok load.
	Token int64 `json:"token,omitempty"`
	// From is the cursor a commit expects to find; To the cursor it writes.
	From int64 `json:"from,omitempty"`
	To   int64 `json:"to,omitempty"`
	// Cursor is the cursor an ok load returned.
	Cursor int64 `json:"cursor,omitempty"`
	// Events is the number of events in a commit's batch.
	Events int `json:"events,omitempty"`
	// Error says why an operation failed or is unknown (ErrStaleToken, a timeout...).
	Error string `json:"error,omitempty"`
	// Reason says why a node stepped down, details a fault, or marks an ok acquire as a
	// takeover (ReasonTakeover).
	Reason string `json:"reason,omitempty"`
	// Fault is the fault kind (kill, pause, partition...) of a KindFault event.
	Fault string `json:"fault,omitempty"`
	// Lease is, for a step-down, the lease in nanoseconds that the term's local deadline
	// counted on from the send of the grant that set it (election.LeaseRecorder); 0 when
	// the elector does not say.
	Lease int64 `json:"lease_ns,omitempty"`
	// InEffectFrom and InEffectTo are, on a fault's completion, an interval in which the
	// fault was surely in effect throughout: from when its injection saw its effect in
	// place (a fault that checks it: nemesis.Confirmer) to when its heal began. Both 0
	// when the harness does not know one.
	InEffectFrom int64 `json:"in_effect_from,omitempty"`
	InEffectTo   int64 `json:"in_effect_to,omitempty"`
}

// ErrBadInput is the root of every error that says the input itself is wrong (as
// opposed to an I/O failure): errors.Is(err, ErrBadInput) holds for ErrMalformed,
// ErrNoRun, ErrBadRunFile and everything LoadRun returns about a file's content. The
// fenceline command maps it to exit code 2.
var ErrBadInput = errors.New("history: bad input")

// ErrMalformed is returned (wrapped, with the file and line) for a line that is not a
// valid event. It wraps ErrBadInput.
var ErrMalformed error = &inputError{"history: malformed event"}

// inputError is a sentinel that is also ErrBadInput.
type inputError struct{ msg string }

func (e *inputError) Error() string { return e.msg }
func (e *inputError) Unwrap() error { return ErrBadInput }

// MaxTime is the largest timestamp a history may carry (2^62 ns after the Unix epoch,
// in the year 2116). A real host clock is far below it, and the headroom keeps every
// sum and difference of two timestamps the checker computes from overflowing.
const MaxTime = int64(1) << 62

// Validate reports whether e is well formed.
func (e Event) Validate() error {
	if e.ID == "" {
		return fmt.Errorf("%w: missing id", ErrMalformed)
	}
	switch e.Type {
	case Invoke, OK, Fail, Info:
	default:
		return fmt.Errorf("%w: unknown type %q", ErrMalformed, e.Type)
	}
	switch e.Kind {
	case KindLoad, KindCommit, KindWrite, KindAcquire, KindRenew, KindRelease, KindStepDown, KindFault:
	default:
		return fmt.Errorf("%w: unknown kind %q", ErrMalformed, e.Kind)
	}
	if e.Time <= 0 || e.Time > MaxTime {
		return fmt.Errorf("%w: time %d is outside 1..%d (host nanoseconds since 1970)", ErrMalformed, e.Time, MaxTime)
	}
	if e.Lease < 0 || e.Lease != 0 && e.Kind != KindStepDown {
		return leaseError(e.Lease, e.Kind)
	}
	return inEffectError(e.InEffectFrom, e.InEffectTo, e.Kind, e.Type)
}

func leaseError(lease int64, kind Kind) error {
	return fmt.Errorf("%w: lease_ns %d on a %s event: only a step-down counts a lease, and never a negative one", ErrMalformed, lease, kind)
}

// inEffectError says what is wrong with an event's in-effect interval, nil if nothing.
func inEffectError(from, to int64, kind Kind, typ Type) error {
	switch {
	case from == 0 && to == 0:
		return nil
	case kind != KindFault || typ == Invoke:
		return fmt.Errorf("%w: in_effect_from/in_effect_to on a %s %s event: only a fault's completion carries them", ErrMalformed, kind, typ)
	case from <= 0 || to < from || to > MaxTime:
		return fmt.Errorf("%w: in_effect_from %d and in_effect_to %d are not an interval within 1..%d", ErrMalformed, from, to, MaxTime)
	}
	return nil
}

// Recorder writes events as JSON lines. It is safe for concurrent use. Each event is
// written with one write call so that a process killed mid-run leaves whole lines.
type Recorder struct {
	mu  sync.Mutex
	w   io.Writer
	err error
	now func() time.Time
}

// NewRecorder returns a Recorder writing to w. A nil w discards events.
func NewRecorder(w io.Writer) *Recorder {
	return &Recorder{w: w, now: time.Now}
}

// Now returns the host wall-clock time in nanoseconds, the timestamp every event carries.
func (r *Recorder) Now() int64 { return r.now().UnixNano() }

// Record stamps e with the current host time when e.Time is zero and writes it.
// The first write error is kept and returned by Err; later events are dropped.
func (r *Recorder) Record(e Event) {
	if r == nil || r.w == nil {
		return
	}
	if e.Time == 0 {
		e.Time = r.Now()
	}
	b, err := json.Marshal(e)
	if err != nil {
		panic(err) // Event holds only strings and numbers.
	}
	b = append(b, '\n')
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return
	}
	if _, err := r.w.Write(b); err != nil {
		r.err = fmt.Errorf("history: write: %w", err)
	}
}

// Err returns the first write error, if any.
func (r *Recorder) Err() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Read parses a history from rd. name is used in error messages (a file name).
// It stops at the first malformed line and names it. Record writes each line with one
// write call, so even a node killed with SIGKILL leaves no torn line to excuse; a torn
// last line (a full disk) is an error here too: LoadRun is the reader that tolerates it.
func Read(rd io.Reader, name string) ([]Event, error) {
	b := newBuilder(0)
	if _, err := b.read(rd, name, false); err != nil {
		return nil, err
	}
	return b.events().All(), nil
}

// maxLine bounds one line of a history or audit file.
const maxLine = 4 << 20

// scanLines calls fn for every non-empty line of rd with its 1-based number; torn is
// true for a last line with no newline after it. Errors name the file and line.
func scanLines(rd io.Reader, name string, fn func(line int, b []byte, torn bool) error) error {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 256*1024), maxLine)
	unterminated := false
	sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
		adv, tok, err := bufio.ScanLines(data, atEOF)
		unterminated = atEOF && tok != nil && adv == len(data) && data[len(data)-1] != '\n'
		return adv, tok, err
	})
	line := 0
	for sc.Scan() {
		line++
		if b := sc.Bytes(); len(b) > 0 {
			if err := fn(line, b, unterminated); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s:%d: %w: line longer than %d bytes", name, line+1, ErrMalformed, maxLine)
		}
		return fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	return nil
}

// read appends the events of rd to b. With tolerateTorn, a last line that has no
// newline and does not parse — a write cut short by a full disk or a crash — is dropped
// and described in the returned warning.
func (b *builder) read(rd io.Reader, name string, tolerateTorn bool) (string, error) {
	warning := ""
	err := scanLines(rd, name, func(line int, l []byte, torn bool) error {
		if err := b.decode(l); err != nil {
			if torn && tolerateTorn {
				warning = fmt.Sprintf("%s:%d: torn last line dropped (%d bytes, cut mid-line with no newline)", name, line, len(l))
				return nil
			}
			return fmt.Errorf("%s:%d: %w: %v", name, line, ErrMalformed, err)
		}
		if err := b.validate(); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		b.push()
		return nil
	})
	return warning, err
}

// ReadFile reads a history file.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	return Read(f, path)
}
