//go:build chaos

package main

import (
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/experiment/chaosrun"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/targets"
	"github.com/fenceline/fenceline/workloads"
)

func runChaos(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	duration := fs.Duration("duration", 60*time.Second, "length of the chaos phase (> 0)")
	nodes := fs.Int("nodes", 3, fmt.Sprintf("number of nodes (1 to %d)", chaosrun.MaxNodes))
	nem := fs.String("nemesis", "all", "faults, comma-separated: "+fmt.Sprint(faults.Known())+", partition (both flavours), all, or none for no faults")
	seed := fs.Int64("seed", 0, "seed of the fault schedule; the same seed gives the same schedule (0: pick one from the clock)")
	workload := fs.String("workload", "listener", "what the nodes do: listener or register")
	backendName := fs.String("backend", "local", "where the nodes run: local (processes on 127.0.0.1), docker (containers; run 'make images' first), or auto (docker when an engine answers, else local)")
	lease := fs.Duration("lease-ttl", 2*time.Second, "lease TTL of the election (>= 100ms)")
	store := fs.String("store", "redis", "where the nodes keep the cursor and the ledger: redis, or postgres (a PostgreSQL of the run's own: a process on the local backend, a container of fenceline-postgres:dev on docker; --nemesis all then adds "+strings.Join(faults.Postgres(), " and ")+")")
	variant := fs.String("variant", "reference", "node variant (deliberately broken designs for self-validation; see 'fenceline node -h')")
	target := fs.String("target", targets.Reference, "the design under test: "+strings.Join(targets.Names(), ", ")+" (see 'fenceline node -h')")
	nodeCmd := fs.String("node-cmd", "", "run this command as each node instead of fenceline (any language; docs/node-protocol.md), e.g. 'python3 examples/python-node/node.py'")
	out := fs.String("out", "reports/runs", "directory that receives the run directory")
	binary := fs.String("binary", "", "fenceline binary to run as nodes (default: this executable)")
	quiet := fs.Bool("quiet", false, "print only the summary")
	replay := fs.String("replay", "", "re-run the stored run in this directory: its schedule.json (faults, targets, times) with its seed and settings (run.json); the settings flags cannot be given with it")
	schedule := fs.String("schedule", nemesis.ScheduleRandom, "how the faults are timed: random (at random times; the default), targeted (each node fault held for the moment of the leader's life it is aimed at: just after an acquire, before a commit, after a new leader's load, at a renewal, during a release; through the failpoints), mixed (half of them aimed), or auto: targeted for fenceline's own nodes under the listener workload, random for --target, --node-cmd and the register workload, whose code has no failpoints at those moments")
	budget := fs.String("budget", "", "failover budget: the run fails (exit 1) when a window statistic exceeds it, FAULT.STAT=DURATION comma-separated, STAT p50, p90, p99 or max (e.g. kill.p99=2.5s,stop.p99=50ms)")
	startToken := fs.Int64("start-token", -1, "start the token counter here (the first token is one more); -1: near a boundary chosen by the seed (2 below 10, 100, 10^9, 10^10 or 10^16)")
	startCursor := fs.Int64("start-cursor", -1, "start the cursor here (the first event ingested is one more); -1: near a boundary chosen by the seed (0, 9, 99, 2^31, 2^32, 2^53, up to 1000 below)")
	var redis backend.RedisSpec
	fs.StringVar(&redis.Topology, "redis-topology", backend.TopologySingle, "how Redis runs: single (one server), sentinel (a primary, two replicas, three Sentinels) or cluster (a Redis Cluster: three primaries, one replica each); local backend")
	fs.IntVar(&redis.MinReplicasToWrite, "min-replicas-to-write", 0, "sentinel, cluster: the data nodes refuse writes with fewer replicas acknowledging within --min-replicas-max-lag")
	fs.IntVar(&redis.MinReplicasMaxLag, "min-replicas-max-lag", 1, "sentinel, cluster: seconds, with --min-replicas-to-write")
	redisWait := fs.Int("redis-wait", 0, "sentinel, cluster: the nodes WAIT for this many replicas after every script; a miss fails the step (unknown outcome)")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	var steps []nemesis.Step
	if *replay != "" {
		var err error
		if steps, err = replaySettings(fs, *replay); err != nil {
			fmt.Fprintf(stderr, "fenceline chaos: --replay: %v\n", err)
			return exitUsage
		}
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano()%1_000_000 + 1
	}
	if strings.TrimSpace(*nem) == "" {
		// An empty list is more likely a shell variable that was not set than a wish
		// for a run without faults: that one is spelled none.
		fmt.Fprintln(stderr, "fenceline chaos: --nemesis is empty: name the faults, all, or none")
		return exitUsage
	}
	kinds, err := faults.ParseListFor(*nem, redis.Replicated())
	if err != nil {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", err)
		return exitUsage
	}
	if *store == "postgres" && slices.Contains(strings.Split(*nem, ","), "all") {
		kinds, _ = faults.ParseList(strings.Join(append(kinds, faults.Postgres()...), ","))
	}
	wl, err := workloads.ByName(*workload)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", err)
		return exitUsage
	}
	if *schedule == scheduleAuto {
		*schedule = autoSchedule(*target, *nodeCmd, wl.Name, *budget)
	}
	spec := chaosrun.Spec{
		Cmd: "chaos", Duration: *duration, Nodes: *nodes, Nemeses: kinds, Seed: *seed,
		Workload: wl, Backend: *backendName, LeaseTTL: *lease, Variant: *variant, Target: *target, Store: *store, NodeCmd: *nodeCmd, Out: *out,
		Binary: *binary, Quiet: *quiet, Budget: *budget, Steps: steps, Schedule: *schedule,
		Redis: redis, RedisWait: *redisWait,
	}
	if *startToken >= 0 || *startCursor >= 0 {
		spec.StartPinned, spec.StartToken, spec.StartCursor = true, max(*startToken, 0), max(*startCursor, 0)
	}
	if err := spec.Prepare(); err != nil {
		fmt.Fprintf(stderr, "fenceline chaos: %v\n", err)
		return exitUsage
	}
	// Ctrl-C cancels the run; the harness still heals, stops the nodes, reads the store
	// and writes what was recorded. A second Ctrl-C is ignored until cleanup is done.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return spec.Run(ctx, stdout, stderr).Code
}

// scheduleAuto is --schedule auto: see autoSchedule.
const scheduleAuto = "auto"

// autoSchedule is the schedule of `--schedule auto`: targeted where the nodes have the
// failpoints that hold them at their moments (fenceline's own election and listener:
// the reference and the variants, listener workload), random elsewhere (README,
// "Targeted schedules, measured"). Random also when a failover budget is given: an
// aimed fault holds nodes at failpoints (a new leader one lease after its load, at the
// after-load moment), which lengthens the failover windows a budget judges.
func autoSchedule(target, nodeCmd, workload, budget string) string {
	if nodeCmd == "" && (target == "" || target == targets.Reference) && workload == "listener" && budget == "" {
		return nemesis.ScheduleTargeted
	}
	return nemesis.ScheduleRandom
}

// replayFlags are the settings a replay takes from the stored run.
var replayFlags = []string{"duration", "nodes", "nemesis", "seed", "workload", "backend", "lease-ttl", "variant", "budget",
	"store", "redis-topology", "min-replicas-to-write", "min-replicas-max-lag", "redis-wait", "start-token", "start-cursor"}

// replaySettings sets fs's settings flags to those of the run in dir and returns its
// schedule. A settings flag given on the command line, or a directory without run.json
// or schedule.json, is an error.
func replaySettings(fs *flag.FlagSet, dir string) ([]nemesis.Step, error) {
	var given []string
	fs.Visit(func(f *flag.Flag) {
		if slices.Contains(replayFlags, f.Name) || f.Name == "schedule" {
			given = append(given, "--"+f.Name)
		}
	})
	if len(given) > 0 {
		return nil, fmt.Errorf("%s cannot be given: a replay runs with the stored run's settings", strings.Join(given, ", "))
	}
	info, steps, err := loadStored(dir)
	if err != nil {
		return nil, err
	}
	set := map[string]string{
		"duration": info.Duration.String(), "nodes": strconv.Itoa(len(info.Nodes)),
		"nemesis": cmp.Or(strings.Join(info.Nemeses, ","), "none"), "seed": strconv.FormatInt(info.Seed, 10),
		"workload": info.Workload, "backend": info.Backend, "lease-ttl": info.LeaseTTL.String(),
		"variant": cmp.Or(info.Variant, "reference"), "budget": info.Budget,
		"store": cmp.Or(info.Store, "redis"),
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
	for _, name := range replayFlags {
		if err := fs.Set(name, set[name]); err != nil {
			return nil, fmt.Errorf("%s: %s %q: %w", history.RunInfoFile, name, set[name], err)
		}
	}
	return steps, nil
}

// loadStored reads a stored run's run.json and schedule.json.
func loadStored(dir string) (history.RunInfo, []nemesis.Step, error) {
	var info history.RunInfo
	if err := readJSONFile(filepath.Join(dir, history.RunInfoFile), &info); err != nil {
		return info, nil, err
	}
	var steps []nemesis.Step
	if err := readJSONFile(filepath.Join(dir, history.ScheduleFile), &steps); err != nil {
		return info, nil, err
	}
	if steps == nil {
		steps = []nemesis.Step{} // a run without faults replays as one
	}
	return info, steps, nil
}

// readJSONFile decodes the JSON file at path into v.
func readJSONFile(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
