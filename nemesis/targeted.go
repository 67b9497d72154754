package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/internal/failpoint"
	"github.com/fenceline/fenceline/node"
)

// Moments of the leader's life at which a targeted step lands its fault (Step.Moment).
// Each is a failpoint: the node is held there (the failpoint's block action) until the
// fault is in place, so the fault lands at the moment itself, not wherever the clock put
// it.
const (
	// MomentAcquired: just after a node won the lease, before its term starts. The
	// leader is stopped (SIGTERM) to make a successor; the fault hits the successor.
	MomentAcquired = "acquired"
	// MomentAfterLoad: the fault lands on the leader as it is about to send a commit, as
	// at MomentBeforeCommit, and whoever leads next is held one lease just after its
	// first load of the cursor: a write of the old leader that lands late lands while the
	// new leader holds a cursor it is about to commit from (the race that a store that
	// checks the token but not the cursor loses).
	MomentAfterLoad = "after-load"
	// MomentBeforeCommit: the leader is about to send a commit.
	MomentBeforeCommit = "before-commit"
	// MomentRenew: the leader's renewal is due and not yet sent.
	MomentRenew = "renew"
	// MomentRelease: the leader is stopped (SIGTERM) and is about to send its release
	// (or, in the non-atomic release variant, between its two steps).
	MomentRelease = "release"
)

// Moments returns every moment. The slice is new at each call.
func Moments() []string {
	return []string{MomentAcquired, MomentAfterLoad, MomentBeforeCommit, MomentRenew, MomentRelease}
}

// momentsOf are the moments at which a fault kind is aimed by a targeted schedule: where
// it makes a dangerous interleaving likely. A kind not listed is not aimed.
var momentsOf = map[string][]string{
	faults.Kill:               {MomentAcquired, MomentAfterLoad, MomentBeforeCommit, MomentRelease},
	faults.Stop:               {MomentAcquired, MomentBeforeCommit},
	faults.Pause:              {MomentAcquired, MomentAfterLoad, MomentBeforeCommit, MomentRenew, MomentRelease},
	faults.PartitionReset:     {MomentAcquired, MomentBeforeCommit, MomentRenew, MomentRelease},
	faults.PartitionBlackhole: {MomentAcquired, MomentBeforeCommit, MomentRenew, MomentRelease},
	faults.Delay:              {MomentAcquired, MomentAfterLoad, MomentBeforeCommit, MomentRenew, MomentRelease},
	faults.Clock:              {MomentAcquired, MomentBeforeCommit, MomentRenew},
}

// Schedule kinds (ScheduleOptions.Kind, `--schedule`).
const (
	// ScheduleRandom: each fault at a random time (NewSchedule's own).
	ScheduleRandom = "random"
	// ScheduleTargeted: every node fault that has moments is aimed at one of them.
	ScheduleTargeted = "targeted"
	// ScheduleMixed: each such fault is aimed at a moment with probability one half.
	ScheduleMixed = "mixed"
)

// ScheduleKinds lists the schedule kinds. The slice is new at each call.
func ScheduleKinds() []string { return []string{ScheduleRandom, ScheduleTargeted, ScheduleMixed} }

// ErrUnknownSchedule is returned for a schedule kind that is not known.
var ErrUnknownSchedule = errors.New("nemesis: unknown schedule")

// aimProbability is the share of aimable steps that a schedule kind aims at a moment.
func aimProbability(kind string) (float64, error) {
	switch kind {
	case "", ScheduleRandom:
		return 0, nil
	case ScheduleTargeted:
		return 1, nil
	case ScheduleMixed:
		return 0.5, nil
	}
	return 0, fmt.Errorf("%w %q (known: %s)", ErrUnknownSchedule, kind, strings.Join(ScheduleKinds(), ", "))
}

// aim gives the node faults of steps their moments (targeted and mixed schedules). It
// draws from its own generator, seeded apart from the random schedule's, so that a
// targeted schedule keeps the faults, times and holds of the random one with the same
// seed: what differs is only when, within its window, each fault lands.
func aim(steps []Step, seed int64, p float64) {
	if p == 0 {
		return
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x7461726765746564)) // "targeted"
	for i := range steps {
		s := &steps[i]
		ms := momentsOf[s.Kind]
		if len(ms) == 0 || rng.Float64() >= p {
			continue
		}
		s.Moment = ms[rng.IntN(len(ms))]
		// Aimed at the leader at its moment (the acquired moment: at its successor).
		s.Aim = Aim{Leader: true}
	}
}

// FailpointReader reads how often each failpoint of a node has run an action: the hit
// that tells a targeted step its moment has come. A backend.Backend of either backend
// has it.
type FailpointReader interface {
	FailpointHits(ctx context.Context, id string) (map[string]int64, error)
}

// statusReader is the nodes' /status, to find the leader a moment is aimed at.
type statusReader interface {
	NodeStatus(ctx context.Context, id string) (node.Status, error)
}

// Aimer is a fault that waits for its moment before it is injected. The runner calls
// Aim with the node it resolved as the target; Aim blocks until the moment has come
// (the node is then held at it) or a bound passes, and returns the node to inject on and
// what it did, in words. Inject, which must follow, lets the node go on at the right
// time; Heal undoes what Aim did.
type Aimer interface {
	Aim(ctx context.Context, c Backend, target string, p Params) (string, string, error)
}

// ForStep returns the fault that runs step s: ByKind(s.Kind), or, for a step with a
// Moment, that fault aimed at the moment (an Aimer, new for each step).
func ForStep(s Step) (Fault, error) {
	f, err := ByKind(s.Kind)
	if err != nil || s.Moment == "" {
		return f, err
	}
	if !slices.Contains(momentsOf[s.Kind], s.Moment) {
		return nil, fmt.Errorf("nemesis: %s is not aimed at the moment %q (its moments: %s)", s.Kind, s.Moment, strings.Join(momentsOf[s.Kind], ", "))
	}
	return &momentFault{inner: f, moment: s.Moment}, nil
}

// momentFault is a node fault aimed at a moment: Aim arms the moment's failpoint with
// block on the node(s) concerned, provokes the moment if it needs a handover or a
// release (SIGTERM of the leader), and waits until a node is held there; Inject injects
// the fault on that node and lets it go on; Heal heals the fault, disarms, and restarts
// the node it stopped.
type momentFault struct {
	inner  Fault
	moment string
	armed  []string // nodes armed to be held at the moment
	// successors are the nodes armed to hold their first load (MomentAfterLoad), until
	// the heal.
	successors []string
	stopped    string        // the leader stopped to provoke the moment
	stopping   chan error    // StopNode of a node held in its release, closed when it returns
	held       bool          // a node is held at the moment
	released   bool          // the held node was let go
	poll       time.Duration // how often the hit counts are read; default 5ms
}

func (m *momentFault) Kind() string     { return m.inner.Kind() }
func (m *momentFault) AimsAtNode() bool { return true }

// waitBound is how long Aim waits for the moment: long enough for a new leader to be
// elected and to commit, on a loaded machine.
func waitBound(p Params) time.Duration { return 2*p.LeaseTTL + time.Second }

func (m *momentFault) Aim(ctx context.Context, c Backend, target string, p Params) (string, string, error) {
	hr, ok := c.(FailpointReader)
	if !ok {
		return target, "", errors.New("nemesis: the cluster cannot read failpoint hits: the fault is not aimed")
	}
	if m.poll == 0 {
		m.poll = 5 * time.Millisecond
	}
	deadline := time.Now().Add(waitBound(p))
	leader := m.leader(ctx, c, target, deadline)
	var points, nodes []string
	switch m.moment {
	case MomentAfterLoad:
		hold := fmt.Sprintf("sleep(%v)", p.LeaseTTL.Round(time.Millisecond))
		for _, id := range c.Nodes() {
			if id != leader && c.Running(id) {
				if err := c.ArmFailpoint(ctx, id, failpoint.ListenerAfterLoad, hold); err != nil {
					return leader, "", err
				}
				m.successors = append(m.successors, id)
			}
		}
		points, nodes = []string{failpoint.ListenerBeforeCommit}, []string{leader}
	case MomentBeforeCommit:
		points, nodes = []string{failpoint.ListenerBeforeCommit}, []string{leader}
	case MomentRenew:
		points, nodes = []string{failpoint.RenewBeforeSend}, []string{leader}
	case MomentRelease:
		points, nodes = []string{failpoint.ReleaseBeforeSend, failpoint.ReleaseBetweenSteps}, []string{leader}
	case MomentAcquired:
		points = []string{failpoint.AcquireAfterWin}
		for _, id := range c.Nodes() {
			if id != leader && c.Running(id) {
				nodes = append(nodes, id)
			}
		}
	}
	var did []string
	if len(m.successors) > 0 {
		did = append(did, fmt.Sprintf("%s armed %s=sleep(%v)", strings.Join(m.successors, ","), failpoint.ListenerAfterLoad, p.LeaseTTL))
	}
	base := map[string]map[string]int64{}
	for _, id := range nodes {
		h, err := hr.FailpointHits(ctx, id)
		if err != nil {
			continue // not up, or not answering: it cannot be held either
		}
		base[id] = h
		for _, pt := range points {
			if err := c.ArmFailpoint(ctx, id, pt, "block"); err != nil {
				return leader, "", err
			}
		}
		m.armed = append(m.armed, id)
	}
	if len(m.armed) == 0 {
		return leader, strings.Join(did, ", "), fmt.Errorf("nemesis: no node to hold at %s", m.moment)
	}
	did = append(did, fmt.Sprintf("%s armed %s=block", strings.Join(m.armed, ","), strings.Join(points, ",")))
	switch m.moment {
	case MomentAcquired:
		m.stopped = leader
		did = append(did, "SIGTERM "+leader)
		if err := c.StopNode(ctx, leader); err != nil {
			return leader, strings.Join(did, ", "), err
		}
	case MomentRelease:
		// The node stops only once it is let go: its stop is waited for by Heal.
		m.stopped, m.stopping = leader, make(chan error, 1)
		did = append(did, "SIGTERM "+leader)
		go func(ch chan<- error) {
			defer close(ch)
			ch <- c.StopNode(context.WithoutCancel(ctx), leader)
		}(m.stopping)
	}
	for {
		for _, id := range m.armed {
			h, err := hr.FailpointHits(ctx, id)
			if err != nil {
				continue
			}
			for _, pt := range points {
				if h[pt] > base[id][pt] {
					m.held = true
					return id, strings.Join(append(did, id+" held at "+pt), ", "), nil
				}
			}
		}
		if time.Now().After(deadline) {
			// Let the armed nodes go: the fault lands now, on whoever leads (not on a
			// leader this step stopped).
			rerr := m.release(ctx, c)
			now := m.leader(ctx, c, leader, time.Now())
			return now, strings.Join(append(did, "the moment did not come within "+waitBound(p).String()), ", "), rerr
		}
		select {
		case <-ctx.Done():
			m.release(ctx, c)
			return leader, strings.Join(did, ", "), ctx.Err()
		case <-time.After(m.poll):
		}
	}
}

// leader is the node that leads, as the nodes' /status say, waiting for one until
// deadline; when no leader shows (or the cluster cannot tell), target if it runs, else
// the first node that runs.
func (m *momentFault) leader(ctx context.Context, c Backend, target string, deadline time.Time) string {
	sr, ok := c.(statusReader)
	if !ok {
		return target
	}
	if !c.Running(target) {
		for _, id := range c.Nodes() {
			if c.Running(id) {
				target = id
				break
			}
		}
	}
	for {
		for _, id := range c.Nodes() {
			if !c.Running(id) {
				continue
			}
			if st, err := sr.NodeStatus(ctx, id); err == nil && st.Role == "leader" {
				return id
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return target
		}
		select {
		case <-ctx.Done():
		case <-time.After(m.poll):
		}
	}
}

// release lets every held node go on (it disarms the armed nodes' failpoints).
func (m *momentFault) release(ctx context.Context, c Backend) error {
	if m.released {
		return nil
	}
	m.released = true
	var errs []error
	for _, id := range m.armed {
		if c.Running(id) {
			if err := c.DisarmFailpoints(ctx, id); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Inject injects the fault on the node held at the moment and lets it go on: a stop
// (which waits for the node to exit) after letting it go, a pause at the heal (a frozen
// process answers no disarm; it goes on from the moment when it is resumed), any other
// fault at once after injecting it.
func (m *momentFault) Inject(ctx context.Context, c Backend, target string, p Params) (string, error) {
	if m.inner.Kind() == faults.Stop || !m.held {
		rerr := m.release(ctx, c)
		what, err := m.inner.Inject(ctx, c, target, p)
		return what, errors.Join(rerr, err)
	}
	what, err := m.inner.Inject(ctx, c, target, p)
	if m.inner.Kind() == faults.Pause {
		return what + " (held at " + m.moment + " until resumed)", err
	}
	return what + ", let go", errors.Join(err, m.release(ctx, c))
}

// Heal heals the fault, lets every held node go on, and restarts the node stopped to
// provoke the moment once it has exited. A paused node is resumed first (a frozen
// process answers no disarm); the stop of a node held in its release is waited for
// before anything restarts a node (the stop reads the process that a restart replaces).
func (m *momentFault) Heal(ctx context.Context, c Backend, target string) (string, error) {
	var what string
	var errs []error
	healed := false
	if m.inner.Kind() == faults.Pause {
		w, err := m.inner.Heal(ctx, c, target)
		what, healed, errs = w, true, append(errs, err)
	}
	errs = append(errs, m.release(ctx, c))
	for _, id := range m.successors {
		if c.Running(id) {
			errs = append(errs, c.DisarmFailpoints(ctx, id))
		}
	}
	if m.stopping != nil {
		if serr := <-m.stopping; serr != nil && c.Running(m.stopped) {
			errs = append(errs, serr)
		}
		m.stopping = nil
	}
	if !healed {
		w, err := m.inner.Heal(ctx, c, target)
		what, errs = w, append(errs, err)
	}
	if m.stopped != "" && !c.Running(m.stopped) {
		what += ", restarted " + m.stopped
		errs = append(errs, c.StartNode(ctx, m.stopped))
	}
	return what, errors.Join(errs...)
}
