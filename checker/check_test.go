package checker

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/fenceline/fenceline/history"
)

func ev(id string, typ history.Type, kind history.Kind, node string, t int64) history.Event {
	return history.Event{ID: id, Type: typ, Kind: kind, Node: node, Time: t}
}

func TestCheckBadInput(t *testing.T) {
	cases := []struct {
		name   string
		events []history.Event
		faults []history.Event
		want   string
	}{
		{"completion without invoke", []history.Event{ev("a", history.OK, history.KindCommit, "n1", 5)}, nil, "completion without invoke"},
		{"invoked twice", []history.Event{ev("a", history.Invoke, history.KindLoad, "n1", 5), ev("a", history.Invoke, history.KindLoad, "n1", 6)}, nil, "invoked twice"},
		{"kind changes", []history.Event{ev("a", history.Invoke, history.KindLoad, "n1", 5), ev("a", history.OK, history.KindCommit, "n1", 6)}, nil, "completed as"},
		{"node changes", []history.Event{ev("a", history.Invoke, history.KindLoad, "n1", 5), ev("a", history.OK, history.KindLoad, "n2", 6)}, nil, "completed as"},
		{"malformed event", []history.Event{ev("a", "done", history.KindLoad, "n1", 5)}, nil, "unknown type"},
		{"heal without injection", nil, []history.Event{ev("f", history.OK, history.KindFault, "n1", 5)}, "never injected"},
		{"store event among faults", nil, []history.Event{ev("f", history.Invoke, history.KindLoad, "n1", 5)}, "among the faults"},
	}
	for _, c := range cases {
		_, err := Check(context.Background(), &history.Run{Events: history.Pack(c.events), Faults: c.faults}, Options{})
		if !errors.Is(err, ErrBadHistory) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrBadHistory mentioning %q", c.name, err, c.want)
		}
	}
	if _, err := Check(context.Background(), nil, Options{}); err == nil {
		t.Error("nil run accepted")
	}
	if _, err := Check(context.Background(), &history.Run{}, Options{Checks: []string{"bogus"}}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("unknown check: got %v, want ErrBadOptions", err)
	}
	if _, err := Check(context.Background(), &history.Run{}, Options{PieceOps: 10, MaxPieceOps: 5}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("PieceOps > MaxPieceOps: got %v, want ErrBadOptions", err)
	}
}

func TestCheckEmptyRun(t *testing.T) {
	res, err := Check(context.Background(), &history.Run{Store: &history.Store{}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Check(CheckLinearizability); c == nil || c.Verdict != Valid {
		t.Errorf("empty history: %+v", c)
	}
	if c := res.Check(CheckProgress); c == nil || c.Verdict != Unknown {
		t.Errorf("no heal time: progress %+v, want unknown", c)
	}
}

// registerRun simulates the register workload: clients that load and commit with
// tokens of their own, concurrently, some commits of unknown outcome.
func registerRun(seed uint64, nclients, nops int) *history.Run {
	return registerRunWith(seed, nclients, nops, simConfig{}, false)
}

// registerRunWith is registerRun with the store's fence as cfg says (its fields for the
// fence and the writes only), and with writes, when asked for, among the operations: a
// fifth of them, a quarter of which run a body that fails after the check.
func registerRunWith(seed uint64, nclients, nops int, cfg simConfig, writes bool) *history.Run {
	rng := rand.New(rand.NewPCG(seed, 1))
	type client struct {
		name   string
		next   int64 // time of the next step
		phase  int   // 0 idle, 1 in flight, 2 linearized
		inv    history.Event
		done   history.Event
		cursor int64
		tok    int64
		unsure bool
	}
	st := &simStore{bal: map[string]int64{}}
	s := &sim{cfg: cfg, st: *st}
	const t0 = 1_700_000_000_000_000_000
	cs := make([]*client, nclients)
	for i := range cs {
		cs[i] = &client{name: fmt.Sprintf("c%d", i+1), next: t0 + rng.Int64N(1000), tok: 1}
	}
	var evs []history.Event
	ops, seq := 0, 0
	var end int64
	for ops < nops || slicesAny(cs, func(c *client) bool { return c.phase != 0 }) {
		c := cs[0]
		for _, d := range cs {
			if d.next < c.next {
				c = d
			}
		}
		now := c.next
		end = max(end, now)
		switch c.phase {
		case 0:
			if ops >= nops {
				c.next = 1 << 62
				continue
			}
			seq++
			ops++
			c.inv = history.Event{ID: fmt.Sprintf("%s-%d", c.name, seq), Type: history.Invoke, Node: c.name, Time: now, Kind: history.KindLoad}
			switch {
			case writes && ops%5 == 1:
				c.inv.Kind, c.inv.Token = history.KindWrite, c.tok
			case ops%2 == 0:
				c.inv.Kind, c.inv.Token, c.inv.From, c.inv.To = history.KindCommit, c.tok, c.cursor, c.cursor+1
			}
			evs = append(evs, c.inv)
			c.phase, c.next = 1, now+rng.Int64N(400)
		case 1:
			c.done = history.Event{ID: c.inv.ID, Type: history.OK, Kind: c.inv.Kind, Node: c.name}
			c.unsure = c.inv.Kind != history.KindLoad && rng.IntN(15) == 0
			if c.inv.Kind == history.KindLoad {
				c.done.Cursor, c.done.Token = s.st.cursor, s.st.maxTok
				c.cursor, c.tok = s.st.cursor, max(c.tok, s.st.maxTok)+int64(rng.IntN(2))
			} else if !c.unsure || rng.IntN(2) == 0 {
				s.now = now
				s.events = []history.Event{c.inv}
				if res := s.apply(0); res != "ok" {
					c.done.Type, c.done.Error = history.Fail, res
				} else if c.inv.Kind == history.KindWrite && rng.IntN(4) == 0 {
					c.done.Error, s.st.audit[len(s.st.audit)-1].Result = history.ErrBodyFailed, history.AuditBodyFailed
				}
			}
			c.phase, c.next = 2, now+rng.Int64N(400)
		case 2:
			c.done.Time = now
			if c.unsure {
				c.done.Type, c.done.Error = history.Info, "timeout"
			}
			evs = append(evs, c.done)
			c.phase, c.next = 0, now+rng.Int64N(300)
		}
	}
	history.SortByTime(evs)
	names := make([]string, nclients)
	for i, c := range cs {
		names[i] = c.name
	}
	return &history.Run{
		Info:   history.RunInfo{Nodes: names, Workload: "register", Start: t0, HealTime: t0 + 1, End: end + 1, Persistence: true},
		Events: history.Pack(evs),
		Store:  &history.Store{Cursor: s.st.cursor, MaxToken: s.st.maxTok, Sink: s.st.sink, Balances: s.st.bal, Audit: s.st.audit},
	}
}

func slicesAny[T any](s []T, f func(T) bool) bool {
	for _, v := range s {
		if f(v) {
			return true
		}
	}
	return false
}

// wantRegisterValid checks run with the register workload's checks, every one of which
// must pass, and returns the result.
func wantRegisterValid(t *testing.T, run *history.Run) *Result {
	t.Helper()
	res, err := Check(context.Background(), run, Options{Checks: RegisterChecks(), PieceOps: 200})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		if c.Verdict != Valid {
			t.Errorf("%s %s: %s %q", c.Name, c.Verdict, c.Message, c.Offending)
		}
	}
	return res
}

func TestRegisterWorkload(t *testing.T) {
	run := registerRun(11, 5, 3000)
	res := wantRegisterValid(t, run)
	if len(res.Checks) != len(RegisterChecks()) {
		t.Errorf("%d checks ran, want %d", len(res.Checks), len(RegisterChecks()))
	}
	t.Logf("%s", res.Check(CheckLinearizability).Message)

	// A load that returns a cursor one behind: not linearizable.
	evs := run.Events.All()
	for i := len(evs) / 2; i < len(evs); i++ {
		if e := &evs[i]; e.Kind == history.KindLoad && e.Type == history.OK && e.Cursor > 0 {
			e.Cursor--
			break
		}
	}
	run.Events = history.Pack(evs)
	res, err := Check(context.Background(), run, Options{Checks: []string{CheckLinearizability}, PieceOps: 200, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Check(CheckLinearizability); c.Verdict != Invalid || c.Visualization == "" || len(c.Offending) == 0 {
		t.Errorf("corrupted load: %s %s %q %q", c.Verdict, c.Message, c.Offending, c.Visualization)
	}
}

// Writes that move no cursor, among the register's commits and loads: a store that
// fences them is valid on every check; one that accepts a write without recording its
// token, or holds a write to a cursor, is caught by linearizability and no-stale-write.
// (The commit script's mutants commitScript:252:1 and 161:8 are these stores.)
func TestRegisterWrites(t *testing.T) {
	run := registerRunWith(12, 5, 3000, simConfig{}, true)
	res := wantRegisterValid(t, run)
	if res.Ops.Writes < 400 {
		t.Errorf("%d writes, want about 600", res.Ops.Writes)
	}
	body := 0
	for i := range run.Store.AuditLen() {
		if run.Store.AuditAt(i).Result == history.AuditBodyFailed {
			body++
		}
	}
	if body == 0 {
		t.Error("no write whose body failed")
	}
	if m := res.Check(CheckLinearizability).Message; !strings.Contains(m, "writes") {
		t.Errorf("linearizability says nothing of the writes: %s", m)
	}
	t.Logf("%s", res.Check(CheckLinearizability).Message)

	for _, c := range []struct {
		name string
		cfg  simConfig
	}{
		{"token not recorded", simConfig{WriteNoToken: true}},
		{"cursor checked", simConfig{WriteCursorCheck: true}},
	} {
		run := registerRunWith(12, 5, 3000, c.cfg, true)
		res, err := Check(context.Background(), run, Options{Checks: []string{CheckLinearizability, CheckStaleWrite}, PieceOps: 200})
		if err != nil {
			t.Fatal(err)
		}
		for _, cr := range res.Checks {
			if cr.Verdict != Invalid {
				t.Errorf("%s: %s %s: %s", c.name, cr.Name, cr.Verdict, cr.Message)
			}
		}
	}
}

// A write whose body failed after the check is accepted: its token stands. A later
// commit with a lower token is a stale write, and an audit that records the write as a
// commit contradicts the history.
func TestWriteBodyFailed(t *testing.T) {
	const t0 = 1_700_000_000_000_000_000
	w := func(typ history.Type, at int64) history.Event {
		e := ev("w", typ, history.KindWrite, "c1", t0+at)
		e.Token = 5
		if typ == history.OK {
			e.Error = history.ErrBodyFailed
		}
		return e
	}
	c := func(typ history.Type, at int64) history.Event {
		e := ev("c", typ, history.KindCommit, "c2", t0+at)
		e.Token, e.From, e.To = 4, 0, 1
		return e
	}
	audit := []history.AuditEntry{
		{StreamID: "1-0", Op: "w", Node: "c1", Token: 5, Kind: history.KindWrite, Result: history.AuditBodyFailed},
		{StreamID: "2-0", Op: "c", Node: "c2", Token: 4, From: 0, To: 1, Result: "ok"},
	}
	run := &history.Run{Info: history.RunInfo{Nodes: []string{"c1", "c2"}, Workload: "register", Start: t0, HealTime: t0 + 1, End: t0 + 100, Persistence: true},
		Events: history.Pack([]history.Event{w(history.Invoke, 1), w(history.OK, 2), c(history.Invoke, 3), c(history.OK, 4)}),
		Store:  &history.Store{Cursor: 1, MaxToken: 5, Sink: []int64{1}, Balances: map[string]int64{}, Audit: audit}}
	wantCheck(t, checkOnly(t, run, CheckStaleWrite), Invalid, "accepted with token 4")
	wantCheck(t, checkOnly(t, run, CheckLinearizability), Invalid, "")

	evs := run.Events.All()
	// An audit that calls a write a commit, or its body's failure ok, contradicts it.
	run.Store.Audit = []history.AuditEntry{{StreamID: "1-0", Op: "w", Node: "c1", Token: 5, Result: history.AuditBodyFailed}, audit[1]}
	evs[1].Type, evs[1].Error = history.OK, history.ErrBodyFailed
	run.Events = history.Pack(evs)
	wantCheck(t, checkOnly(t, run, CheckAudit), Invalid, "records it as c1 token=5 0→0")
}

// TestSimulatedRunsAgreeWithUncut compares, on whole simulated runs (valid and broken),
// the checker's linearizability verdict with porcupine's on the uncut history in which
// every unknown outcome is left open.
func TestSimulatedRunsAgreeWithUncut(t *testing.T) {
	ops := 1500
	if raceEnabled {
		ops = 400
	}
	if v, err := strconv.Atoi(os.Getenv("FENCELINE_UNCUT_OPS")); err == nil {
		ops = v
	}
	runs := map[string]*history.Run{
		"clean":     newSim(simConfig{Seed: 21, Ops: ops, FaultEvery: 60, Faults: benchFaults}).run(),
		"no-fence":  newSim(simConfig{Seed: 22, Ops: ops, FaultEvery: 60, NoFence: true, Faults: []string{"pause", "kill"}}).run(),
		"volatile":  newSim(simConfig{Seed: 23, Ops: ops, FaultEvery: 60, Script: []string{"kill", "pause", "redis-restart-volatile"}}).run(),
		"no-cursor": newSim(simConfig{Seed: 24, Ops: ops, FaultEvery: 60, NoCursorCheck: true, Faults: []string{"lagging-load", "kill"}}).run(),
		"register":  registerRun(25, 4, ops),
		"no-store": func() *history.Run {
			r := newSim(simConfig{Seed: 26, Ops: ops, FaultEvery: 40, Faults: benchFaults}).run()
			r.Store = nil
			return r
		}(),
	}
	for name, run := range runs {
		p, err := parse(run)
		if err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		whole := porcupine.CheckOperationsTimeout(registerModel(regState{}, nil), toPorcupine(linOps(p)), 5*time.Minute)
		uncut := time.Since(t0)
		res, err := Check(context.Background(), run, Options{Checks: []string{CheckLinearizability}, NoFinalRead: true, PieceOps: 100})
		if err != nil {
			t.Fatal(err)
		}
		c := res.Check(CheckLinearizability)
		want := map[porcupine.CheckResult]Verdict{porcupine.Ok: Valid, porcupine.Illegal: Invalid, porcupine.Unknown: Unknown}[whole]
		if whole == porcupine.Unknown {
			t.Logf("%s: the uncut check did not finish", name)
			continue
		}
		if c.Verdict != want {
			t.Errorf("%s: uncut porcupine %s, checker %s: %s", name, whole, c.Verdict, c.Message)
		}
		t.Logf("%s: %s (%d pieces, decided by the chain: %d, %v; uncut %v)", name, c.Verdict, c.Stats["pieces"], c.Stats["decided_by_chain"], res.Duration.Round(time.Millisecond), uncut.Round(time.Millisecond))
		// The chain decision alone, on the same operations, where it decides.
		if v, why, _ := decideChain(linOps(p), regState{}); v != Unknown && v != want {
			t.Errorf("%s: uncut porcupine %s, chain decision %s: %s", name, whole, v, why)
		}
	}
}

// TestAuditIndexCollisions: ids whose hashes collide are still told apart, duplicates
// still found, and the first entry of each id returned.
func TestAuditIndexCollisions(t *testing.T) {
	audit := []history.AuditEntry{{Op: "a"}, {Op: "b"}, {Op: "a"}, {Op: "c"}, {Op: "b"}}
	for _, hash := range []func(string) uint64{func(string) uint64 { return 7 }, nil} {
		x := newAuditIndex(&history.Store{Audit: audit})
		if hash != nil {
			x.hash = hash // every id collides
		}
		var dups []int32
		for j := range audit {
			if first, dup := x.add(int32(j)); dup {
				dups = append(dups, first)
			}
		}
		if !slices.Equal(dups, []int32{0, 1}) {
			t.Errorf("duplicates found at first entries %v, want [0 1]", dups)
		}
		for id, want := range map[string]int32{"a": 0, "b": 1, "c": 3} {
			if got, ok := x.get(id); !ok || got != want {
				t.Errorf("get(%q) = %d, %v; want %d", id, got, ok, want)
			}
		}
		if _, ok := x.get("d"); ok {
			t.Error(`get("d") found an entry`)
		}
	}
}

// An acquire answered with a token that is not one (the acquire script's decimal carry
// stopped a digit short, a mutant) is a violation of unique-tokens; an acquire whose
// reply was lost is not.
func TestMalformedAcquire(t *testing.T) {
	for _, c := range []struct {
		err  string
		want Verdict
	}{
		{history.ErrMalformedReply + ": election: unexpected reply from redis: acquire: [1 :00 0]", Invalid},
		{"i/o timeout", Valid},
	} {
		// The script ran (it counted a token) and answered with none.
		if got := checkOnly(t, n2AcquireRun(history.Info, c.err, true), CheckUniqueTokens); got.Verdict != c.want {
			t.Errorf("%q: unique-tokens %s (%s), want %s", c.err, got.Verdict, got.Message, c.want)
		} else if c.want == Invalid && !strings.Contains(strings.Join(got.Offending, "\n"), "n2's acquire") {
			t.Errorf("offending %q does not name n2's acquire", got.Offending)
		}
	}
}

// An acquire refused for want of the node's own presence is a reply the acquire script
// gives only when asked for presence, with takeover on disconnect: in a run without it,
// it is outside the protocol (the script's `return {0, holder, pttl}` made -1, a mutant
// that makes every refused acquire one, which the harness let survive before). A plain
// refusal is not.
func TestNotPresentAcquire(t *testing.T) {
	for _, c := range []struct {
		err      string
		takeover bool
		want     Verdict
	}{
		{history.ErrNotPresent, false, Invalid},
		{history.ErrNotPresent, true, Valid},
		{history.ErrNotHeld, false, Valid},
	} {
		run := n2AcquireRun(history.Fail, c.err, false)
		run.Info.TakeoverOnDisconnect = c.takeover
		if got := checkOnly(t, run, CheckUniqueTokens); got.Verdict != c.want {
			t.Errorf("%q, takeover %v: unique-tokens %s (%s), want %s", c.err, c.takeover, got.Verdict, got.Message, c.want)
		} else if c.want == Invalid && !strings.Contains(strings.Join(got.Offending, "\n"), "n2's acquire") {
			t.Errorf("offending %q does not name n2's acquire", got.Offending)
		}
	}
}

// n2AcquireRun is a run in which n1 leads and n2's acquire completes as typ with error
// errText; counted says whether the script counted a token for it.
func n2AcquireRun(typ history.Type, errText string, counted bool) *history.Run {
	s := newSim(simConfig{Seed: 1})
	tok := s.acquire(0)
	s.token = tok
	s.cursor, _ = s.load(0)
	s.some(5)
	i := s.invoke(1, history.KindAcquire, history.Event{})
	s.adv(time.Millisecond)
	if counted {
		s.st.counter++
	}
	s.complete(i, typ, history.Event{Error: errText})
	s.renew(0, tok)
	return s.end()
}

// checkOnly runs the one check name on run.
func checkOnly(t *testing.T, run *history.Run, name string) *CheckResult {
	t.Helper()
	res, err := Check(context.Background(), run, Options{Checks: []string{name}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Check(name)
}

// wantCheck fails t unless cr's verdict is want and, when that is Invalid, its first
// offending entry says offends and its first violation is timed.
func wantCheck(t *testing.T, cr *CheckResult, want Verdict, offends string) {
	t.Helper()
	if cr.Verdict != want {
		t.Fatalf("%s, want %s: %s %q", cr.Verdict, want, cr.Message, cr.Offending)
	}
	if want == Invalid && (len(cr.Offending) == 0 || !strings.Contains(cr.Offending[0], offends) || cr.FirstViolation == 0) {
		t.Errorf("offending %q (want %q), first violation %d", cr.Offending, offends, cr.FirstViolation)
	}
}

// wantOwnElectorOnly checks that check judges fenceline's own elector in the listener
// workload and nothing else: build makes a history that breaks check, which must be
// invalid there and not applicable to the register workload or another design.
func wantOwnElectorOnly(t *testing.T, check string, build func(s *sim)) {
	t.Helper()
	for _, c := range []struct {
		workload, target string
		want             Verdict
	}{
		{"listener", "", Invalid},
		{"register", "", NotApplicable},
		{"listener", "redsync", NotApplicable},
		{"listener", "node-cmd: node listener.js", NotApplicable},
	} {
		s := newSim(simConfig{Seed: 1})
		build(s)
		run := s.end()
		run.Info.Workload, run.Info.Target = c.workload, c.target
		if cr := checkOnly(t, run, check); cr.Verdict != c.want {
			t.Errorf("%s %q: %s, want %s: %s", c.workload, c.target, cr.Verdict, c.want, cr.Message)
		}
	}
}

// The final record holds the last accepted commit's cursor and the last accepted token:
// a write's, when a write came last. (A register run of 2026-12-07 whose last accepted
// entry was a write was called inconsistent: "the final store holds cursor=473
// token=1064, but the audit's last accepted entry wrote cursor=0".)
func TestAuditFinalRecordAfterAWrite(t *testing.T) {
	const t0 = 1_700_000_000_000_000_000
	op := func(id string, kind history.Kind, typ history.Type, tok, from, to, at int64) history.Event {
		e := ev(id, typ, kind, "c1", t0+at)
		e.Token = tok
		if kind == history.KindCommit {
			e.From, e.To = from, to
		}
		return e
	}
	run := &history.Run{Info: history.RunInfo{Nodes: []string{"c1"}, Workload: "register", Start: t0, HealTime: t0 + 1, End: t0 + 100, Persistence: true},
		Events: history.Pack([]history.Event{
			op("c", history.KindCommit, history.Invoke, 4, 0, 1, 1), op("c", history.KindCommit, history.OK, 4, 0, 1, 2),
			op("w", history.KindWrite, history.Invoke, 5, 0, 0, 3), op("w", history.KindWrite, history.OK, 5, 0, 0, 4),
		}),
		Store: &history.Store{Cursor: 1, MaxToken: 5, Sink: []int64{1}, Balances: map[string]int64{}, Audit: []history.AuditEntry{
			{StreamID: "1-0", Op: "c", Node: "c1", Token: 4, From: 0, To: 1, Result: "ok"},
			{StreamID: "2-0", Op: "w", Node: "c1", Token: 5, Kind: history.KindWrite, Result: "ok"},
		}}}
	wantCheck(t, checkOnly(t, run, CheckAudit), Valid, "")
	// A record that lost the write's token contradicts the audit.
	run.Store.MaxToken = 4
	wantCheck(t, checkOnly(t, run, CheckAudit), Invalid, "the final store holds cursor=1 token=4")
}

// A store read while the run goes on (NoFinalRead, the stop-at-violation watcher's) is a
// snapshot: a commit in flight at the read may be applied after it, so its absence from
// the audit proves nothing. n1's commit has no answer yet, n2's load has seen it, and
// the snapshot, read before the commit reached Redis, lacks it. Judged as a final read's
// audit stream, the same absence says the commit never happened, which the load
// contradicts.
func TestAuditSnapshotAbsenceProvesNothing(t *testing.T) {
	t0 := int64(1_700_000_000_000_000_000)
	ev := func(id string, typ history.Type, kind history.Kind, node string, at, tok, from, to, cursor int64) history.Event {
		return history.Event{ID: id, Type: typ, Kind: kind, Node: node, Time: t0 + at*int64(time.Millisecond), Token: tok, From: from, To: to, Cursor: cursor}
	}
	run := &history.Run{Info: history.RunInfo{Nodes: []string{"n1", "n2"}, Workload: "listener", Start: t0, End: t0 + int64(time.Second), Persistence: true, LeaseTTL: 2 * time.Second},
		Events: history.Pack([]history.Event{
			ev("a1", history.Invoke, history.KindAcquire, "n1", 1, 0, 0, 0, 0), ev("a1", history.OK, history.KindAcquire, "n1", 2, 1, 0, 0, 0),
			ev("c1", history.Invoke, history.KindCommit, "n1", 3, 1, 0, 2, 0), ev("c1", history.OK, history.KindCommit, "n1", 4, 1, 0, 2, 0),
			ev("c2", history.Invoke, history.KindCommit, "n1", 5, 1, 2, 4, 0), // in flight at the cut
			ev("l1", history.Invoke, history.KindLoad, "n2", 20, 0, 0, 0, 0), ev("l1", history.OK, history.KindLoad, "n2", 21, 1, 0, 0, 4),
		}),
		Store: &history.Store{Cursor: 2, MaxToken: 1, Sink: []int64{1, 2}, Balances: map[string]int64{}, Audit: []history.AuditEntry{
			{StreamID: "1-0", Op: "c1", Node: "n1", Token: 1, From: 0, To: 2, Result: "ok"},
		}}}
	for _, snapshot := range []bool{true, false} {
		res, err := Check(context.Background(), run, Options{Checks: []string{CheckLinearizability}, NoFinalRead: snapshot})
		if err != nil {
			t.Fatal(err)
		}
		want := Valid
		if !snapshot {
			want = Invalid
		}
		if cr := res.Checks[0]; cr.Verdict != want {
			t.Errorf("snapshot %v: %s, want %s: %s", snapshot, cr.Verdict, want, cr.Message)
		}
	}
}

// A commit answered outside the fence's protocol (a mutant of the commit reply's parser
// read an Eval body's four elements as malformed) is a violation of audit-consistency,
// with or without the final store read; a commit whose reply was lost is not.
func TestMalformedStoreReply(t *testing.T) {
	for _, c := range []struct {
		err   string
		store bool
		want  Verdict
	}{
		{history.ErrMalformedReply + ": listener: commit n1-7: listener: outcome unknown: listener: unexpected reply from the fence's script: [ok 5 1 x]", true, Invalid},
		{history.ErrMalformedReply + ": listener: commit n1-7: listener: outcome unknown: listener: unexpected reply from the fence's script: [ok 5 1 x]", false, Invalid},
		{"i/o timeout", true, Valid},
	} {
		s := newSim(simConfig{Seed: 1})
		s.token = s.acquire(0)
		s.cursor, _ = s.load(0)
		s.some(3)
		i := s.commitInvoke(0, s.token, s.cursor)
		s.adv(s.lat())
		s.apply(i) // the script ran
		s.adv(s.lat())
		s.complete(i, history.Info, history.Event{Error: c.err})
		s.cursor, _ = s.load(0)
		run := s.end()
		if !c.store {
			run.Store = nil
		}
		cr := checkOnly(t, run, CheckAudit)
		wantCheck(t, cr, c.want, "answered outside the fence's protocol")
	}
}
