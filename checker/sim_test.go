package checker

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fenceline/fenceline/history"
)

// This file simulates runs of the listener workload, to make golden histories and the
// large histories of the benchmarks. The simulated store is a single-threaded fenced
// register; the simulated cluster elects one leader at a time and injects faults.

// testBalances is the simulated ledger: event i moves i%7+1 into account "acct-(i%3)".
// It stands in for source.Balances.
func testBalances(upTo int64) map[string]int64 {
	b := map[string]int64{}
	for i := int64(1); i <= upTo; i++ {
		b[fmt.Sprintf("acct-%d", i%3)] += i%7 + 1
	}
	return b
}

type simConfig struct {
	Seed       uint64
	Nodes      int
	Ops        int      // store operations (loads + commits) to generate, at least
	FaultEvery int      // mean number of commits between faults
	Faults     []string // fault kinds to draw from
	LeaseTTL   time.Duration
	NoFence    bool // the store does not compare tokens (a broken variant)
	// NoCursorCheck: the store does not compare cursors (a broken variant).
	NoCursorCheck bool
	// Broken fences of writes that move no cursor (mutants of the commit script):
	// WriteNoToken accepts a write without recording its token; WriteCursorCheck holds
	// a write to a cursor (its From, 0) as a commit is held.
	WriteNoToken, WriteCursorCheck bool
	// Script, when set, replaces the random choice of faults: the k-th fault is Script[k].
	Script []string
}

type simStore struct {
	cursor, maxTok, counter int64
	sink                    []int64
	bal                     map[string]int64
	audit                   []history.AuditEntry
}

// final is the store as the final read finds it.
func (st *simStore) final() *history.Store {
	out := &history.Store{Cursor: st.cursor, MaxToken: st.maxTok, TokenCounter: st.counter,
		Sink: st.sink, Balances: st.bal, Audit: st.audit}
	if out.Sink == nil {
		out.Sink = []int64{}
	}
	return out
}

type sim struct {
	cfg     simConfig
	rng     *rand.Rand
	now     int64
	start   int64
	nodes   []string
	events  []history.Event
	faults  []history.Event
	st      simStore
	seq     int
	fseq    int
	storeOp int
	healAt  int64
	nfault  int
	// the leader
	leader int
	token  int64
	cursor int64 // what the leader believes
}

func newSim(cfg simConfig) *sim {
	if cfg.Nodes == 0 {
		cfg.Nodes = 3
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = 2 * time.Second
	}
	if cfg.FaultEvery == 0 {
		cfg.FaultEvery = 200
	}
	s := &sim{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 42)), now: 1_700_000_000_000_000_000}
	s.start = s.now
	s.st.bal = map[string]int64{}
	for i := range cfg.Nodes {
		s.nodes = append(s.nodes, fmt.Sprintf("n%d", i+1))
	}
	return s
}

func (s *sim) adv(d time.Duration) { s.now += int64(d) }
func (s *sim) lat() time.Duration  { return time.Duration(40+s.rng.IntN(200)) * time.Microsecond }

func (s *sim) invoke(node int, kind history.Kind, e history.Event) int {
	s.seq++
	e.ID = fmt.Sprintf("%s-%d", s.nodes[node], s.seq)
	e.Type, e.Kind, e.Node, e.Time = history.Invoke, kind, s.nodes[node], s.now
	s.events = append(s.events, e)
	if kind == history.KindLoad || kind == history.KindCommit {
		s.storeOp++
	}
	return len(s.events) - 1
}

func (s *sim) complete(inv int, typ history.Type, e history.Event) {
	i := s.events[inv]
	e.ID, e.Type, e.Kind, e.Node, e.Time = i.ID, typ, i.Kind, i.Node, s.now
	s.events = append(s.events, e)
}

// apply is the store's fenced write; it returns "ok" or the rejection.
func (s *sim) apply(inv int) string {
	e := s.events[inv]
	res := "ok"
	write := e.Kind == history.KindWrite
	switch {
	case e.Token < s.st.maxTok && !s.cfg.NoFence:
		res = history.ErrStaleToken
	case s.st.cursor != e.From && !s.cfg.NoCursorCheck && (!write || s.cfg.WriteCursorCheck):
		res = history.ErrCursorConflict
	}
	if res == "ok" && write {
		if !s.cfg.WriteNoToken {
			s.st.maxTok = max(s.st.maxTok, e.Token)
		}
	} else if res == "ok" {
		for i := e.From + 1; i <= e.To; i++ {
			s.st.sink = append(s.st.sink, i)
			s.st.bal[fmt.Sprintf("acct-%d", i%3)] += i%7 + 1
		}
		s.st.cursor, s.st.maxTok = e.To, max(s.st.maxTok, e.Token)
		if s.cfg.NoFence {
			s.st.maxTok = e.Token
		}
	}
	a := history.AuditEntry{
		StreamID: fmt.Sprintf("%d-0", s.now/1e6), Op: e.ID, Node: e.Node, Token: e.Token,
		From: e.From, To: e.To, Result: res, ServerTime: s.now / 1000,
	}
	if write {
		a.Kind = history.KindWrite
	}
	s.st.audit = append(s.st.audit, a)
	return res
}

func (s *sim) acquire(node int) int64 {
	i := s.invoke(node, history.KindAcquire, history.Event{})
	s.adv(s.lat())
	s.st.counter++
	tok := s.st.counter
	s.adv(s.lat())
	s.complete(i, history.OK, history.Event{Token: tok})
	return tok
}

// acquireTakeover is acquire, recorded as a takeover of lock value from
// (history.ReasonTakeover).
func (s *sim) acquireTakeover(node int, from string) int64 {
	i := s.invoke(node, history.KindAcquire, history.Event{})
	s.adv(s.lat())
	s.st.counter++
	tok := s.st.counter
	s.adv(s.lat())
	s.complete(i, history.OK, history.Event{Token: tok, Reason: history.ReasonTakeover + " " + from})
	return tok
}

func (s *sim) load(node int) (int64, int64) {
	i := s.invoke(node, history.KindLoad, history.Event{})
	s.adv(s.lat())
	c, t := s.st.cursor, s.st.maxTok
	s.adv(s.lat())
	s.complete(i, history.OK, history.Event{Cursor: c, Token: t})
	return c, t
}

func (s *sim) renew(node int, tok int64) {
	i := s.invoke(node, history.KindRenew, history.Event{Token: tok})
	s.adv(s.lat())
	s.complete(i, history.OK, history.Event{Token: tok})
}

// release records node's release of tok, answered OK.
func (s *sim) release(node int, tok int64) {
	i := s.invoke(node, history.KindRelease, history.Event{Token: tok})
	s.adv(s.lat())
	s.complete(i, history.OK, history.Event{Token: tok})
}

func (s *sim) stepDown(node int, tok int64, reason string) { s.stepDownCounted(node, tok, reason, 0) }

// stepDownCounted is a step-down that says the lease its term counted on
// (election.LeaseRecorder).
func (s *sim) stepDownCounted(node int, tok int64, reason string, lease time.Duration) {
	s.events = append(s.events, history.Event{ID: fmt.Sprintf("%s-sd-%d", s.nodes[node], s.now), Type: history.Info,
		Kind: history.KindStepDown, Node: s.nodes[node], Time: s.now, Token: tok, Reason: reason, Lease: int64(lease)})
}

func (s *sim) commitInvoke(node int, tok, from int64) int {
	n := int64(1 + s.rng.IntN(4))
	return s.invoke(node, history.KindCommit, history.Event{Token: tok, From: from, To: from + n, Events: int(n)})
}

func (s *sim) finishCommit(i int, res string) {
	if res == "ok" {
		s.complete(i, history.OK, history.Event{})
		return
	}
	s.complete(i, history.Fail, history.Event{Error: res})
}

// refusedStale records a commit of node under tok that the fence refused as stale.
func (s *sim) refusedStale(node int, tok int64) {
	i := s.commitInvoke(node, tok, 0)
	s.adv(s.lat())
	s.finishCommit(i, history.ErrStaleToken)
	s.adv(s.lat())
}

// commit runs one commit of the leader to completion; on a conflict it reloads.
func (s *sim) commit() {
	i := s.commitInvoke(s.leader, s.token, s.cursor)
	s.adv(s.lat())
	res := s.apply(i)
	s.adv(s.lat())
	s.finishCommit(i, res)
	switch res {
	case "ok":
		s.cursor = s.events[i].To
	case history.ErrCursorConflict:
		s.cursor, _ = s.load(s.leader)
	}
	s.adv(time.Duration(s.rng.IntN(300)) * time.Microsecond)
}

// stopGracefully stops node, the leader of tok, with a stop fault: it releases its lease
// and steps down. It returns the fault's id.
func (s *sim) stopGracefully(node int, tok int64) string {
	id := s.injectFault("stop", s.nodes[node])
	s.release(node, tok)
	s.stepDown(node, tok, "stopped")
	return id
}

func (s *sim) injectFault(kind string, node string) string {
	s.fseq++
	id := fmt.Sprintf("fault-%d", s.fseq)
	s.faults = append(s.faults, history.Event{ID: id, Type: history.Invoke, Kind: history.KindFault, Node: node, Fault: kind, Time: s.now})
	s.adv(time.Microsecond)
	return id
}

func (s *sim) healFault(id string) {
	for _, f := range s.faults {
		if f.ID == id {
			s.faults = append(s.faults, history.Event{ID: id, Type: history.OK, Kind: history.KindFault, Node: f.Node, Fault: f.Fault, Time: s.now})
			return
		}
	}
}

// elect makes another live node the leader after the lease expired (or at once).
func (s *sim) elect(wait bool, not int) {
	if wait {
		s.adv(s.cfg.LeaseTTL + time.Duration(s.rng.IntN(200))*time.Millisecond)
	} else {
		s.adv(time.Duration(1+s.rng.IntN(5)) * time.Millisecond)
	}
	next := (not + 1 + s.rng.IntN(len(s.nodes)-1)) % len(s.nodes)
	s.leader = next
	s.token = s.acquire(next)
	s.cursor, _ = s.load(next)
}

func (s *sim) follower() int { return (s.leader + 1 + s.rng.IntN(len(s.nodes)-1)) % len(s.nodes) }

// some runs a few commits of the current leader (with renews).
func (s *sim) some(n int) {
	for range n {
		s.commit()
		if s.rng.IntN(20) == 0 {
			s.renew(s.leader, s.token)
		}
	}
}

func (s *sim) fault(kind string) {
	old, oldTok := s.leader, s.token
	switch kind {
	case "kill":
		i := s.commitInvoke(old, oldTok, s.cursor)
		s.adv(s.lat())
		id := s.injectFault("kill", s.nodes[old])
		if s.rng.IntN(2) == 0 {
			s.apply(i) // reached the store; the reply is lost with the process
		}
		s.elect(true, old)
		s.some(5)
		s.healFault(id)
	case "pause":
		i := s.commitInvoke(old, oldTok, s.cursor) // in flight when the process stops
		id := s.injectFault("pause", s.nodes[old])
		s.elect(true, old)
		s.some(5)
		s.healFault(id)
		s.adv(s.lat())
		res := s.apply(i)
		s.adv(s.lat())
		s.finishCommit(i, res)
		if res == history.ErrCursorConflict {
			// The old leader does not know it lost the lease: it reloads and retries.
			c, _ := s.load(old)
			j := s.commitInvoke(old, oldTok, c)
			s.adv(s.lat())
			s.finishCommit(j, s.apply(j))
		}
		s.stepDown(old, oldTok, "lease-expired")
		s.adv(s.lat())
		s.some(2) // the new leader learns of a conflict, if any, and reloads
	case "partition":
		i := s.commitInvoke(old, oldTok, s.cursor)
		s.adv(s.lat())
		id := s.injectFault("partition-blackhole", s.nodes[old])
		if s.rng.IntN(2) == 0 {
			s.apply(i)
		}
		s.adv(500 * time.Millisecond)
		s.complete(i, history.Info, history.Event{Error: "i/o timeout"})
		s.adv(s.cfg.LeaseTTL / 2)
		s.stepDown(old, oldTok, "lease-lost")
		s.elect(true, old)
		s.some(5)
		s.healFault(id)
	case "stop":
		id := s.stopGracefully(old, oldTok)
		s.elect(false, old)
		s.some(5)
		s.healFault(id)
	case "lagging-load":
		// A graceful hand-over, but the new leader reads the cursor from a lagging
		// replica and the store does not check cursors: the cursor moves back.
		id := s.stopGracefully(old, oldTok)
		s.adv(2 * time.Millisecond)
		s.leader = s.follower()
		s.token = s.acquire(s.leader)
		l := s.invoke(s.leader, history.KindLoad, history.Event{})
		s.adv(s.lat())
		s.cursor = max(0, s.st.cursor-3)
		s.complete(l, history.OK, history.Event{Cursor: s.cursor, Token: s.st.maxTok})
		s.some(5)
		s.healFault(id)
	case "follower-kill":
		id := s.injectFault("kill", s.nodes[s.follower()])
		s.some(5)
		s.healFault(id)
	case "redis-restart":
		i := s.commitInvoke(old, oldTok, s.cursor)
		s.adv(s.lat())
		id := s.injectFault("redis-restart", "redis")
		if s.rng.IntN(2) == 0 {
			s.apply(i)
		}
		s.adv(10 * time.Millisecond)
		s.complete(i, history.Info, history.Event{Error: "connection reset by peer"})
		s.adv(300 * time.Millisecond)
		s.healFault(id)
		s.cursor, _ = s.load(old)
		s.some(5)
	case "redis-restart-volatile":
		i := s.commitInvoke(old, oldTok, s.cursor)
		s.adv(s.lat())
		id := s.injectFault("redis-restart-volatile", "redis")
		s.adv(10 * time.Millisecond)
		s.complete(i, history.Info, history.Event{Error: "connection reset by peer"})
		s.st = simStore{bal: map[string]int64{}} // everything is gone, the token counter too
		s.adv(300 * time.Millisecond)
		s.healFault(id)
		r := s.invoke(old, history.KindRenew, history.Event{Token: oldTok})
		s.adv(s.lat())
		s.complete(r, history.Fail, history.Event{Token: oldTok, Error: history.ErrNotHeld})
		s.stepDown(old, oldTok, "renew-failed")
		s.elect(false, old)
		s.some(5)
	default:
		panic("sim: unknown fault " + kind)
	}
}

// run simulates until cfg.Ops store operations were made, then heals, recovers and
// reads the store.
func (s *sim) run() *history.Run {
	s.token = s.acquire(0)
	s.cursor, _ = s.load(0)
	for s.storeOp < s.cfg.Ops {
		if len(s.cfg.Script) > 0 {
			if s.nfault < len(s.cfg.Script) && s.rng.IntN(s.cfg.FaultEvery) == 0 {
				s.fault(s.cfg.Script[s.nfault])
				s.nfault++
			}
		} else if len(s.cfg.Faults) > 0 && s.rng.IntN(s.cfg.FaultEvery) == 0 {
			s.fault(s.cfg.Faults[s.rng.IntN(len(s.cfg.Faults))])
		}
		s.commit()
		if s.rng.IntN(20) == 0 {
			s.renew(s.leader, s.token)
		}
	}
	return s.end()
}

// end heals, lets the leader commit three more times, and returns the run as recorded
// so far.
func (s *sim) end() *history.Run {
	s.adv(time.Millisecond)
	heal := s.now
	s.adv(time.Millisecond)
	s.some(3)
	s.adv(time.Millisecond)
	return &history.Run{
		Info: history.RunInfo{Seed: int64(s.cfg.Seed), Nodes: s.nodes, Workload: "listener", Backend: "sim",
			Nemeses: s.cfg.Faults, LeaseTTL: s.cfg.LeaseTTL, Start: s.start, HealTime: heal, End: s.now,
			Persistence: true, Election: "sim"},
		Events: history.Pack(s.events),
		Faults: s.faults,
		Store:  s.st.final(),
	}
}

// writeRun writes run as a run directory.
func writeRun(tb testing.TB, run *history.Run, dir string) {
	tb.Helper()
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	must(os.RemoveAll(dir))
	must(os.MkdirAll(filepath.Join(dir, history.HistoryDir), 0o755))
	must(history.WriteJSON(filepath.Join(dir, history.RunInfoFile), run.Info))
	files := map[string]*os.File{}
	for i := range run.Events.Len() {
		e := run.Events.At(i)
		f := files[e.Node]
		if f == nil {
			var err error
			f, err = os.Create(filepath.Join(dir, history.HistoryDir, e.Node+".jsonl"))
			must(err)
			files[e.Node] = f
		}
		b, err := json.Marshal(e)
		must(err)
		_, err = f.Write(append(b, '\n'))
		must(err)
	}
	for _, f := range files {
		must(f.Close())
	}
	if len(run.Faults) > 0 {
		f, err := os.Create(filepath.Join(dir, history.FaultsFile))
		must(err)
		for _, e := range run.Faults {
			b, err := json.Marshal(e)
			must(err)
			_, err = f.Write(append(b, '\n'))
			must(err)
		}
		must(f.Close())
	}
	if run.Store != nil {
		must(history.WriteStore(dir, run.Store))
	}
}
