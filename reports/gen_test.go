package reports

// This file rebuilds the stored runs of testdata/runs with a small deterministic
// simulation of the cluster (three nodes, a Redis lease, a fenced cursor store, the
// harness' faults), checks them with the real checker and stores its result as
// checker.json. It runs only with -generate:
//
//	go test ./reports -run TestGenerateRuns -generate && go test ./reports -update
//
// The golden tests read the stored files, so they do not change when the checker's
// wording does; regenerate on purpose.

import (
	"container/heap"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/source"
)

var generate = flag.Bool("generate", false, "rebuild testdata/runs with the simulator and the checker (then run -update)")

// storedRuns are the runs of testdata/runs: the reference, and a variant without a
// fence whose stale write the store accepts.
var storedRuns = []struct {
	name, variant string
	fenced        bool
	want          checker.Verdict
}{
	{"pass", "reference", true, checker.Valid},
	{"fail", "no-fence", false, checker.Invalid},
}

func TestGenerateRuns(t *testing.T) {
	if !*generate {
		t.Skip("testdata/runs is stored; run with -generate to rebuild it")
	}
	for _, c := range storedRuns {
		dir := filepath.Join("testdata", "runs", c.name)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		s := newSim(c.fenced)
		s.play()
		if err := s.write(dir, c.variant); err != nil {
			t.Fatal(err)
		}
		run, err := history.LoadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		res, err := checker.Check(context.Background(), run, checker.Options{OutDir: dir, ExpectedBalances: source.Balances})
		if err != nil {
			t.Fatal(err)
		}
		res.Duration = 48 * time.Millisecond // the real one varies from check to check
		if res.Verdict != c.want {
			b, _ := json.MarshalIndent(res.Checks, "", "  ")
			t.Fatalf("%s: verdict %s, want %s:\n%s", c.name, res.Verdict, c.want, b)
		}
		if !c.fenced && res.Check(checker.CheckStaleWrite).Verdict != checker.Invalid {
			t.Fatalf("%s: the stale write was not caught", c.name)
		}
		if err := history.WriteJSON(filepath.Join(dir, "checker.json"), res); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s, %d events, %d faults, %d leader changes, %d rejections", c.name, res.Verdict,
			run.Events.Len(), len(run.Faults), res.LeaderChanges, res.FencingRejections)
	}
}

// Simulation. Time is nanoseconds since the start of the run.

const (
	ms         = int64(time.Millisecond)
	simTTL     = 2000 * ms
	simDrift   = 100 * ms
	simTick    = 250 * ms
	simRenew   = 500 * ms
	simTimeout = 1000 * ms
	simDelay   = 2500 * ms
)

// simBase is the run's start: 2026-01-05T09:30:00Z.
var simBase = time.Date(2026, 1, 5, 9, 30, 0, 0, time.UTC).UnixNano()

type task struct {
	at    int64
	seq   int
	node  *simNode
	epoch int
	fn    func()
}

type taskQueue []*task

func (q taskQueue) Len() int { return len(q) }
func (q taskQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].seq < q[j].seq)
}
func (q taskQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *taskQueue) Push(x any)   { *q = append(*q, x.(*task)) }
func (q *taskQueue) Pop() any {
	old := *q
	t := old[len(old)-1]
	*q = old[:len(old)-1]
	return t
}

type simNode struct {
	id        string
	up        bool
	paused    bool
	epoch     int // bumped when the process dies: its pending work is dropped
	deferred  []func()
	net       string // "", "reset", "blackhole", "delay"
	gen       int    // bumped on every role change: stale callbacks stop
	leader    bool
	token     int64
	deadline  int64
	acquiring bool
	renewing  bool
	seq       int
	log       []string
}

type reply struct {
	typ           history.Type
	err           string
	token, cursor int64
	pttl          int64
}

type sim struct {
	rng  *rand.Rand
	seed int64
	// startToken and startCursor are the store's state before the run (run.json).
	startToken, startCursor int64
	// plan replaces play's faults when set.
	plan   []simFault
	now    int64
	q      taskQueue
	seq    int
	nodes  []*simNode
	fenced bool
	// Redis
	holder             string
	leaseTok, expiry   int64
	counter            int64
	cursor, maxTok     int64
	sink               []int64
	audit              []history.AuditEntry
	redisDown          bool
	lastStream, sameMS int64
	// records
	events    map[string][]history.Event
	faults    []history.Event
	faultSeq  int
	schedule  []map[string]any
	pauseNext bool // pause the leader right after its next commit invoke
	healTime  int64
	end       int64
}

// newSim is the simulation of the stored runs: seed 20260105, a fresh store.
func newSim(fenced bool) *sim { return newSimFrom(20260105, fenced, 0, 0) }

// newSimFrom simulates a run with another seed, whose store begins with the token
// counter at startToken and the cursor at startCursor (a boundary start). Its faults
// are play's plan unless plan is set.
func newSimFrom(seed uint64, fenced bool, startToken, startCursor int64) *sim {
	s := &sim{rng: rand.New(rand.NewPCG(seed, 7)), seed: int64(seed), fenced: fenced, events: map[string][]history.Event{},
		counter: startToken, cursor: startCursor, startToken: startToken, startCursor: startCursor}
	for _, id := range []string{"n1", "n2", "n3"} {
		s.nodes = append(s.nodes, &simNode{id: id, up: true})
	}
	return s
}

func (s *sim) at(t int64, n *simNode, fn func()) {
	s.seq++
	e := 0
	if n != nil {
		e = n.epoch
	}
	heap.Push(&s.q, &task{at: t, seq: s.seq, node: n, epoch: e, fn: fn})
}

func (s *sim) lat() int64 { return 300_000 + s.rng.Int64N(900_000) }

func (s *sim) rec(n *simNode, e history.Event) {
	e.Node = n.id
	e.Time = simBase + s.now
	s.events[n.id] = append(s.events[n.id], e)
}

func (s *sim) logf(n *simNode, level, msg string, attrs ...any) {
	line := map[string]any{"time": time.Unix(0, simBase+s.now).UTC().Format(time.RFC3339Nano), "level": level, "msg": msg, "node": n.id}
	for i := 0; i+1 < len(attrs); i += 2 {
		line[attrs[i].(string)] = attrs[i+1]
	}
	b, _ := json.Marshal(line) // map keys are sorted: deterministic
	n.log = append(n.log, string(b))
}

func (s *sim) opID(n *simNode) string {
	n.seq++
	return fmt.Sprintf("%s-%d", n.id, n.seq)
}

// call records the invoke of an operation, sends it when the node next runs, lets Redis
// answer it, and records the completion when the node next runs.
func (s *sim) call(n *simNode, inv history.Event, atRedis func(id string) reply, done func(reply)) {
	inv.ID, inv.Type = s.opID(n), history.Invoke
	s.rec(n, inv)
	complete := func(r reply) {
		ev := history.Event{ID: inv.ID, Type: r.typ, Kind: inv.Kind, Error: r.err}
		if r.typ == history.OK {
			switch inv.Kind {
			case history.KindAcquire:
				ev.Token = r.token
			case history.KindLoad:
				ev.Cursor, ev.Token = r.cursor, r.token
			}
		}
		s.rec(n, ev)
		if done != nil {
			done(r)
		}
	}
	if inv.Kind == history.KindCommit && s.pauseNext && n.leader {
		s.pauseNext = false
		s.at(s.now+10_000, nil, func() { s.inject("pause", n.id, 4000*ms) })
	}
	s.at(s.now+50_000, n, func() {
		switch n.net {
		case "reset":
			s.at(s.now+ms, n, func() { complete(reply{typ: history.Fail, err: "dial tcp: connection refused"}) })
			return
		case "blackhole":
			s.at(s.now+simTimeout, n, func() { complete(reply{typ: history.Info, err: "i/o timeout"}) })
			return
		}
		d := s.lat()
		if n.net == "delay" {
			d += simDelay
		}
		s.at(s.now+d, nil, func() {
			r := reply{typ: history.Fail, err: "read: connection reset by peer"}
			if !s.redisDown {
				r = atRedis(inv.ID)
			}
			s.at(s.now+s.lat(), n, func() { complete(r) })
		})
	})
}

func (s *sim) streamID() string {
	t := (simBase + s.now) / ms
	if t == s.lastStream {
		s.sameMS++
	} else {
		s.lastStream, s.sameMS = t, 0
	}
	return fmt.Sprintf("%d-%d", t, s.sameMS)
}

func (s *sim) follow(n *simNode, after int64) {
	n.gen++
	g := n.gen
	n.leader = false
	s.at(s.now+after, n, func() {
		if n.gen == g {
			s.tryAcquire(n, g)
		}
	})
}

func (s *sim) tryAcquire(n *simNode, g int) {
	if n.acquiring || n.leader || n.gen != g {
		return
	}
	n.acquiring = true
	send := s.now
	s.call(n, history.Event{Kind: history.KindAcquire}, func(string) reply {
		if s.holder == "" || s.expiry <= s.now {
			s.counter++
			s.holder, s.leaseTok, s.expiry = n.id, s.counter, s.now+simTTL
			return reply{typ: history.OK, token: s.counter}
		}
		return reply{typ: history.Fail, err: history.ErrNotHeld, pttl: s.expiry - s.now}
	}, func(r reply) {
		n.acquiring = false
		if n.gen != g {
			return
		}
		switch {
		case r.typ == history.OK:
			s.lead(n, r.token, send)
		case r.err == history.ErrNotHeld:
			s.at(s.now+max(r.pttl+20*ms, 50*ms), n, func() {
				if n.gen == g {
					s.tryAcquire(n, g)
				}
			})
		default:
			s.at(s.now+simTick, n, func() {
				if n.gen == g {
					s.tryAcquire(n, g)
				}
			})
		}
	})
}

func (s *sim) lead(n *simNode, tok, send int64) {
	n.gen++
	g := n.gen
	n.leader, n.token, n.deadline = true, tok, send+simTTL-simDrift
	s.logf(n, "INFO", "became-leader", "token", tok)
	s.at(s.now+2*ms, n, func() { s.tick(n, g) })
	s.at(s.now+simRenew, n, func() { s.renew(n, g) })
	s.watch(n, g)
}

func (s *sim) watch(n *simNode, g int) {
	s.at(n.deadline, n, func() {
		if n.gen != g {
			return
		}
		if s.now >= n.deadline {
			s.stepDown(n, "lease-expired")
			return
		}
		s.watch(n, g)
	})
}

func (s *sim) stepDown(n *simNode, reason string) {
	s.rec(n, history.Event{ID: s.opID(n), Type: history.Info, Kind: history.KindStepDown, Token: n.token, Reason: reason})
	level := "WARN"
	if reason == "fencing-token-rejected" {
		level = "ERROR"
	}
	s.logf(n, level, "lost-leadership", "token", n.token, "reason", reason)
	s.follow(n, 100*ms)
}

func (s *sim) tick(n *simNode, g int) {
	if n.gen != g {
		return
	}
	next := func() {
		s.at(s.now+simTick, n, func() { s.tick(n, g) })
	}
	s.call(n, history.Event{Kind: history.KindLoad}, func(string) reply {
		return reply{typ: history.OK, cursor: s.cursor, token: s.maxTok}
	}, func(r reply) {
		if n.gen != g {
			return
		}
		if r.typ != history.OK {
			next()
			return
		}
		from := r.cursor
		to := from + 1 + s.rng.Int64N(4)
		tok := n.token
		s.call(n, history.Event{Kind: history.KindCommit, Token: tok, From: from, To: to, Events: int(to - from)},
			func(id string) reply { return s.commit(n, id, tok, from, to) },
			func(r reply) {
				if r.err == history.ErrStaleToken {
					s.logf(n, "ERROR", "fencing-token-rejected", "token", tok, "from", from, "to", to)
				}
				if n.gen != g {
					return
				}
				if r.err == history.ErrStaleToken {
					s.stepDown(n, "fencing-token-rejected")
					return
				}
				next()
			})
	})
}

// commit is the store's fenced write (or, unfenced, a plain write) of request id.
func (s *sim) commit(n *simNode, id string, tok, from, to int64) reply {
	a := history.AuditEntry{StreamID: s.streamID(), Op: id, Node: n.id, Token: tok, From: from, To: to, ServerTime: (simBase + s.now) / 1000}
	r := reply{typ: history.OK}
	switch {
	case s.fenced && tok < s.maxTok:
		r = reply{typ: history.Fail, err: history.ErrStaleToken}
	case s.fenced && from != s.cursor:
		r = reply{typ: history.Fail, err: history.ErrCursorConflict}
	}
	if r.typ == history.OK {
		a.Result = "ok"
		for i := from + 1; i <= to; i++ {
			s.sink = append(s.sink, i)
		}
		s.cursor = to
		if s.fenced {
			s.maxTok = max(s.maxTok, tok)
		} else {
			s.maxTok = tok // a plain write
		}
	} else {
		a.Result = r.err
	}
	s.audit = append(s.audit, a)
	return r
}

func (s *sim) renew(n *simNode, g int) {
	if n.gen != g {
		return
	}
	s.at(s.now+simRenew, n, func() { s.renew(n, g) })
	if n.renewing {
		return
	}
	n.renewing = true
	send, tok := s.now, n.token
	s.call(n, history.Event{Kind: history.KindRenew, Token: tok}, func(string) reply {
		if s.holder == n.id && s.leaseTok == tok && s.expiry > s.now {
			s.expiry = s.now + simTTL
			return reply{typ: history.OK}
		}
		return reply{typ: history.Fail, err: history.ErrNotHeld}
	}, func(r reply) {
		n.renewing = false
		if n.gen != g {
			return
		}
		switch {
		case r.typ == history.OK:
			n.deadline = max(n.deadline, send+simTTL-simDrift)
		case r.err == history.ErrNotHeld:
			s.stepDown(n, "lease-lost")
		default:
			s.logf(n, "WARN", "renew-failed", "token", tok, "err", r.err)
		}
	})
}

// release gives the lease up (graceful stop) and then calls after.
func (s *sim) release(n *simNode, after func()) {
	tok := n.token
	n.gen++
	n.leader = false
	s.call(n, history.Event{Kind: history.KindRelease, Token: tok}, func(string) reply {
		if s.holder == n.id && s.leaseTok == tok {
			s.holder = ""
			for _, o := range s.nodes { // the release is published: standbys try at once
				if o != n && o.up && !o.leader {
					s.at(s.now+s.lat(), o, func() { s.tryAcquire(o, o.gen) })
				}
			}
			return reply{typ: history.OK}
		}
		return reply{typ: history.Fail, err: history.ErrNotHeld}
	}, func(reply) {
		s.logf(n, "INFO", "released", "token", tok)
		after()
	})
}

func (s *sim) exit(n *simNode) {
	n.up, n.leader, n.acquiring, n.renewing = false, false, false, false
	n.epoch++
	n.deferred = nil
}

func (s *sim) restart(n *simNode) {
	n.up, n.paused, n.net = true, false, ""
	n.epoch++
	s.logf(n, "INFO", "started")
	s.follow(n, 300*ms)
}

func (s *sim) node(id string) *simNode {
	for _, n := range s.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

// leader is the node a leader-targeted fault hits: the leader with the highest token.
func (s *sim) leaderNode() *simNode {
	var best *simNode
	for _, n := range s.nodes {
		if n.up && !n.paused && n.leader && (best == nil || n.token > best.token) {
			best = n
		}
	}
	if best == nil {
		return s.nodes[0]
	}
	return best
}

// inject injects a fault now and heals it after hold.
func (s *sim) inject(kind, target string, hold int64) {
	s.faultSeq++
	id := fmt.Sprintf("fault-%d", s.faultSeq)
	if target == "leader" {
		target = s.leaderNode().id
	}
	s.faults = append(s.faults, history.Event{ID: id, Type: history.Invoke, Kind: history.KindFault, Node: target, Fault: kind, Time: simBase + s.now})
	n := s.node(target)
	var heal func() string
	switch kind {
	case "kill":
		s.exit(n)
		heal = func() string { s.restart(n); return "restarted " + n.id }
	case "stop":
		if n.leader {
			s.release(n, func() { s.exit(n) })
		} else {
			s.exit(n)
		}
		heal = func() string { s.restart(n); return "restarted " + n.id }
	case "pause":
		n.paused = true
		heal = func() string {
			n.paused = false
			for i, fn := range n.deferred {
				s.at(s.now+int64(i+1)*20_000, n, fn)
			}
			n.deferred = nil
			return "SIGCONT " + n.id
		}
	case "partition-reset", "partition-blackhole", "delay":
		n.net = strings.TrimPrefix(kind, "partition-")
		heal = func() string { n.net = ""; return "removed the toxics of " + n.id + "->redis" }
	case "clock":
		heal = func() string { return "clock of " + n.id + " reset" }
	case "redis-restart":
		s.redisDown = true
		heal = func() string { s.redisDown = false; return "redis restarted (append-only file)" }
	}
	s.at(s.now+hold, nil, func() {
		what := heal()
		s.faults = append(s.faults, history.Event{ID: id, Type: history.OK, Kind: history.KindFault, Node: target, Fault: kind, Time: simBase + s.now, Reason: what})
	})
}

func (s *sim) play() {
	for i, n := range s.nodes {
		s.logf(n, "INFO", "started")
		s.follow(n, int64(120+35*i)*ms)
	}
	plan := []simFault{
		{5000, "pause", "leader", 4000},
		{12500, "kill", "leader", 1500},
		{17500, "partition-reset", "n1", 4000},
		{24000, "delay", "leader", 3500},
		{30000, "redis-restart", "redis", 300},
		{32500, "stop", "leader", 1000},
		{35000, "clock", "n2", 2500},
		{38000, "partition-blackhole", "leader", 3000},
	}
	if s.plan != nil {
		plan = s.plan
	}
	for _, p := range plan {
		target := map[string]any{"leader": true}
		if p.target != "leader" && p.target != "redis" {
			target = map[string]any{"node": int(p.target[1] - '0')}
		} else if p.target == "redis" {
			target = map[string]any{}
		}
		s.schedule = append(s.schedule, map[string]any{"at_ns": (p.at - 1000) * ms, "kind": p.kind, "target": target,
			"params": map[string]any{"Hold": p.hold * ms, "Variant": 0, "Magnitude": 0.5, "LeaseTTL": simTTL}})
		if p.kind == "pause" {
			// The classic stale leader: paused between deciding to commit and sending it.
			s.at(p.at*ms, nil, func() { s.pauseNext = true })
			continue
		}
		s.at(p.at*ms, nil, func() { s.inject(p.kind, p.target, p.hold*ms) })
	}
	s.healTime = 41500 * ms
	stopAt := 43000 * ms
	s.end = 43600 * ms
	s.at(stopAt, nil, func() {
		for _, n := range s.nodes {
			if !n.up {
				continue
			}
			s.logf(n, "INFO", "stopping")
			if n.leader {
				s.release(n, func() { s.exit(n) })
			} else {
				s.exit(n)
			}
		}
	})
	for s.q.Len() > 0 {
		tk := heap.Pop(&s.q).(*task)
		if tk.at > s.end {
			break
		}
		if n := tk.node; n != nil {
			if n.epoch != tk.epoch || !n.up {
				continue
			}
			if n.paused {
				n.deferred = append(n.deferred, tk.fn)
				continue
			}
		}
		s.now = tk.at
		tk.fn()
	}
}

// simFault is one fault of a simulated run: its kind, its target ("leader", "redis" or
// a node), when it is injected and how long it holds (milliseconds from the start).
type simFault struct {
	at     int64
	kind   string
	target string
	hold   int64
}

func (s *sim) write(dir, variant string) error {
	for _, d := range []string{dir, filepath.Join(dir, history.HistoryDir), filepath.Join(dir, history.LogsDir)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	info := history.RunInfo{
		Seed: s.seed, Nodes: []string{"n1", "n2", "n3"}, Workload: "listener", Variant: variant, Backend: "local",
		Nemeses:  []string{"clock", "delay", "kill", "partition-blackhole", "partition-reset", "pause", "redis-restart", "stop"},
		LeaseTTL: time.Duration(simTTL), Duration: 40 * time.Second,
		Start: simBase, HealTime: simBase + s.healTime, End: simBase + s.end, Persistence: true, Election: "fenceline",
		Versions:   map[string]string{"fenceline": "v0.1.0-dev", "go": "go1.26.0", "redis": "7.0.15"},
		StartToken: s.startToken, StartCursor: s.startCursor,
	}
	if err := history.WriteJSON(filepath.Join(dir, history.RunInfoFile), info); err != nil {
		return err
	}
	if err := history.WriteJSON(filepath.Join(dir, "schedule.json"), s.schedule); err != nil {
		return err
	}
	if err := writeLines(filepath.Join(dir, history.FaultsFile), s.faults); err != nil {
		return err
	}
	for _, n := range s.nodes {
		if err := writeLines(filepath.Join(dir, history.HistoryDir, n.id+".jsonl"), s.events[n.id]); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, history.LogsDir, n.id+".log"), []byte(strings.Join(n.log, "\n")+"\n"), 0o644); err != nil {
			return err
		}
	}
	bal := map[string]int64{}
	for _, i := range s.sink {
		e := source.At(i)
		bal[e.From] -= e.Amount
		bal[e.To] += e.Amount
	}
	st := history.Store{Cursor: s.cursor, MaxToken: s.maxTok, TokenCounter: s.counter, Sink: slices.Clone(s.sink), Balances: bal, Audit: s.audit}
	return history.WriteJSON(filepath.Join(dir, history.StoreFile), st)
}

func writeLines(path string, evs []history.Event) error {
	var b strings.Builder
	for _, e := range evs {
		j, err := json.Marshal(e)
		if err != nil {
			return err
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}
