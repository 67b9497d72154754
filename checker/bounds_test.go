package checker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/history"
)

// checkWithin runs Check and fails the test if it does not return within d (the
// goroutine is left behind: the test has failed anyway).
func checkWithin(t *testing.T, d time.Duration, run *history.Run, opts Options) (*Result, error) {
	t.Helper()
	type out struct {
		res *Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		res, err := Check(context.Background(), run, opts)
		ch <- out{res, err}
	}()
	select {
	case o := <-ch:
		return o.res, o.err
	case <-time.After(d):
		t.Fatalf("Check did not return within %v", d)
		return nil, nil
	}
}

// boundedBalances is testBalances that fails the test when asked for more events than
// the sink holds: its cost is O(upTo), so the checker must not call it with a cursor
// the input does not bound.
func boundedBalances(t *testing.T, limit int64) func(int64) map[string]int64 {
	return func(upTo int64) map[string]int64 {
		if upTo > limit {
			t.Errorf("ExpectedBalances(%d) called: a loop to the cursor, beyond the %d events the sink holds", upTo, limit)
			return map[string]int64{}
		}
		return testBalances(upTo)
	}
}

// TestExactlyOnceCorruptCursor: a store.json whose cursor is far beyond its sink (a
// corrupt value, a Horizon paging token) is judged invalid in time and memory bounded
// by the sink, not by the cursor's value.
func TestExactlyOnceCorruptCursor(t *testing.T) {
	for _, cursor := range []int64{100_000_000, 5_188_320_493_577, 1_000_000_000_000_000, math.MaxInt64} {
		t.Run(fmt.Sprint(cursor), func(t *testing.T) {
			run := cleanRun(1)
			sink := len(run.Store.Sink)
			real := run.Store.Cursor
			run.Store.Cursor = cursor
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, err := checkWithin(t, 30*time.Second, run, Options{ExpectedBalances: boundedBalances(t, int64(sink)), NoFinalRead: true})
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
				t.Errorf("Check allocated %d MB for a sink of %d entries", alloc>>20, sink)
			}
			c := res.Check(CheckExactlyOnce)
			wantLost := fmt.Sprintf("%d lost", uint64(cursor-real))
			if c.Verdict != Invalid || !strings.Contains(c.Message, wantLost) || !strings.Contains(c.Message, "balances not checked") {
				t.Errorf("exactly-once %s: %s (want %q)", c.Verdict, c.Message, wantLost)
			}
			wantRange := fmt.Sprintf("events %d..%d lost (%d events)", real+1, cursor, uint64(cursor-real))
			if len(c.Offending) == 0 || !strings.Contains(c.Offending[0], wantRange) {
				t.Errorf("offending %q, want %q", c.Offending, wantRange)
			}
		})
	}
}

// TestExactlyOnceFindings: lost events are reported as ranges, duplicates once each,
// events beyond the cursor each; the counts are exact.
func TestExactlyOnceFindings(t *testing.T) {
	run := cleanRun(1)
	st := run.Store
	n := len(st.Sink)
	// Lose 3 and 10..12, duplicate 5 (three times) and 7, add 10^12 beyond the cursor.
	var sink []int64
	for _, id := range st.Sink {
		switch {
		case id == 3 || (id >= 10 && id <= 12):
		case id == 5:
			sink = append(sink, id, id, id)
		case id == 7:
			sink = append(sink, id, id)
		default:
			sink = append(sink, id)
		}
	}
	st.Sink = append(sink, 1_000_000_000_000)
	res, err := Check(context.Background(), run, Options{Checks: []string{CheckExactlyOnce}})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Check(CheckExactlyOnce)
	want := fmt.Sprintf("the sink (%d entries) is not events 1..%d once each in order: 4 lost, 2 duplicated, 1 beyond the cursor", n-4+3+1, st.Cursor)
	if c.Verdict != Invalid || c.Message != want {
		t.Errorf("got %s %q\nwant %q", c.Verdict, c.Message, want)
	}
	all := strings.Join(c.Offending, "\n")
	for _, w := range []string{"event 3 lost", "events 10..12 lost (3 events)", "event 5 applied twice", "event 7 applied twice", "event 1000000000000 at sink position"} {
		if !strings.Contains(all, w) {
			t.Errorf("offending does not mention %q:\n%s", w, all)
		}
	}
}

// TestTimeOverflow: a time of 2^63-1 is bad input, not an overflow of the final read's
// time (which once turned an invalid run valid).
func TestTimeOverflow(t *testing.T) {
	for _, tm := range []int64{math.MaxInt64, math.MaxInt64 - 1, history.MaxTime + 1} {
		run := cleanRun(3)
		// A run that lost writes: the final read says the cursor is back at 1.
		run.Store.Cursor = 1
		run.Events = history.Pack(append(run.Events.All(), history.Event{ID: "n1/x/1", Type: history.Invoke, Kind: history.KindLoad, Node: "n1", Time: tm}))
		_, err := Check(context.Background(), run, Options{})
		if !errors.Is(err, ErrBadHistory) || !strings.Contains(err.Error(), fmt.Sprint(tm)) {
			t.Errorf("time %d: got %v, want ErrBadHistory naming the time", tm, err)
		}
	}
	run := cleanRun(3)
	run.Info.HealTime = math.MaxInt64
	if _, err := Check(context.Background(), run, Options{}); !errors.Is(err, ErrBadHistory) {
		t.Errorf("heal time 2^63-1: got %v, want ErrBadHistory", err)
	}
}

// TestManyNodes: node indices do not wrap. With 70,000 node names, the 65,537th shares
// no index with the first: a commit under a token only the first acquired is caught.
func TestManyNodes(t *testing.T) {
	const base = int64(1_700_000_000_000_000_000)
	nodes := make([]string, 70_000)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("x%d", i)
	}
	nodes[0], nodes[65_536] = "owner", "thief"
	evs := []history.Event{
		{ID: "a", Type: history.Invoke, Kind: history.KindAcquire, Node: "owner", Time: base + 1},
		{ID: "a", Type: history.OK, Kind: history.KindAcquire, Node: "owner", Time: base + 2, Token: 5},
		{ID: "c", Type: history.Invoke, Kind: history.KindCommit, Node: "thief", Time: base + 3, Token: 5, From: 0, To: 1, Events: 1},
		{ID: "c", Type: history.OK, Kind: history.KindCommit, Node: "thief", Time: base + 4, Token: 5, From: 0, To: 1, Events: 1},
	}
	run := &history.Run{Info: history.RunInfo{Nodes: nodes, Start: base}, Events: history.Pack(evs)}
	res, err := checkWithin(t, 60*time.Second, run, Options{Checks: []string{CheckUniqueTokens}})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Check(CheckUniqueTokens)
	if c.Verdict != Invalid || len(c.Offending) == 0 || !strings.Contains(c.Offending[0], "thief commit c token=5") || !strings.Contains(c.Offending[0], "owner acquired it") {
		t.Errorf("unique-tokens %s: %s %q", c.Verdict, c.Message, c.Offending)
	}
}

// TestEmptyRunTimes: a run with no event does not print a time before 1970.
func TestEmptyRunTimes(t *testing.T) {
	run := &history.Run{Info: history.RunInfo{Start: 1_700_000_000_000_000_000}, Store: &history.Store{Cursor: 3}}
	res, err := Check(context.Background(), run, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res.Checks {
		for _, s := range append([]string{c.Message}, c.Offending...) {
			if strings.Contains(s, "t+-") {
				t.Errorf("%s: negative time in %q", c.Name, s)
			}
		}
	}
}

// TestSemanticErrorsNameFileLine: a completion without an invoke, an id invoked twice,
// and a completion of another kind name the file and line of the offending lines.
func TestSemanticErrorsNameFileLine(t *testing.T) {
	cases := []struct {
		name  string
		lines string
		want  []string
	}{
		{"completion without invoke", `{"id":"n1/a/1","type":"invoke","kind":"load","node":"n1","time":1700000000000000100}
{"id":"n1/a/1","type":"ok","kind":"load","node":"n1","time":1700000000000000200,"cursor":0}
{"id":"n1/a/2","type":"ok","kind":"load","node":"n1","time":1700000000000000300,"cursor":0}
`, []string{"completion without invoke", "n1.jsonl:3)"}},
		{"invoked twice", `{"id":"n1/a/1","type":"invoke","kind":"load","node":"n1","time":1700000000000000100}
{"id":"n1/a/1","type":"invoke","kind":"load","node":"n1","time":1700000000000000200}
`, []string{"invoked twice", "n1.jsonl:1, ", "n1.jsonl:2)"}},
		{"completed as another kind", `{"id":"n1/a/1","type":"invoke","kind":"load","node":"n1","time":1700000000000000100}
{"id":"n1/a/1","type":"ok","kind":"commit","node":"n1","time":1700000000000000200}
`, []string{"completed as", "n1.jsonl:2)"}},
	}
	for _, c := range cases {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, history.HistoryDir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := history.WriteJSON(filepath.Join(dir, history.RunInfoFile), history.RunInfo{Nodes: []string{"n1"}, Start: 1_700_000_000_000_000_000}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, history.HistoryDir, "n1.jsonl"), []byte(c.lines), 0o644); err != nil {
			t.Fatal(err)
		}
		run, err := history.LoadRun(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Check(context.Background(), run, Options{})
		if !errors.Is(err, ErrBadHistory) {
			t.Fatalf("%s: got %v, want ErrBadHistory", c.name, err)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not mention %q", c.name, err, w)
			}
		}
	}
}

// TestTornLineIsNotValid: a run whose history lost a torn last line loads, its result
// carries the warning, and its verdict is not Valid.
func TestTornLineIsNotValid(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, cleanRun(1), dir)
	f, err := os.OpenFile(filepath.Join(dir, history.HistoryDir, "n1.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"id":"n1/zz/1","type":"inv`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	run, err := history.LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(context.Background(), run, Options{ExpectedBalances: testBalances})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != Unknown || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "torn last line") {
		t.Errorf("verdict %s, warnings %q; want unknown with the torn line", res.Verdict, res.Warnings)
	}
}
