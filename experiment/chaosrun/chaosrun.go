//go:build chaos

// Package chaosrun runs one chaos run end to end: it checks the settings (asking the
// node binary itself with `fenceline node --check`), creates an exclusive run directory,
// runs the harness on the chosen backend, checks the run, writes its report and
// compresses its records. It is `fenceline chaos` (Settings holds its flags), and what
// `fenceline validate` runs for each cell of its matrix. It exists in chaos builds only.
package chaosrun

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/container"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/docker"
	"github.com/fenceline/fenceline/experiment/judge"
	"github.com/fenceline/fenceline/experiment/nodecheck"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/buildinfo"
	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/internal/failpoint"
	"github.com/fenceline/fenceline/internal/pgserver"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/targets"
	"github.com/fenceline/fenceline/variants"
	"github.com/fenceline/fenceline/workloads"
)

// Spec is one chaos run: what `fenceline chaos` makes of its flags, and what
// `fenceline validate` runs for each variant and seed of its matrix.
type Spec struct {
	// Cmd names the subcommand in messages ("chaos", "validate").
	Cmd      string
	Duration time.Duration
	Nodes    int
	Nemeses  []string // fault kinds, as faults.ParseList returns them
	Seed     int64
	Workload workloads.Workload
	Backend  string
	LeaseTTL time.Duration
	Variant  string
	// Target is the design under test (package targets); "" is the reference.
	Target string
	// NodeCmd, if set, is the command run as each node instead of this binary
	// (docs/node-protocol.md). Local backend only.
	NodeCmd string
	// Store is where the nodes keep the cursor: "redis" ("" too) or "postgres".
	Store string
	// EtcdMembers is the size of the etcd cluster of a target that elects through etcd:
	// 1 or 3; Prepare makes 0 the default, 1, for such a target, and refuses any other
	// value for the rest.
	EtcdMembers int
	// Out is the directory that receives the run directory.
	Out string
	// Binary is the fenceline binary the nodes run; prepare fills it with this
	// executable when it is empty.
	Binary string
	// Quiet logs only warnings of the harness.
	Quiet bool
	// Budget is the failover budget (checker.ParseBudgets), recorded in run.json.
	Budget string
	// Steps, if not nil, is the fault schedule to replay instead of generating one.
	Steps []nemesis.Step
	// Schedule is the kind of schedule generated from Seed (nemesis.ScheduleKinds;
	// "" is random).
	Schedule string
	// Redis is how Redis runs (topology, min-replicas-to-write). Default: one server.
	Redis backend.RedisSpec
	// RedisWait is the nodes' --redis-wait (0: none).
	RedisWait int
	// Takeover is the nodes' --takeover-on-disconnect.
	Takeover bool
	// StartToken and StartCursor are where the run's token counter and cursor begin
	// when StartPinned; otherwise each run starts where its own seed says
	// (harness.BoundaryStart; see Start), or at 0 for a --node-cmd node, whose store
	// the harness cannot seed.
	StartToken, StartCursor int64
	StartPinned             bool
	// StopAtViolation ends the chaos phase at the first violation a check of the
	// history so far finds (judge.SoFar); the run then finishes as usual and the
	// complete check gives the verdict. For runs that ask only whether and when a
	// violation comes (the zoo, the mutants, a bisection), not for failover figures.
	StopAtViolation bool

	start func(context.Context, backend.Spec) (backend.Backend, error) // set by prepare
}

// MaxNodes caps --nodes: each node is a process (or a container) with two proxies of
// its own, and a run is meant for one machine.
const MaxNodes = 32

// Prepare checks the spec and resolves its binary and backend. Its errors are usage
// errors. A zero value is an error, never a silent default.
func (s *Spec) Prepare() error {
	switch {
	case s.Nodes < 1:
		return fmt.Errorf("need --nodes >= 1 (got %d)", s.Nodes)
	case s.Nodes > MaxNodes:
		return fmt.Errorf("--nodes %d: at most %d nodes run on one machine", s.Nodes, MaxNodes)
	case s.Duration <= 0:
		return fmt.Errorf("need --duration > 0 (got %v)", s.Duration)
	case s.LeaseTTL < 100*time.Millisecond:
		return fmt.Errorf("need --lease-ttl >= 100ms (got %v)", s.LeaseTTL)
	}
	if _, err := variants.ByName(s.Variant); err != nil {
		return err
	}
	if _, err := nemesis.NewSchedule(nemesis.ScheduleOptions{Kind: s.Schedule, Nodes: 1, LeaseTTL: time.Second}); err != nil {
		return fmt.Errorf("--schedule: %w", err)
	}
	if _, err := checker.ParseBudgets(s.Budget); err != nil {
		return fmt.Errorf("--budget: %w", err)
	}
	if _, err := targets.ByName(cmp.Or(s.Target, targets.Reference)); err != nil {
		return err
	}
	if s.Redis.Topology == "" {
		s.Redis.Topology = backend.TopologySingle
	}
	if err := s.Redis.Validate(); err != nil {
		return err
	}
	if err := faults.CheckTopology(s.Nemeses, s.Redis.Replicated()); err != nil {
		return err
	}
	if slices.Contains(s.Nemeses, faults.RedlockRestart) && s.redlockServers() == 0 {
		return fmt.Errorf("--nemesis %s: only --variant %s locks on Redlock servers", faults.RedlockRestart, variants.RedlockMajority)
	}
	for _, k := range []string{faults.PresenceLoss, faults.PresenceFlap} {
		if slices.Contains(s.Nemeses, k) && (!s.Takeover || s.Redis.Replicated()) {
			// Without the option no node keeps a presence to lose; with replicas it lives
			// on a primary the fault does not act on.
			return fmt.Errorf("--nemesis %s: only nodes with --takeover-on-disconnect keep a presence, on a single Redis", k)
		}
	}
	if s.NodeCmd != "" && s.Redis.Replicated() {
		return fmt.Errorf("--node-cmd with --redis-topology %s: only fenceline nodes follow Sentinel or a cluster's slots here", s.Redis.Topology)
	}
	if s.RedisWait > 0 && !s.Redis.Replicated() {
		return fmt.Errorf("--redis-wait %d needs replicas (--redis-topology %s or %s)", s.RedisWait, backend.TopologySentinel, backend.TopologyCluster)
	}
	switch s.Store {
	case "", "redis":
		s.Store = ""
	case "postgres":
	default:
		return fmt.Errorf("unknown --store %q (redis, postgres)", s.Store)
	}
	if s.Store != "" && (s.NodeCmd != "" || (s.Target != "" && s.Target != targets.Reference)) {
		return errors.New("--store postgres runs the reference target, not --target or --node-cmd")
	}
	if err := s.prepareEtcd(); err != nil {
		return err
	}
	if s.Binary == "" {
		bin, err := os.Executable()
		if err != nil {
			return err
		}
		s.Binary = bin
	}
	if st, err := os.Stat(s.Binary); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
		return fmt.Errorf("--binary %s: not an executable file", s.Binary)
	}
	start, name, err := pickBackend(s.Backend, s.Binary)
	if err != nil {
		return err
	}
	if s.Store == "postgres" && name == "local" {
		// The docker backend runs the image fenceline-postgres:dev instead ('make images
		// STORE=postgres'); a missing image fails its start with that hint.
		if _, err := pgserver.BinDir(); err != nil {
			return fmt.Errorf("--store postgres: %w, or run 'make chaos STORE=postgres', which does", err)
		}
	}
	if name == "local" && s.EtcdMembers > 0 {
		if _, err := exec.LookPath("etcd"); err != nil {
			return errors.New("--target " + s.Target + ": etcd is not in PATH (the local backend runs it): install it with 'apt-get install -y etcd-server'")
		}
	}
	if name == "local" {
		if _, err := exec.LookPath("redis-server"); err != nil {
			return errors.New("redis-server is not in PATH (the local backend runs it): install it with 'apt-get install -y redis-server', or run 'make chaos', which does")
		}
	}
	switch {
	case s.StartPinned && s.NodeCmd != "" && (s.StartToken != 0 || s.StartCursor != 0):
		return errors.New("--start-token and --start-cursor seed a fenceline node's store, not --node-cmd's")
	case s.StartPinned && (s.StartToken < 0 || s.StartCursor < 0):
		return fmt.Errorf("--start-token %d and --start-cursor %d must be >= 0", s.StartToken, s.StartCursor)
	}
	if s.NodeCmd != "" {
		if name != "local" || (s.Target != "" && s.Target != targets.Reference) || s.Variant != variants.Reference || s.Workload.Name != "listener" {
			return errors.New("--node-cmd runs the listener workload on the local backend, with no --target or --variant: the command is the design under test")
		}
		if err := s.checkNodeCmd(); err != nil {
			return err
		}
	} else if err := s.checkNode(); err != nil {
		return err
	}
	s.start, s.Backend = start, name
	return nil
}

// UsesEtcd reports whether the run's target elects through etcd.
func (s Spec) UsesEtcd() bool {
	t, err := targets.ByName(cmp.Or(s.Target, targets.Reference))
	return err == nil && t.Etcd
}

// prepareEtcd resolves and checks the etcd cluster's size, and the etcd faults against
// it.
func (s *Spec) prepareEtcd() error {
	switch {
	case s.UsesEtcd() && s.EtcdMembers == 0:
		s.EtcdMembers = 1
	case !s.UsesEtcd() && s.EtcdMembers != 0:
		return fmt.Errorf("--etcd-members %d: target %s does not elect through etcd (%s)", s.EtcdMembers, cmp.Or(s.Target, targets.Reference), strings.Join(etcdTargets(), ", "))
	}
	if s.EtcdMembers != 0 && s.EtcdMembers != 1 && s.EtcdMembers != 3 {
		return fmt.Errorf("--etcd-members %d: 1 or 3", s.EtcdMembers)
	}
	return faults.CheckEtcd(s.Nemeses, s.EtcdMembers > 0)
}

// etcdTargets lists the targets that elect through etcd.
func etcdTargets() []string {
	var out []string
	for _, t := range targets.All() {
		if t.Etcd {
			out = append(out, t.Name)
		}
	}
	return out
}

// staleLeaderFaults are the fault kinds that can leave a leader acting after a newer
// one exists: it is stopped, cut off, slowed or misled about time while its lease runs
// out. (A kill ends it; a stop ends it too, but its release may come late: see
// releaseFaults.)
var staleLeaderFaults = []string{faults.Pause, faults.Delay, faults.PartitionReset, faults.PartitionBlackhole, faults.Clock}

// probed reports whether a run of fault kinds gets any of the probes of
// WithStaleLeaderProbes: its faults can make a stale leader, stop a leader (whose
// release may then come late), or restart Redis.
func probed(kinds []string) bool {
	return slices.ContainsFunc(kinds, func(k string) bool {
		return slices.Contains(staleLeaderFaults, k) || k == faults.Stop || k == faults.RedisRestart || k == faults.FPTakeoverRace || k == faults.FPLateRenew ||
			k == faults.FPReleaseLost || k == faults.SourceOutage
	})
}

// probes reports whether the run's schedule begins with the probes of
// WithStaleLeaderProbes: a listener run by fenceline nodes of a failpoints build, on
// one Redis with the Redis store, whose faults call for some (probed; `--nemesis all`
// for every one), so that narrowing the faults never loses the probe that exposes what
// they can do.
func (s Spec) probes() bool { return probed(s.probeKinds()) && s.noProbe() == "" }

// noProbe says why the run cannot have the probes; "" if it can.
func (s Spec) noProbe() string {
	switch {
	case s.Workload.Name != "listener":
		return "the " + s.Workload.Name + " workload has no leader's load and commit to interleave"
	case s.NodeCmd != "":
		return "a --node-cmd node has no failpoints"
	case s.Store != "":
		return "the " + s.Store + " store has no failpoint between a load and a commit"
	case s.Redis.Replicated():
		return "the probe is not measured on a replicated Redis"
	case !failpoint.Enabled:
		return "this build has no failpoints (build with -tags failpoints)"
	}
	return ""
}

// WithStaleLeaderProbes returns the probes that make the stale leaders of the known-bug
// zoo (docs/known-bugs.md) reachable in every run whose fault kinds can make them, one
// after the other from half a lease into the chaos phase, followed by steps, the seed's
// own schedule, shifted to begin 1.5 leases after the last probe's heal. `--nemesis all`
// gets every probe, about 65 s of them with the default lease.
//
// Each fault kind brings the probes that expose what it can do, in this order (what only
// a run with takeover on disconnect has first, as that is what such a run is for; then
// the one that reaches the most rows of the zoo, then the shortest, then by rows reached):
//
//   - with takeover on disconnect, whose kills bring fp-takeover-race (probeKinds): a
//     kill of the leader, which a standby must take over within half a lease
//     (takeover-window); a random kill comes only after every probe, a minute in;
//   - presence-loss, which probeKinds adds to a reset when the nodes take over on
//     disconnect: the leader's presence denied while it lives and reaches Redis, so that
//     a standby takes over a live leader, whose next renewal is refused and must end its
//     term; and, as a follower without presence, its acquires are refused as not
//     present (a reset takes the presence with every other connection, and a quiet
//     subscription outlives it: no random fault makes either history);
//   - presence-flap, which probeKinds adds with presence-loss: the leader's presence
//     gone until every standby's poll has seen it, and back, continuously, while they
//     stall before their takeover; each takeover script must find the holder present
//     (a script that trusts the poll takes a live, present holder's lease);
//   - fp-takeover-race, which probeKinds adds to a kill when the nodes take over on
//     disconnect (not in a default run): the leader killed and every standby stalled
//     between seeing it gone and taking over, so that the second taker's script finds
//     the first's lock, which it must leave alone;
//   - redlock-restart, in a run with Redlock servers only (Spec.probeKinds: their
//     deployment, whose `--nemesis all` restarts Redis): a leader that holds a bare
//     majority loses one server to a restart without persistence (the
//     antirez/Kleppmann debate; variants.RedlockMajority);
//   - a fault that can make a stale leader (staleLeaderFaults): fp-load-race, the old
//     leader's commit landing between a new leader's cursor load and its first commit,
//     the interleaving where a store that checks the token but not the cursor breaks
//     (variants.NoCursorCheck);
//   - redis-restart: one more restart of Redis, which a deployment without an
//     append-only file does not survive (the antirez/Kleppmann debate);
//   - stop: fp-late-release, a graceful stop whose release comes late (the Redis lock
//     pattern's unchecked unlock deletes the next holder's lock);
//   - delay: the leader's link to Redis slowed 1.6 leases as it is about to send a
//     commit (nemesis.MomentBeforeCommit), with no stall elsewhere, so that the write
//     lands after the next leader's first: a fence the client checks in a read of its
//     own lets it through (variants.ClientCheck); and the token counter moved to the
//     last value of its digits just before (nemesis.Step.CrossDigits), so that the
//     next leader's token is one digit longer than the stale one;
//   - a fault that can make a stale leader: fp-stall-new-leader, the leader killed and
//     its successor stalled 1.5 leases just after winning; a node that trusts a grant it
//     learns of late (etcd-io/etcd#11408) then leads next to the node that took the
//     lease meanwhile, and one that mints its token after taking the lock
//     (bsm/redislock#93) overwrites that node's lock;
//   - stop: fp-release-race, a stop whose two-step release stalls between its GET and
//     its DEL (the pattern's other wrong unlock);
//   - fp-late-renew, named only (not in `all`): a renewal held past the lease;
//   - fp-release-lost, named only: a graceful stop whose release fails before it is
//     sent (a node that records it as Redis's refusal claims a refusal while its lease
//     still ran);
//   - source-outage, named only: every fetch of the leader fails for a lease (a listener
//     that gives its term up at a failed fetch hands it over for nothing);
//   - a fault that can make a stale leader: a forward clock jump on each of the first
//     three nodes in turn (the leader's only makes it step down early): on a standby, a
//     node that judges the holder's lease by its own clock (the Redlock critique) takes a
//     live leader's lease.
//
// The random schedule reaches none of them in every run: the interleavings need a stall
// at one point of one node, a clock fault hits a standby in about one run in six, a stop
// is never slowed, a delay hits the leader in some runs only, and a 60 s schedule may
// hold no restart of Redis. The probes come first so that what they reach is found within
// the first minute, and the seed's schedule keeps its faults and their spacing. They are
// steps of schedule.json: a replay or a shrink sees them as any other step.
func WithStaleLeaderProbes(steps []nemesis.Step, lease time.Duration, nodes int, kinds []string) []nemesis.Step {
	var out []nemesis.Step
	next := func() time.Duration {
		if len(out) == 0 {
			return lease / 2
		}
		last := out[len(out)-1]
		return last.At + last.Params.Hold + lease*3/2
	}
	add := func(kind string, aim nemesis.Aim, p nemesis.Params) {
		p.LeaseTTL = lease
		out = append(out, nemesis.Step{At: next(), Kind: kind, Aim: aim, Params: p})
	}
	leader := nemesis.Aim{Leader: true}
	stale := slices.ContainsFunc(kinds, func(k string) bool { return slices.Contains(staleLeaderFaults, k) })
	stop := slices.Contains(kinds, faults.Stop)
	if slices.Contains(kinds, faults.FPTakeoverRace) {
		// What takeover on disconnect is for, first: the leader killed, and a standby
		// must take over within half a lease (takeover-window), not a lease later.
		add(faults.Kill, leader, nemesis.Params{Hold: lease})
	}
	if slices.Contains(kinds, faults.PresenceLoss) {
		// A standby takes over at its next poll and the node's renewal (a third of a
		// lease apart) is refused while its commit is held (a lease); the last half lease
		// its acquires as a follower are refused as not present.
		add(faults.PresenceLoss, leader, nemesis.Params{Hold: lease * 3 / 2})
	}
	if slices.Contains(kinds, faults.PresenceFlap) {
		// Gone until the standbys' polls see it, back before their stall (a lease) ends:
		// their takeover scripts run while the leader is present again.
		add(faults.PresenceFlap, leader, nemesis.Params{Hold: lease * 3 / 2})
	}
	if slices.Contains(kinds, faults.FPTakeoverRace) {
		add(faults.FPTakeoverRace, leader, nemesis.Params{Hold: 3 * lease})
	}
	if slices.Contains(kinds, faults.RedlockRestart) {
		add(faults.RedlockRestart, leader, nemesis.Params{Hold: 2 * lease})
	}
	if stale {
		add(faults.FPLoadRace, leader, nemesis.Params{Hold: 3 * lease})
	}
	if slices.Contains(kinds, faults.RedisRestart) {
		add(faults.RedisRestart, nemesis.Aim{}, nemesis.Params{Hold: lease / 4})
	}
	if stop {
		add(faults.FPLateRelease, leader, nemesis.Params{Hold: 3 * lease})
	}
	if slices.Contains(kinds, faults.Delay) {
		delay := nemesis.Params{Magnitude: 0.5, LeaseTTL: lease}
		delay.Hold = nemesis.DelayLatency(delay) + lease/2 // as the schedule holds a delay
		add(faults.Delay, leader, delay)
		// At the moment the leader is about to send a commit: a delay that lands between
		// a client's own check and its write reaches the TOCTOU every time (at a random
		// moment it missed seed 5 of 6, whose leader slowed its check instead).
		out[len(out)-1].Moment = nemesis.MomentBeforeCommit
		// The first stale write of the run to land after a newer leader's commit: the
		// next token is made one digit longer than the stale leader's, where a fence
		// that compares tokens by their digits without their lengths lets it through.
		out[len(out)-1].CrossDigits = true
	}
	if stale {
		add(faults.FPStallNewLeader, leader, nemesis.Params{Hold: 3 * lease})
	}
	if stop {
		add(faults.FPReleaseRace, leader, nemesis.Params{Hold: 3 * lease})
	}
	if slices.Contains(kinds, faults.FPLateRenew) {
		// Named only (not in `all`): a renewal held past the lease goes out once the lock
		// is another's, and must be refused.
		add(faults.FPLateRenew, leader, nemesis.Params{Hold: 3 * lease})
	}
	if slices.Contains(kinds, faults.FPReleaseLost) {
		// Named only: a stop whose release is lost on the way; the lock runs out, and the
		// node must record the release's outcome as unknown, not as refused.
		add(faults.FPReleaseLost, leader, nemesis.Params{Hold: lease})
	}
	if slices.Contains(kinds, faults.SourceOutage) {
		// Named only: every fetch of the leader fails for a lease; its term goes on.
		add(faults.SourceOutage, leader, nemesis.Params{Hold: lease})
	}
	if stale {
		for i := 1; i <= min(nodes, 3); i++ {
			// Variant 0 is the jump forward, by 1.5 leases here.
			add(faults.Clock, nemesis.Aim{Node: i}, nemesis.Params{Hold: lease * 3 / 2, Magnitude: 0.5})
		}
	}
	if len(out) == 0 {
		return slices.Clone(steps)
	}
	shift := next() - lease/2
	for _, st := range steps {
		st.At += shift
		out = append(out, st)
	}
	return out
}

// redlockServers is how many Redlock servers the run has: variants.RedlockServers for
// variants.RedlockMajority, whose deployment they are, else none.
func (s Spec) redlockServers() int {
	if s.Variant == variants.RedlockMajority {
		return variants.RedlockServers
	}
	return 0
}

// probeKinds are the fault kinds WithStaleLeaderProbes opens the run for: its faults, and
// with Redlock servers their restart, when its faults restart Redis (`--nemesis all`),
// and with takeover on disconnect fp-takeover-race, when its faults kill a node, and
// presence-loss and presence-flap, when they reset a node's connections.
func (s Spec) probeKinds() []string {
	kinds := s.Nemeses
	if s.redlockServers() > 0 && slices.Contains(kinds, faults.RedisRestart) && !slices.Contains(kinds, faults.RedlockRestart) {
		kinds = append(slices.Clone(kinds), faults.RedlockRestart)
	}
	if s.Takeover && slices.Contains(kinds, faults.Kill) && !slices.Contains(kinds, faults.FPTakeoverRace) {
		kinds = append(slices.Clone(kinds), faults.FPTakeoverRace)
	}
	if s.Takeover && slices.Contains(kinds, faults.PartitionReset) {
		for _, k := range []string{faults.PresenceLoss, faults.PresenceFlap} {
			if !slices.Contains(kinds, k) {
				kinds = append(slices.Clone(kinds), k)
			}
		}
	}
	return kinds
}

// Start is where the run's token counter and cursor begin: the pinned values, 0 for a
// --node-cmd node, else those of the run's seed (harness.BoundaryStart). It is resolved
// per run: `fenceline validate` prepares one spec and runs it under many seeds.
func (s Spec) Start() (token, cursor int64) {
	switch {
	case s.StartPinned:
		return s.StartToken, s.StartCursor
	case s.NodeCmd != "":
		return 0, 0
	}
	return harness.BoundaryStart(s.Seed)
}

// NodeOptions are the settings every node of the run starts with.
func (s Spec) NodeOptions() backend.NodeOptions {
	tok, cur := s.Start()
	return backend.NodeOptions{LeaseTTL: s.LeaseTTL, Variant: variantArg(s.Variant), Chaos: true,
		Workload: s.Workload.Name, Batch: s.Workload.Batch, Target: targetArg(s.Target), Cmd: s.NodeCmd,
		RedisWait: s.RedisWait, TakeoverOnDisconnect: s.Takeover, Store: s.Store, StartToken: tok, StartCursor: cur}
}

// checkNode asks the binary whether a node would accept the run's settings (`fenceline
// node --check`, which connects to nothing), so that settings a node rejects are a
// usage error with the node's own message before the run begins, not a run that fails
// at start.
func (s Spec) checkNode() error {
	tmp, err := os.MkdirTemp("", "fenceline-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	args := s.NodeOptions().Args("n1", "127.0.0.1:6379", "http://127.0.0.1:8000", "127.0.0.1:0", "",
		filepath.Join(tmp, "n1.jsonl"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if s.Store != "" {
		args = append(args, "--postgres", "postgres://postgres@127.0.0.1:5432/postgres") // connected to by nothing
	}
	etcd := make([]string, s.EtcdMembers)
	for i := range etcd {
		etcd[i] = fmt.Sprintf("127.0.0.1:%d", 2379+i) // connected to by nothing
	}
	args = append(args, s.NodeOptions().EtcdArgs(etcd)...)
	if n := s.redlockServers(); n > 0 {
		servers := make([]string, n)
		for i := range servers {
			servers[i] = fmt.Sprintf("127.0.0.1:%d", 6380+i) // connected to by nothing
		}
		args = append(args, "--redlock-servers", strings.Join(servers, ","))
	}
	out, err := exec.CommandContext(ctx, s.Binary, append(args, "--check")...).CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg == "" {
			msg = "(it printed nothing)"
		}
		return fmt.Errorf("%s does not accept the nodes' settings (%v): %s", s.Binary, err, msg)
	}
	return nil
}

// checkNodeCmd runs the node protocol's conformance check (`fenceline node-check`) on
// the command before the run, so that a node that exits at once, never answers, records
// nothing or records malformed lines is refused with what it failed to do, not run for
// minutes and then judged.
func (s Spec) checkNodeCmd() error {
	tmp, err := os.MkdirTemp("", "fenceline-node-check-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var out, errb strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := nodecheck.Run(ctx, nodecheck.Config{Cmd: s.NodeCmd, Binary: s.Binary, LeaseTTL: s.LeaseTTL,
		Lead: 10 * s.LeaseTTL, Dir: tmp}, &out, &errb)
	if code == exitcode.OK {
		return nil
	}
	var msg []string
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "  ✗") || strings.HasPrefix(l, "  …") {
			msg = append(msg, l)
		}
	}
	msg = append(msg, strings.TrimSpace(errb.String()))
	return fmt.Errorf("--node-cmd %q does not follow the node protocol (docs/node-protocol.md; 'fenceline node-check --node-cmd ...' shows the whole check):\n%s",
		s.NodeCmd, strings.TrimSpace(strings.Join(msg, "\n")))
}

// Outcome is what one chaos run produced.
type Outcome struct {
	// Dir is the run directory; "" if it could not be created.
	Dir string
	// Code is the exit code of `fenceline chaos` for the run.
	Code int
	// Result is the checker's result; nil if the run was not checked.
	Result *checker.Result
	// RunErr is the harness's error, if any: it wraps harness.ErrIncomplete when the run
	// could not be completed.
	RunErr error
}

// Run makes the run directory under s.Out, runs the harness, checks the run, writes
// its report and prints the summary to stdout. It blocks until all of that is done,
// also when ctx is cancelled (the harness then heals and cleans up first). s must
// have been prepared.
func (s Spec) Run(ctx context.Context, stdout, stderr io.Writer) Outcome {
	dir, err := NewRunDir(s.Out, s.Seed)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline %s: %v\n", s.Cmd, err)
		return Outcome{Code: exitcode.Usage, RunErr: err}
	}
	logLevel := slog.LevelInfo
	if s.Quiet {
		logLevel = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel}))
	cfg := harness.Config{
		Dir: dir, Seed: s.Seed, Duration: s.Duration, Nodes: s.Nodes, Nemeses: s.Nemeses,
		Workload: s.Workload, Backend: s.Backend, Start: s.start, Logger: logger,
		Node: s.NodeOptions(), Budget: s.Budget, Steps: s.Steps, Redis: s.Redis, ScheduleKind: s.Schedule,
		EtcdMembers: s.EtcdMembers, VolatileRedis: s.Variant == variants.VolatileRedis, RedlockServers: s.redlockServers(),
		Versions: map[string]string{"fenceline": buildinfo.Read().String(), "go": runtime.Version()},
	}
	if s.StopAtViolation {
		cfg.StopAtViolation = func(ctx context.Context, st *history.Store) string { return judge.SoFar(ctx, dir, st) }
	}
	if s.Steps != nil {
		cfg.ScheduleKind = "replayed"
	} else if s.probes() {
		// Generated here, then led by the probes: still the seed's schedule, not a replay.
		steps, err := cfg.Schedule()
		if err != nil {
			fmt.Fprintf(stderr, "fenceline %s: %v\n", s.Cmd, err)
			return Outcome{Code: exitcode.Usage, RunErr: err}
		}
		cfg.Steps = WithStaleLeaderProbes(steps, s.LeaseTTL, s.Nodes, s.probeKinds())
	} else if probed(s.Nemeses) {
		fmt.Fprintf(stderr, "fenceline %s: note: these faults can make a stale leader, but the run cannot have the probes that expose one (%s): a store that checks the token but not the position, and the zoo's stale leaders, can pass it (docs/known-bugs.md)\n", s.Cmd, s.noProbe())
	}
	cfg.StartToken, cfg.StartCursor = s.Start()
	fmt.Fprintf(stderr, "fenceline %s: run directory %s (seed %d, token counter from %d, cursor from %d)\n", s.Cmd, dir, s.Seed, cfg.StartToken, cfg.StartCursor)
	runErr := harness.Run(ctx, cfg)
	if runErr != nil && !errors.Is(runErr, harness.ErrIncomplete) {
		fmt.Fprintf(stderr, "fenceline %s: %v\n", s.Cmd, runErr)
		return Outcome{Dir: dir, Code: exitcode.Usage, RunErr: runErr}
	}
	if runErr != nil {
		fmt.Fprintf(stderr, "fenceline %s: %v\n", s.Cmd, runErr)
	}
	// Histories and the audit copy are kept compressed (check and report read them
	// either way): a long run's directory is an artifact CI systems keep. Before the
	// check, so that the report links the files that exist.
	if err := harness.CompressRun(dir); err != nil {
		fmt.Fprintf(stderr, "fenceline %s: compress %s: %v\n", s.Cmd, dir, err)
	}
	code, res := judge.Dir(dir, stdout, stderr)
	if runErr != nil && code == exitcode.OK {
		// A run that could not be completed is never a pass.
		code = exitcode.Unknown
	}
	if code == exitcode.Usage {
		// The harness wrote this directory: what the checker cannot read in it is
		// the run's failure (a torn record), not bad input from the user.
		code = exitcode.Unknown
	}
	return Outcome{Dir: dir, Code: code, Result: res, RunErr: runErr}
}

// pickBackend returns the function that starts the chosen backend.
func pickBackend(name, bin string) (func(context.Context, backend.Spec) (backend.Backend, error), string, error) {
	switch name {
	case "auto":
		if docker.EngineAvailable(context.Background()) {
			return pickBackend("docker", bin)
		}
		return pickBackend("local", bin)
	case "docker":
		return func(ctx context.Context, spec backend.Spec) (backend.Backend, error) {
			c, err := container.Start(ctx, container.Config{Spec: spec})
			if err != nil {
				return nil, err // a plain nil: a typed nil *docker.Cluster is not a nil Cluster
			}
			return c, nil
		}, "docker", nil
	case "local":
		return func(ctx context.Context, spec backend.Spec) (backend.Backend, error) {
			c, err := proc.Start(ctx, proc.Config{Spec: spec, Binary: bin})
			if err != nil {
				return nil, err
			}
			return c, nil
		}, "local", nil
	}
	return nil, "", fmt.Errorf("unknown backend %q (local, docker, auto)", name)
}

// NewRunDir creates a new run directory <out>/<UTC timestamp>-<seed>[-k] and points
// <out>/latest at it. The directory is created exclusively (os.Mkdir fails on one that
// exists): two runs started in the same second with the same seed get two directories,
// so that a run never reads or writes another's files.
func NewRunDir(out string, seed int64) (string, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", err
	}
	base := fmt.Sprintf("%s-%d", time.Now().UTC().Format("20060102T150405Z"), seed)
	name := base
	for k := 2; ; k++ {
		err := os.Mkdir(filepath.Join(out, name), 0o755)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || k > 1000 {
			return "", err
		}
		name = fmt.Sprintf("%s-%d", base, k)
	}
	// Replace the link atomically: a link made under a private name and renamed over
	// the old one, so that concurrent runs never see it missing or fail on it.
	tmp := filepath.Join(out, fmt.Sprintf(".latest-%d-%s", os.Getpid(), name))
	if err := os.Symlink(name, tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, filepath.Join(out, "latest")); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return filepath.Join(out, name), nil
}

// variantArg is the --variant to pass to nodes: none for the reference.
func variantArg(v string) string {
	if v == variants.Reference {
		return ""
	}
	return v
}

// targetArg is the --target to pass to nodes: none for the reference.
func targetArg(t string) string {
	if t == targets.Reference {
		return ""
	}
	return t
}
