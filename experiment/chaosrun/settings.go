//go:build chaos

package chaosrun

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fenceline/fenceline/election"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/targets"
	"github.com/fenceline/fenceline/workloads"
)

// Settings are `fenceline chaos`'s flags as given, before Resolve checks them and makes
// them a Spec. The Spec's fields hold the flags that need no resolving, except that its
// StartToken and StartCursor may be -1: chosen by the seed.
type Settings struct {
	Spec
	Nemesis      string // comma-separated fault kinds, "all" or "none"; never empty
	WorkloadName string // workloads.ByName
	Replay       string // a stored run to replay, or ""
}

// AddFlags registers `fenceline chaos`'s flags on fs, with their defaults, to set st.
func (st *Settings) AddFlags(fs *flag.FlagSet) {
	fs.DurationVar(&st.Duration, "duration", 60*time.Second, "length of the chaos phase (> 0)")
	fs.IntVar(&st.Nodes, "nodes", 3, fmt.Sprintf("number of nodes (1 to %d)", MaxNodes))
	fs.StringVar(&st.Nemesis, "nemesis", "all", "faults, comma-separated: "+fmt.Sprint(faults.Known())+", partition (both flavours), all, or none for no faults")
	fs.Int64Var(&st.Seed, "seed", 0, "seed of the fault schedule; the same seed gives the same schedule (0: pick one from the clock)")
	fs.StringVar(&st.WorkloadName, "workload", "listener", "what the nodes do: listener or register")
	fs.StringVar(&st.Backend, "backend", "local", "where the nodes run: local (processes on 127.0.0.1), docker (containers; run 'make images' first), or auto (docker when an engine answers, else local)")
	fs.DurationVar(&st.LeaseTTL, "lease-ttl", election.DefaultLeaseTTL, "lease TTL of the election (>= 100ms)")
	fs.StringVar(&st.Store, "store", "redis", "where the nodes keep the cursor and the ledger: redis, or postgres (a PostgreSQL of the run's own: a process on the local backend, a container of fenceline-postgres:dev on docker; --nemesis all then adds "+strings.Join(faults.Postgres(), " and ")+")")
	fs.IntVar(&st.EtcdMembers, "etcd-members", 0, "size of the etcd cluster the run starts for a target that elects through etcd (--target etcd or etcd-fenced): 1 or 3 (0: 1 for those targets; refused for the others); --nemesis all then adds "+strings.Join(faults.Etcd(), ", "))
	fs.StringVar(&st.Variant, "variant", "reference", "node variant (deliberately broken designs for self-validation; see 'fenceline node -h')")
	fs.StringVar(&st.Target, "target", targets.Reference, "the design under test: "+strings.Join(targets.Names(), ", ")+" (see 'fenceline node -h')")
	fs.StringVar(&st.NodeCmd, "node-cmd", "", "run this command as each node instead of fenceline (any language; docs/node-protocol.md), e.g. 'python3 examples/python-node/node.py'")
	fs.StringVar(&st.Out, "out", "reports/runs", "directory that receives the run directory")
	fs.StringVar(&st.Binary, "binary", "", "fenceline binary to run as nodes (default: this executable)")
	fs.BoolVar(&st.Quiet, "quiet", false, "print only the summary")
	fs.BoolVar(&st.StopAtViolation, "stop-at-violation", false, "end the chaos phase at the first violation that a check of the history so far finds (checked after each heal and every 2 s); the run then heals, recovers and is checked as usual, and is invalid, or unknown if the complete check does not confirm it. For asking whether and when a design breaks, not for failover figures")
	fs.StringVar(&st.Replay, "replay", "", "re-run the stored run in this directory: its schedule.json (faults, targets, times) with its seed and settings (run.json); the settings flags cannot be given with it")
	fs.StringVar(&st.Schedule, "schedule", nemesis.ScheduleRandom, "how the faults are timed: random (at random times; the default), targeted (each node fault held for the moment of the leader's life it is aimed at: just after an acquire, before a commit, after a new leader's load, at a renewal, during a release; through the failpoints), mixed (half of them aimed), or auto: targeted for fenceline's own nodes under the listener workload, random for --target, --node-cmd and the register workload, whose code has no failpoints at those moments")
	fs.StringVar(&st.Budget, "budget", "", "failover budget: the run fails (exit 1) when a window statistic exceeds it, FAULT.STAT=DURATION comma-separated, STAT p50, p90, p99 or max (e.g. kill.p99=2.5s,stop.p99=50ms)")
	fs.Int64Var(&st.StartToken, "start-token", -1, "start the token counter here (the first token is one more); -1: near a boundary chosen by the seed (2 below 10, 100, 10^9, 10^10 or 10^16)")
	fs.Int64Var(&st.StartCursor, "start-cursor", -1, "start the cursor here (the first event ingested is one more); -1: near a boundary chosen by the seed (0, 9, 99, 2^31, 2^32, 2^53, up to 1000 below)")
	fs.StringVar(&st.Redis.Topology, "redis-topology", backend.TopologySingle, "how Redis runs: single (one server), sentinel (a primary, two replicas, three Sentinels) or cluster (a Redis Cluster: three primaries, one replica each), on either backend")
	fs.IntVar(&st.Redis.MinReplicasToWrite, "min-replicas-to-write", 0, "sentinel, cluster: the data nodes refuse writes with fewer replicas acknowledging within --min-replicas-max-lag")
	fs.IntVar(&st.Redis.MinReplicasMaxLag, "min-replicas-max-lag", 1, "sentinel, cluster: seconds, with --min-replicas-to-write")
	fs.BoolVar(&st.Takeover, "takeover-on-disconnect", false, "the nodes' --takeover-on-disconnect: a standby takes the lease as soon as the leader's connection closes (docs/failover.md)")
	fs.IntVar(&st.RedisWait, "redis-wait", 0, "sentinel, cluster: the nodes WAIT for this many replicas after every script; a miss fails the step (unknown outcome)")
}

// ScheduleAuto is --schedule auto: see AutoSchedule.
const ScheduleAuto = "auto"

// Resolve checks the settings and returns the prepared Spec of the run (Spec.Prepare).
// With Replay, it first sets fs's settings flags (ReplayFlags) to those of the stored
// run, which must not have been given. Its errors are usage errors, one line each.
func (st *Settings) Resolve(fs *flag.FlagSet) (Spec, error) {
	if st.Replay != "" {
		steps, err := ReplaySettings(fs, st.Replay)
		if err != nil {
			return Spec{}, fmt.Errorf("--replay: %w", err)
		}
		st.Steps = steps // the other settings were set through fs
	}
	s := st.Spec
	if s.Seed == 0 {
		s.Seed = time.Now().UnixNano()%1_000_000 + 1
	}
	if strings.TrimSpace(st.Nemesis) == "" {
		// An empty list is more likely a shell variable that was not set than a wish
		// for a run without faults: that one is spelled none.
		return s, errors.New("--nemesis is empty: name the faults, all, or none")
	}
	kinds, err := faults.ParseListFor(st.Nemesis, s.Redis.Replicated())
	if err != nil {
		return s, err
	}
	if s.Store == "postgres" && slices.Contains(strings.Split(st.Nemesis, ","), "all") {
		kinds, _ = faults.ParseList(strings.Join(append(kinds, faults.Postgres()...), ","))
	}
	if s.UsesEtcd() && slices.Contains(strings.Split(st.Nemesis, ","), "all") {
		kinds, _ = faults.ParseList(strings.Join(append(kinds, faults.Etcd()...), ","))
	}
	s.Nemeses = kinds
	if s.Workload, err = workloads.ByName(st.WorkloadName); err != nil {
		return s, err
	}
	if s.Schedule == ScheduleAuto {
		s.Schedule = AutoSchedule(s.Target, s.NodeCmd, s.Workload.Name, s.Budget)
	}
	if s.StartToken < -1 || s.StartCursor < -1 {
		return s, fmt.Errorf("--start-token %d, --start-cursor %d: want a value >= 0, or -1 for one chosen by the seed", s.StartToken, s.StartCursor)
	}
	if s.StartToken >= 0 || s.StartCursor >= 0 {
		s.StartPinned, s.StartToken, s.StartCursor = true, max(s.StartToken, 0), max(s.StartCursor, 0)
	}
	return s, s.Prepare()
}

// AutoSchedule is the schedule of `--schedule auto`: targeted where the nodes have the
// failpoints that hold them at their moments (fenceline's own election and listener:
// the reference and the variants, listener workload), random elsewhere (README,
// "Targeted schedules, measured"). Random also when a failover budget is given: an
// aimed fault holds nodes at failpoints (a new leader one lease after its load, at the
// after-load moment), which lengthens the failover windows a budget judges.
func AutoSchedule(target, nodeCmd, workload, budget string) string {
	if nodeCmd == "" && (target == "" || target == targets.Reference) && workload == "listener" && budget == "" {
		return nemesis.ScheduleTargeted
	}
	return nemesis.ScheduleRandom
}

// ReplayFlags are the settings a replay takes from the stored run.
var ReplayFlags = []string{"duration", "nodes", "nemesis", "seed", "workload", "backend", "lease-ttl", "variant", "budget",
	"store", "etcd-members", "redis-topology", "min-replicas-to-write", "min-replicas-max-lag", "redis-wait", "start-token", "start-cursor", "takeover-on-disconnect"}

// ReplaySettings sets fs's settings flags to those of the run in dir and returns its
// schedule. A settings flag given on the command line, or a directory without run.json
// or schedule.json, is an error.
func ReplaySettings(fs *flag.FlagSet, dir string) ([]nemesis.Step, error) {
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(ReplayFlags, f.Name) || f.Name == "schedule" {
			given = append(given, "--"+f.Name)
		}
	})
	if len(given) > 0 {
		return nil, fmt.Errorf("%s cannot be given: a replay runs with the stored run's settings", strings.Join(given, ", "))
	}
	info, steps, err := LoadStored(dir)
	if err != nil {
		return nil, err
	}
	set := map[string]string{
		"duration": info.Duration.String(), "nodes": strconv.Itoa(len(info.Nodes)),
		"nemesis": cmp.Or(strings.Join(info.Nemeses, ","), "none"), "seed": strconv.FormatInt(info.Seed, 10),
		"workload": info.Workload, "backend": info.Backend, "lease-ttl": info.LeaseTTL.String(),
		"variant": cmp.Or(info.Variant, "reference"), "budget": info.Budget,
		"store": cmp.Or(info.Store, "redis"), "etcd-members": strconv.Itoa(info.EtcdMembers),
		// A run recorded before boundary starts began fresh: 0 and 0.
		"start-token": strconv.FormatInt(info.StartToken, 10), "start-cursor": strconv.FormatInt(info.StartCursor, 10),
	}
	// A run recorded before run.json had the store and the Redis setup ran on one
	// Redis server and kept its cursor there.
	r := history.RedisSetup{Topology: backend.TopologySingle, MinReplicasMaxLag: 1}
	if info.Redis != nil {
		r = *info.Redis
	}
	set["redis-topology"] = cmp.Or(r.Topology, backend.TopologySingle)
	set["min-replicas-to-write"] = strconv.Itoa(r.MinReplicasToWrite)
	set["min-replicas-max-lag"] = strconv.Itoa(cmp.Or(r.MinReplicasMaxLag, 1))
	set["redis-wait"] = strconv.Itoa(r.Wait)
	set["takeover-on-disconnect"] = strconv.FormatBool(info.TakeoverOnDisconnect)
	for _, name := range ReplayFlags {
		if err := fs.Set(name, set[name]); err != nil {
			return nil, fmt.Errorf("%s: %s %q: %w", history.RunInfoFile, name, set[name], err)
		}
	}
	return steps, nil
}

// LoadStored reads a stored run's run.json and schedule.json.
func LoadStored(dir string) (history.RunInfo, []nemesis.Step, error) {
	var info history.RunInfo
	if err := ReadJSONFile(filepath.Join(dir, history.RunInfoFile), &info); err != nil {
		return info, nil, err
	}
	var steps []nemesis.Step
	if err := ReadJSONFile(filepath.Join(dir, history.ScheduleFile), &steps); err != nil {
		return info, nil, err
	}
	if steps == nil {
		steps = []nemesis.Step{} // a run without faults replays as one
	}
	return info, steps, nil
}

// ReadJSONFile decodes the JSON file at path into v.
func ReadJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
