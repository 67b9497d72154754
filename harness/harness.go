// Package harness runs a chaos experiment, Jepsen style: start a cluster, warm up, inject
// the faults of a seeded schedule for the duration, heal every fault unconditionally,
// wait for recovery, stop the nodes and read the store's final state. What it produces is
// a run directory (see package history for its layout); judging it is the checker's job.
package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/harness/finalread"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/nemesis"
	"github.com/fenceline/fenceline/node"
	"github.com/fenceline/fenceline/targets"
	"github.com/fenceline/fenceline/workloads"
)

// Config is one run.
type Config struct {
	// Dir is the run directory to create and fill. Required.
	Dir string
	// Seed determines the fault schedule.
	Seed int64
	// Duration of the chaos phase. Default 60s.
	Duration time.Duration
	// Nodes is the number of nodes. Default 3.
	Nodes int
	// Nemeses are the fault kinds to inject (see faults.ParseList); empty: none.
	Nemeses []string
	// Workload is what the nodes do.
	Workload workloads.Workload
	// Node are the options each node starts with (lease TTL, variant...).
	Node backend.NodeOptions
	// Redis is how Redis runs. Default: one server.
	Redis backend.RedisSpec
	// VolatileRedis runs Redis without an append-only file although no fault asks for
	// it: the deployment under test is one that keeps none (variants.VolatileRedis), so
	// that a redis-restart loses what it holds.
	VolatileRedis bool
	// RedlockServers is how many more Redis servers, without persistence, the nodes lock
	// on (backend.Spec.RedlockServers): variants.RedlockMajority's deployment. Default 0.
	RedlockServers int
	// EtcdMembers is the size of the etcd cluster beside Redis (backend.Spec.EtcdMembers):
	// 0, 1 or 3; default 1 for a target that elects through etcd, 0 for the others.
	EtcdMembers int
	// Backend names the backend in the run's record ("local", "docker").
	Backend string
	// Start starts the cluster's backend.
	Start func(ctx context.Context, spec backend.Spec) (backend.Backend, error)
	// WarmupTimeout bounds the wait for the first commit. Default 30s.
	WarmupTimeout time.Duration
	// RecoveryTimeout bounds the wait for a commit after the final heal. Default
	// 4 lease TTLs + 10s.
	RecoveryTimeout time.Duration
	// Versions are recorded in run.json.
	Versions map[string]string
	// Logger receives progress. Default: discard.
	Logger *slog.Logger
	// MonitorInterval is how often the harness probes Redis (directly, bypassing every
	// proxy), the nodes' history writers and the run directory's free space. Default
	// 500ms.
	MonitorInterval time.Duration
	// Steps, if not nil, is the fault schedule to run (a replay of a stored run's
	// schedule.json) instead of the one generated from Seed.
	Steps []nemesis.Step
	// ScheduleKind is how the schedule generated from Seed aims its faults:
	// nemesis.ScheduleRandom (default), ScheduleTargeted or ScheduleMixed. It is
	// recorded in run.json: "replayed" there says Steps came from a stored run.
	ScheduleKind string
	// Budget is recorded in run.json as the run's failover budget (see
	// checker.ParseBudgets); the harness does not read it. Optional.
	Budget string
	// StartToken and StartCursor are where the run's token counter and cursor begin (see
	// BoundaryStart); both 0, the default, is a fresh store. Recorded in run.json.
	StartToken, StartCursor int64
	// StopAtViolation, if not nil, is asked while the chaos phase runs (after each heal,
	// and every few seconds) whether the history so far breaks a rule; a non-empty
	// answer, what it found, ends the chaos phase there. The run then heals, recovers and
	// reads the store as usual, and run.json records the answer (StoppedAtViolation).
	// store is a snapshot of the Redis store read just before the call, so that every
	// entry of its audit stream belongs to an operation the histories then hold; nil
	// when it could not be read (Redis down) or the cursor is kept in PostgreSQL.
	// It is called in the background, one call at a time, so that the schedule keeps its
	// times; a call still running when the chaos phase ends is cancelled.
	StopAtViolation func(ctx context.Context, store *history.Store) string
	// MinFreeDisk ends the run as unknown when the run directory's filesystem has fewer
	// bytes free: the histories of a full disk are torn. Default 16 MiB; negative: off.
	MinFreeDisk int64
}

// ErrIncomplete is returned (wrapped) when a run could not be completed: the run
// directory holds what was recorded, but a verdict on it is at best unknown.
var ErrIncomplete = errors.New("harness: run incomplete")

// ErrNoProgress is returned (wrapped, with ErrIncomplete) when no node committed in the
// fault-free warm-up. The run has no verdict: the nodes may be misconfigured as well as
// broken. Whoever knows that the same settings make progress with a correct node (the
// mutation score, which runs the unmutated design alike) may call it a liveness failure.
var ErrNoProgress = errors.New("no commit in the fault-free warm-up")

func (c *Config) defaults() error {
	if c.Dir == "" || c.Start == nil {
		return errors.New("harness: Config.Dir and Start are required")
	}
	if c.Duration == 0 {
		c.Duration = 60 * time.Second
	}
	if c.Nodes == 0 {
		c.Nodes = backend.DefaultNodes
	}
	if c.Node.LeaseTTL == 0 {
		c.Node.LeaseTTL = election.DefaultLeaseTTL
	}
	if c.Node.Election == "" {
		c.Node.Election = "fenceline"
	}
	if c.WarmupTimeout == 0 {
		c.WarmupTimeout = 30 * time.Second
	}
	if c.RecoveryTimeout == 0 {
		c.RecoveryTimeout = 4*c.Node.LeaseTTL + 10*time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MonitorInterval == 0 {
		c.MonitorInterval = 500 * time.Millisecond
	}
	if c.MinFreeDisk == 0 {
		c.MinFreeDisk = 16 << 20
	}
	if c.StartToken < 0 || c.StartCursor < 0 {
		return fmt.Errorf("harness: start token %d and cursor %d must be >= 0", c.StartToken, c.StartCursor)
	}
	if c.EtcdMembers == 0 && c.Node.UsesEtcd() {
		c.EtcdMembers = 1
	}
	c.Node.StartToken, c.Node.StartCursor = c.StartToken, c.StartCursor
	c.Node.Chaos = true
	c.Node.Workload = c.Workload.Name
	if c.Node.Batch == 0 {
		c.Node.Batch = c.Workload.Batch
	}
	return nil
}

// Schedule returns the run's fault schedule: Steps, or the one generated from Seed.
func (c Config) Schedule() ([]nemesis.Step, error) {
	if c.Steps != nil {
		return c.Steps, nil
	}
	lease := c.Node.LeaseTTL
	if lease == 0 {
		lease = election.DefaultLeaseTTL
	}
	return nemesis.NewSchedule(nemesis.ScheduleOptions{
		Seed: c.Seed, Kinds: c.Nemeses, Duration: c.Duration, LeaseTTL: lease, Nodes: c.Nodes,
		Kind: c.ScheduleKind,
	})
}

// Persistent reports whether Redis runs with an append-only file: always, unless the
// volatile restart fault is scheduled or the deployment under test keeps none.
func (c Config) Persistent() bool {
	if c.VolatileRedis {
		return false
	}
	for _, k := range c.Nemeses {
		if k == faults.RedisRestartVolatile {
			return false
		}
	}
	return true
}

// Run performs the run. It returns an error wrapping ErrIncomplete if the run could not
// be completed (including when ctx is cancelled: Ctrl-C); the run directory then holds
// what was recorded. Whatever happens, every fault is healed and the cluster removed
// before Run returns.
func Run(ctx context.Context, cfg Config) (err error) {
	if err := cfg.defaults(); err != nil {
		return err
	}
	steps, err := cfg.Schedule()
	if err != nil {
		return err
	}
	if steps == nil {
		steps = []nemesis.Step{} // schedule.json is an array, also when empty
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	// From here on the run directory exists: whatever fails makes an incomplete run,
	// never a usage error.
	defer func() {
		if err != nil && !errors.Is(err, ErrIncomplete) {
			err = fmt.Errorf("%w: %v", ErrIncomplete, err)
		}
	}()
	info := history.RunInfo{
		Seed: cfg.Seed, Nodes: backend.NodeIDs(cfg.Nodes), Workload: cfg.Workload.Name,
		Variant: cfg.Node.Variant, Backend: cfg.Backend, Nemeses: cfg.Nemeses,
		LeaseTTL: cfg.Node.LeaseTTL, TakeoverOnDisconnect: cfg.Node.TakeoverOnDisconnect, Duration: cfg.Duration, Start: time.Now().UnixNano(),
		Persistence: cfg.Persistent(), Election: cfg.Node.Election, Versions: cfg.Versions,
		Budget: cfg.Budget, Store: cmp.Or(cfg.Node.Store, "redis"), Schedule: cfg.ScheduleKind,
		StartToken: cfg.StartToken, StartCursor: cfg.StartCursor,
		SourceRate: cfg.Workload.SourceRate, EtcdMembers: cfg.EtcdMembers,
		Redis: &history.RedisSetup{
			Topology: cmp.Or(cfg.Redis.Topology, backend.TopologySingle), Wait: cfg.Node.RedisWait,
			MinReplicasToWrite: cfg.Redis.MinReplicasToWrite, MinReplicasMaxLag: cfg.Redis.MinReplicasMaxLag,
		},
	}
	if info.Nemeses == nil {
		info.Nemeses = []string{}
	}
	if cfg.Node.Cmd != "" {
		info.Target = "node-cmd: " + cfg.Node.Cmd
	} else if cfg.Node.Target != "" {
		t, err := targets.ByName(cfg.Node.Target)
		if err != nil {
			return err
		}
		info.Target, info.NoFence = t.Name, !t.Fenced
	}
	info.LeaseCounted = info.Target == "" // fenceline's own node (election.LeaseRecorder)
	// run.json is written first as an unfinished run and replaced at the end: if the
	// end never comes (the runner killed, the disk full), the directory still says the
	// run is incomplete and no check of it can pass.
	unfinished := info
	unfinished.Interrupted = "the run did not finish: the runner stopped before recording its end"
	if err := history.WriteJSON(filepath.Join(cfg.Dir, history.RunInfoFile), unfinished); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	if err := history.WriteJSON(filepath.Join(cfg.Dir, "schedule.json"), steps); err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	faultLog, err := os.Create(filepath.Join(cfg.Dir, history.FaultsFile))
	if err != nil {
		return fmt.Errorf("harness: %w", err)
	}
	defer faultLog.Close()
	r := &runner{cfg: cfg, log: cfg.Logger, faults: history.NewRecorder(faultLog)}

	// Whatever happens below, record what we know and remove the cluster. Cleanup uses
	// its own context: an interrupted run still heals, stops and reads the store.
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if r.c != nil {
			if ferr := r.finish(cctx, &info); ferr != nil && err == nil {
				err = ferr
			}
			if cerr := r.c.Close(cctx); cerr != nil {
				r.log.Warn("cluster-close-failed", slog.Any("error", cerr))
			}
		}
		if err != nil && info.Interrupted == "" {
			info.Interrupted = err.Error()
		}
		info.End = time.Now().UnixNano()
		if werr := history.WriteJSON(filepath.Join(cfg.Dir, history.RunInfoFile), info); werr != nil && err == nil {
			err = werr
		}
		if err == nil {
			err = r.faults.Err()
		}
	}()

	r.log.Info("cluster-starting", slog.Int("nodes", cfg.Nodes), slog.String("backend", cfg.Backend))
	c, err := cfg.Start(ctx, backend.Spec{
		Dir: cfg.Dir, Nodes: cfg.Nodes, Node: cfg.Node,
		NoPersistence: !cfg.Persistent(), SourceRate: cfg.Workload.SourceRate, Redis: cfg.Redis,
		SourceBacklog: cfg.StartCursor, EtcdMembers: cfg.EtcdMembers, RedlockServers: cfg.RedlockServers,
	})
	if err != nil {
		// The backend removed what it had started; c may be a typed nil.
		return fmt.Errorf("%w: start: %w", ErrIncomplete, err)
	}
	r.c = c
	r.mon = newMonitor(r)
	r.mon.start()
	// A condition the monitor finds (a full disk, a node that cannot record) ends the
	// run at once, as if interrupted, with that reason.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case ferr := <-r.mon.fatal:
			cancel(ferr)
		case <-ctx.Done():
		}
	}()
	r.log.Info("warm-up-started", slog.Duration("timeout", cfg.WarmupTimeout))
	if err := r.waitProgress(ctx, cfg.WarmupTimeout); err != nil {
		if c := causeOf(ctx, err); c != err {
			return fmt.Errorf("%w: warm-up: %v", ErrIncomplete, c)
		}
		return fmt.Errorf("%w: warm-up: %w", ErrIncomplete, err)
	}
	r.log.Info("chaos-started", slog.Duration("duration", cfg.Duration), slog.Int("faults", len(steps)))
	if cfg.StopAtViolation != nil {
		r.watch = newWatcher(ctx, func(ctx context.Context) string { return cfg.StopAtViolation(ctx, r.storeSoFar(ctx)) })
	}
	err = r.chaos(ctx, steps)
	if found := r.watch.close(); found != "" {
		info.StoppedAtViolation = found
		r.log.Info("chaos-stopped-at-violation", slog.String("found", found))
	}
	if err != nil && !errors.Is(err, errStopped) {
		return fmt.Errorf("%w: %v", ErrIncomplete, causeOf(ctx, err))
	}
	return nil
}

// causeOf is err, or the reason ctx was cancelled for when that is what err reports.
func causeOf(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
		return c
	}
	return err
}

// Backend is a backend as the harness sees it: what the faults act on, the nodes'
// status, Redis's address bypassing every proxy, and Close. Config.Start returns a
// backend's backend.Backend, of which the harness uses only this.
type Backend interface {
	nemesis.Backend
	NodeStatus(ctx context.Context, id string) (node.Status, error)
	RedisAddr() string
	Close(ctx context.Context) error
}

type runner struct {
	cfg    Config
	log    *slog.Logger
	c      Backend
	faults *history.Recorder
	seq    int
	open   *openFault // the fault injected and not yet healed
	mon    *monitor
	watch  *watcher
}

type openFault struct {
	id, kind, target string
	f                nemesis.Fault
	inEffect         int64 // when a nemesis.Confirmer's Inject returned nil: its effect was in place; else 0
}

// chaos runs the schedule. Faults are sequential: each is healed before the next.
//
// A heal can take far longer than the schedule planned (a Sentinel failover heals when
// the old primary is a replica again, 10 s later). The rest of the schedule then moves
// back by the overrun, so that the quiet time planned after each fault survives: without
// it the next fault would strike at once, the system would never be seen recovering, and
// a failover window would measure the schedule rather than the election.
func (r *runner) chaos(ctx context.Context, steps []nemesis.Step) error {
	start := time.Now()
	var shift time.Duration
	for _, s := range steps {
		if err := r.watch.sleepUntil(ctx, start.Add(s.At+shift)); err != nil {
			return err
		}
		if err := r.inject(ctx, s); err != nil {
			r.log.Warn("fault-inject-failed", slog.String("fault", s.Kind), slog.Any("error", err))
		}
		if err := r.watch.sleepUntil(ctx, time.Now().Add(s.Params.Hold)); err != nil {
			return err
		}
		if err := r.heal(ctx); err != nil {
			r.log.Warn("fault-heal-failed", slog.String("fault", s.Kind), slog.Any("error", err))
			if errors.Is(err, nemesis.ErrCannotHeal) {
				return err
			}
		}
		r.watch.poke()
		if over := time.Since(start.Add(s.At + shift + s.Params.Hold)); over > 0 {
			shift += over
		}
	}
	return r.watch.sleepUntil(ctx, start.Add(r.cfg.Duration+shift))
}

func (r *runner) inject(ctx context.Context, s nemesis.Step) error {
	f, err := nemesis.ForStep(s)
	if err != nil {
		return err
	}
	target := nemesis.AimRedis
	if t, ok := f.(interface{ Target() string }); ok { // a fault of another server
		target = t.Target()
	}
	if f.AimsAtNode() {
		target = r.resolve(ctx, s.Aim)
	}
	if a, ok := f.(nemesis.Aimer); ok {
		// A targeted step: wait for its moment; the node held at it is the target.
		var what string
		target, what, err = a.Aim(ctx, r.c, target, s.Params)
		r.log.Info("fault-aimed", slog.String("fault", s.Kind), slog.String("moment", s.Moment), slog.String("target", target), slog.String("what", what))
		if err != nil {
			r.log.Warn("fault-aim-failed", slog.String("fault", s.Kind), slog.String("moment", s.Moment), slog.Any("error", err))
		}
	}
	if s.CrossDigits {
		// After the aim: the leader is held at its moment, so no term begins between
		// the move and the fault.
		if before, after, err := crossDigits(ctx, r.c.RedisAddr(), r.cfg.Node.Election); err != nil {
			r.log.Warn("token-counter-move-failed", slog.String("fault", s.Kind), slog.Any("error", err))
		} else {
			r.log.Info("token-counter-moved", slog.String("fault", s.Kind), slog.String("from", before), slog.String("to", after))
		}
	}
	if target == nemesis.AimRedis {
		r.mon.redisFaultInjected()
	}
	r.seq++
	id := fmt.Sprintf("fault-%d", r.seq)
	r.faults.Record(history.Event{ID: id, Type: history.Invoke, Kind: history.KindFault, Node: target, Fault: s.Kind})
	what, err := f.Inject(ctx, r.c, target, s.Params)
	if err != nil {
		msg := err.Error()
		if errors.Is(err, backend.ErrNoHook) {
			// The node cannot take this fault: it did nothing, and the report says why.
			msg = "skipped: " + msg
		}
		r.faults.Record(history.Event{ID: id, Type: history.Info, Kind: history.KindFault, Node: target, Fault: s.Kind, Error: msg})
		// It may have half happened (a toxic on one stream): heal it at the usual time.
	}
	r.log.Info("fault-injected", slog.String("fault", s.Kind), slog.String("target", target), slog.String("what", what))
	r.open = &openFault{id: id, kind: s.Kind, target: target, f: f}
	if _, ok := f.(nemesis.Confirmer); ok && err == nil {
		r.open.inEffect = r.faults.Now()
	}
	return err
}

func (r *runner) heal(ctx context.Context) error {
	o := r.open
	if o == nil {
		return nil
	}
	r.open = nil
	var inEffectTo int64
	if o.inEffect != 0 {
		inEffectTo = r.faults.Now() // the effect lasts at least until the heal begins
		if s, ok := o.f.(nemesis.Sustainer); ok {
			if held, err := s.Sustained(ctx, r.c, o.target); !held || err != nil {
				r.log.Warn("fault-effect-lapsed", slog.String("fault", o.kind), slog.String("target", o.target), slog.Any("error", err))
				o.inEffect, inEffectTo = 0, 0
			}
		}
	}
	what, err := o.f.Heal(ctx, r.c, o.target)
	if o.target == nemesis.AimRedis {
		r.mon.redisFaultHealed()
	}
	ev := history.Event{ID: o.id, Type: history.OK, Kind: history.KindFault, Node: o.target, Fault: o.kind, Reason: what,
		InEffectFrom: o.inEffect, InEffectTo: inEffectTo}
	if err != nil {
		ev.Type, ev.Error = history.Info, err.Error()
	}
	r.faults.Record(ev)
	r.log.Info("fault-healed", slog.String("fault", o.kind), slog.String("target", o.target))
	return err
}

// resolve finds the node a target means now. With no leader in sight (during an
// election) a leader-targeted fault hits the first running node.
func (r *runner) resolve(ctx context.Context, t nemesis.Aim) string {
	ids := r.c.Nodes()
	if !t.Leader && t.Node >= 1 && t.Node <= len(ids) {
		return ids[t.Node-1]
	}
	if id, _, ok := backend.Leader(ctx, r.c); ok {
		return id
	}
	for _, id := range ids {
		if r.c.Running(id) {
			return id
		}
	}
	return ids[0]
}

// finish heals everything, waits for recovery, stops the nodes and reads the store.
func (r *runner) finish(ctx context.Context, info *history.RunInfo) error {
	var errs []error
	if err := r.heal(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := nemesis.HealAll(ctx, r.c); err != nil {
		errs = append(errs, fmt.Errorf("heal all: %w", err))
	}
	info.HealTime = time.Now().UnixNano()
	if f := r.mon.failure(); f != nil {
		// The record is already untrustworthy: no recovery phase to wait for.
		errs = append(errs, f)
	} else {
		r.log.Info("recovery-started", slog.Duration("timeout", r.cfg.RecoveryTimeout))
		if err := r.waitProgress(ctx, r.cfg.RecoveryTimeout); err != nil {
			// Not an incomplete run: the progress check will report it from the history.
			r.log.Warn("no-commit-after-heal", slog.Any("error", err))
		}
	}
	if err := backend.StopAll(ctx, r.c); err != nil {
		errs = append(errs, err)
	}
	r.mon.stop()
	// A restart of Redis resets its peak: this is the peak since the last one.
	if peak, err := RedisPeakMemory(ctx, r.c.RedisAddr()); err == nil {
		info.RedisPeakMemory = peak
	} else {
		r.log.Warn("redis-peak-memory-unread", slog.Any("error", err))
	}
	if f := r.mon.failure(); f != nil && !slices.Contains(errs, f) {
		errs = append(errs, f)
	}
	st, err := r.readStore(ctx)
	if pg, ok := r.c.(interface{ PostgresURL() string }); ok && err == nil && pg.PostgresURL() != "" {
		// The cursor and the ledger are in PostgreSQL; the token counter stays Redis's.
		var pst *history.Store
		if pst, err = finalread.ReadPostgres(ctx, pg.PostgresURL(), r.cfg.Node.Election); err == nil {
			pst.TokenCounter, st = st.TokenCounter, pst
		}
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("final read: %w", err))
	} else if err := history.WriteStore(r.cfg.Dir, st); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrIncomplete, errors.Join(errs...))
	}
	return nil
}

// readStore reads the store's final state from Redis, or, in a replicated topology, from
// the primary the Sentinels agree on once it has settled (none is an error).
func (r *runner) readStore(ctx context.Context) (*history.Store, error) {
	addr, err := r.storeAddr(ctx)
	if err != nil {
		return nil, err
	}
	return ReadStore(ctx, addr, r.cfg.Node.Election)
}

// storeAddr is the address of the Redis that holds the store: the primary's, when the
// backend replicates.
func (r *runner) storeAddr(ctx context.Context) (string, error) {
	if p, ok := r.c.(interface {
		PrimaryAddr(context.Context) (string, error)
	}); ok {
		return p.PrimaryAddr(ctx)
	}
	return r.c.RedisAddr(), nil
}

// storeSoFar reads the store while the run goes on, for Config.StopAtViolation; nil
// when it cannot (see there).
func (r *runner) storeSoFar(ctx context.Context) *history.Store {
	if pg, ok := r.c.(interface{ PostgresURL() string }); ok && pg.PostgresURL() != "" {
		return nil
	}
	addr, err := r.storeAddr(ctx)
	if err != nil {
		return nil
	}
	// One plain dial first: while Redis is down (a restart fault) the read would only
	// fail, after go-redis had logged its five failed dials to the run's stderr.
	conn, err := (&net.Dialer{Timeout: 250 * time.Millisecond}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil
	}
	conn.Close()
	st, err := ReadStore(ctx, addr, r.cfg.Node.Election)
	if err != nil {
		return nil
	}
	return st
}

// waitProgress waits until some node reports two commits it did not report when the
// wait began and, where the store can vouch for them (storeCursor), the store's cursor
// has moved since then too: a node's count says what it believes it committed, not what
// the store accepted. (A fence that answered "committed" without sending anything made
// the counts grow while the store stood still, and the recovery phase end at once.)
func (r *runner) waitProgress(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	base := map[string]int64{}
	for _, id := range r.c.Nodes() {
		if st, err := r.c.NodeStatus(ctx, id); err == nil {
			base[id] = st.Commits
		}
	}
	cursor, closeStore := r.storeCursor(ctx)
	defer closeStore()
	from, read := int64(0), false
	if cursor != nil {
		from, read = cursor(ctx)
	}
	counted := false
	for {
		for _, id := range r.c.Nodes() {
			// Two commits, not one: the first may have been sent before the heal (the
			// progress check counts only commits invoked after it); a node's commits are
			// sequential, so its second one was sent after base was read.
			if counted {
				break
			}
			if st, err := r.c.NodeStatus(ctx, id); err == nil && st.Commits > base[id]+1 {
				counted = true
			}
		}
		if counted && cursor == nil {
			return nil
		}
		if counted {
			if !read {
				// Unread at the start (a transient error): from here on, then.
				from, read = cursor(ctx)
			} else if now, ok := cursor(ctx); ok && now > from {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if counted {
				return fmt.Errorf("%w (the nodes reported commits within %v, but the store's cursor stayed at %d)", ErrNoProgress, timeout, from)
			}
			return fmt.Errorf("%w (none within %v)", ErrNoProgress, timeout)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// storeCursor returns a reader of the store's cursor in Redis, bypassing every proxy,
// and what closes it, for a run whose progress the cursor measures: fenceline's own node,
// design and Redis store in the listener workload, whose leader moves the cursor with
// every commit. Otherwise (another design, node program, store or workload, whose
// commits may keep the cursor elsewhere or not move it) the reader is nil.
func (r *runner) storeCursor(ctx context.Context) (func(context.Context) (int64, bool), func()) {
	n := r.cfg.Node
	if (n.Variant != "" && n.Variant != node.Reference) || n.Target != "" || n.Cmd != "" || n.Store != "" || (n.Workload != "" && n.Workload != "listener") {
		return nil, func() {}
	}
	addr, err := r.storeAddr(ctx)
	if err != nil {
		return nil, func() {}
	}
	c := election.NewClient(addr)
	return func(ctx context.Context) (int64, bool) {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		cur, _, err := finalread.ReadCursorRecord(rctx, c, n.Election)
		return cur, err == nil
	}, func() { c.Close() }
}

func sleepUntil(ctx context.Context, t time.Time) error {
	_, err := sleepOr(ctx, t, nil)
	return err
}

// sleepOr sleeps until t, until ctx ends (its error), or until stop yields a value (that
// value). A nil stop never yields.
func sleepOr(ctx context.Context, t time.Time, stop <-chan string) (string, error) {
	d := time.Until(t)
	if d <= 0 {
		return "", ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case v := <-stop:
		return v, nil
	case <-tm.C:
		return "", nil
	}
}

// ReadStore reads the store's final state and the token counter of election name from
// Redis at addr, bypassing every proxy, with the judge's own strict reader (package
// finalread). A store that disagrees with its documented layout is ErrBadStore.
func ReadStore(ctx context.Context, addr, name string) (*history.Store, error) {
	return finalread.ReadStore(ctx, addr, name)
}

// ErrBadStore is returned (wrapped) by the final read when the store holds something
// its documented layout does not allow: the run cannot be judged.
var ErrBadStore = finalread.ErrBadStore
