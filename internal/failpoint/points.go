package failpoint

import (
	"errors"
	"slices"

	"github.com/fenceline/fenceline/internal/namelist"
)

// Names of the failpoints: the one place where each is documented. The election points
// are in package election (release-between-steps in package variants, whose non-atomic
// release has the two steps, and acquire-after-win there too, inside late-token's
// acquire), the listener points in package listener.
const (
	// AcquireBeforeReply: Redis has run the acquire script (the lock may be ours, with a
	// new token), and the elector has not yet read the reply. A sleep here is a leader
	// that starts its term late; an error is a lost reply; exit is a crash that leaves a
	// lock behind.
	AcquireBeforeReply = "election/acquire-before-reply"
	// AcquireAfterWin: the acquire won and was recorded; the term has not started. The
	// moment "just after acquire": a pause or crash of a brand-new leader. The
	// late-token variant reaches it inside its acquire, after the SET NX that wins the
	// lock and before the INCR that mints its token.
	AcquireAfterWin = "election/acquire-after-win"
	// RenewBeforeSend: a renewal is due and not yet sent. A sleep past the lease makes the
	// leader miss its renewal: it must step down on its local deadline.
	RenewBeforeSend = "election/renew-before-send"
	// ReleaseBeforeSend: a leader steps down gracefully and has not yet sent its release.
	ReleaseBeforeSend = "election/release-before-send"
	// ReleaseBetweenSteps: in the non-atomic release variant, between its GET (the lock
	// is ours) and its DEL. A sleep past the lease makes the DEL delete a newer leader's
	// lock. The reference's release is one script and has no such point.
	ReleaseBetweenSteps = "election/release-between-steps"
	// TakeoverBetweenSteps: a standby's poll found the leader's presence gone
	// (election.Config.TakeoverOnDisconnect) and its takeover is not yet sent. A sleep
	// here lets every standby see the same vanished leader before the first takes over:
	// the reference's takeover re-checks the lock in its script, so only one wins.
	TakeoverBetweenSteps = "election/takeover-between-steps"
	// ListenerAfterLoad: the listener has loaded the cursor and not yet fetched or
	// committed. A newer leader that commits now moves the cursor under it.
	ListenerAfterLoad = "listener/after-load"
	// ListenerBeforeCommit: a batch is about to be committed. A sleep past the lease is
	// the stale leader that wakes up and writes: only the fence stops that write.
	ListenerBeforeCommit = "listener/before-commit"
	// ListenerAfterCommitBeforeAck: the Redis store's commit script has run; its reply
	// is not yet read. An error is a lost reply (the outcome is unknown, for the audit
	// stream to resolve); exit is a crash right after a write.
	ListenerAfterCommitBeforeAck = "listener/after-commit-before-ack"
)

// Point is one failpoint and why it is there.
type Point struct {
	Name string
	Doc  string
}

var points = []Point{
	{AcquireBeforeReply, "the acquire ran in Redis; its reply is not yet read"},
	{AcquireAfterWin, "the acquire won; the term has not started"},
	{RenewBeforeSend, "a renewal is due and not yet sent"},
	{ReleaseBeforeSend, "a graceful release is not yet sent"},
	{ReleaseBetweenSteps, "non-atomic-release variant: between its GET and its DEL"},
	{TakeoverBetweenSteps, "a standby saw the leader's presence gone; its takeover is not yet sent"},
	{ListenerAfterLoad, "the listener loaded the cursor; nothing fetched or committed yet"},
	{ListenerBeforeCommit, "a batch is about to be committed"},
	{ListenerAfterCommitBeforeAck, "the commit script ran; its reply is not yet read"},
}

// Points returns every failpoint, in a new slice.
func Points() []Point { return slices.Clone(points) }

// Errors of Arm and Parse.
var (
	// ErrUnknown: no failpoint has that name.
	ErrUnknown = errors.New("failpoint: unknown failpoint")
	// ErrBadAction: the action does not parse.
	ErrBadAction = errors.New("failpoint: bad action")
	// ErrNotCompiled: the binary was built without the failpoints tag.
	ErrNotCompiled = errors.New("failpoint: this build has no failpoints (build with -tags chaos,failpoints: bin/fenceline-chaos)")
	// ErrInjected is what the error action makes a hook return.
	ErrInjected = errors.New("failpoint: injected error")
)

// Check returns an error wrapping ErrUnknown, listing the known names, if name is not a
// failpoint.
func Check(name string) error {
	_, err := namelist.Find(points, func(p Point) string { return p.Name }, name, ErrUnknown)
	return err
}

// validate checks name and parses spec.
func validate(name, spec string) (Action, error) {
	if err := Check(name); err != nil {
		return Action{}, err
	}
	return Parse(spec)
}

// State is a point as Status reports it.
type State struct {
	Name   string `json:"name"`
	Action string `json:"action,omitempty"` // the armed action; empty if none
	Left   int    `json:"left,omitempty"`   // hits left to it
	Hits   int64  `json:"hits"`             // hits that ran an action since the process began
}
