//go:build chaos

package soak

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
)

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shard
	}{{"", Shard{1, 1}}, {"1/1", Shard{1, 1}}, {"2/3", Shard{2, 3}}, {" 3/3 ", Shard{3, 3}}} {
		got, err := ParseShard(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"3/2", "0/2", "1/0", "-1/2", "garbage", "1/", "/2", "1/2/3", "a/b", "1-2"} {
		if _, err := ParseShard(bad); !errors.Is(err, ErrBadShard) {
			t.Errorf("ParseShard(%q): %v, want ErrBadShard", bad, err)
		}
	}
}

// N shards are disjoint and cover every run, whatever N and the run count.
func TestShardsPartitionRuns(t *testing.T) {
	for runs := 0; runs <= 23; runs++ {
		for n := 1; n <= 6; n++ {
			var all []int
			for i := 1; i <= n; i++ {
				idx := Shard{i, n}.Indices(runs)
				if !slices.IsSorted(idx) {
					t.Fatalf("shard %d/%d of %d: %v not sorted", i, n, runs, idx)
				}
				all = append(all, idx...)
			}
			slices.Sort(all)
			for j := range runs {
				if j >= len(all) || all[j] != j {
					t.Fatalf("%d shards of %d runs give %v: not each run once", n, runs, all)
				}
			}
			if len(all) != runs {
				t.Fatalf("%d shards of %d runs give %d indices", n, runs, len(all))
			}
		}
	}
	if got := (Shard{2, 2}).Indices(5); !slices.Equal(got, []int{1, 3}) {
		t.Errorf("shard 2/2 of 5: %v", got)
	}
	if SeedOf(42, 3) != 45 {
		t.Errorf("SeedOf(42, 3) = %d", SeedOf(42, 3))
	}
}

func failover(kind string, injected, windows int, p99, maxd time.Duration) checker.FailoverStats {
	return checker.FailoverStats{Fault: kind, Injected: injected, Windows: windows,
		ToNewToken: checker.Distribution{Count: windows, Min: p99 / 2, P50: p99 / 2, P90: p99, P99: p99, Max: maxd}}
}

// A soak directory's slots are read back with their numbers; totals and the worst
// window per fault kind are summed over the runs.
func TestLoadAndSummarize(t *testing.T) {
	out := t.TempDir()
	WriteTestSlot(t, out, 0, 3, 10, TestRun{Cursor: 100, LeaderChanges: 4, RedisPeakMemory: 2e6,
		Failover: []checker.FailoverStats{failover("kill", 3, 2, 1500*time.Millisecond, 1900*time.Millisecond)}}, true)
	WriteTestSlot(t, out, 1, 3, 10, TestRun{Cursor: 50, LeaderChanges: 1, RedisPeakMemory: 3e6,
		Failover: []checker.FailoverStats{failover("kill", 1, 1, 1700*time.Millisecond, 1700*time.Millisecond),
			failover("pause", 2, 2, time.Second, 2100*time.Millisecond)}}, true)
	// Lost 2 (3 and 4), duplicated 1 (2 again): the checker would call it invalid.
	WriteTestSlot(t, out, 2, 3, 10, TestRun{Verdict: checker.Invalid, Cursor: 5, Sink: []int64{1, 2, 2, 5}}, true)
	runs, err := LoadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 3 || runs[0].Seed != 10 || runs[2].Seed != 12 {
		t.Fatalf("LoadDir: %+v", runs)
	}
	s := Summarize(runs, []int{0, 1, 2})
	if s.Verdict != checker.Invalid || s.Valid != 2 || s.Invalid != 1 || s.Unknown != 0 {
		t.Errorf("verdict %s, %d/%d/%d; want invalid, 2/1/0", s.Verdict, s.Valid, s.Invalid, s.Unknown)
	}
	if s.Events != 155 || s.Lost != 2 || s.Duplicated != 1 || s.LeaderChanges != 5 {
		t.Errorf("events %d lost %d dup %d changes %d; want 155, 2, 1, 5", s.Events, s.Lost, s.Duplicated, s.LeaderChanges)
	}
	if s.RedisPeakMemory != 3e6 || s.RedisPeakMemorySeed != 11 || s.RunnerPeakRSS != 42e6 || s.RunnerPeakSeed != 12 {
		t.Errorf("peaks: redis %d (seed %d), runner %d (seed %d)", s.RedisPeakMemory, s.RedisPeakMemorySeed, s.RunnerPeakRSS, s.RunnerPeakSeed)
	}
	want := []Worst{
		{Fault: "kill", Injected: 4, Windows: 3, WorstP99: 1700 * time.Millisecond, Max: 1900 * time.Millisecond, MaxSeed: 10},
		{Fault: "pause", Injected: 2, Windows: 2, WorstP99: time.Second, Max: 2100 * time.Millisecond, MaxSeed: 11},
	}
	if !slices.Equal(s.Failover, want) {
		t.Errorf("failover %+v\nwant %+v", s.Failover, want)
	}
	var md strings.Builder
	s.Markdown(&md)
	for _, w := range []string{"# fenceline soak: INVALID", "| kill ", "2 lost, 1 duplicated", "1.9s"} {
		if !strings.Contains(md.String(), w) {
			t.Errorf("soak.md lacks %q:\n%s", w, md.String())
		}
	}
}

// The exit-code rule: invalid wins over everything, unknown (or a missing run) over
// valid; valid only when every expected run is there and valid.
// A run that began at a boundary start counts its events and its lost and duplicated
// ones from its start cursor, as results.json does: it ingested 40 events, not 2^53,
// and lost none. (soak once hid results.json's 2,147,483,647 lost events of such a run
// by zeroing them whenever exactly-once passed.)
func TestBoundaryStartCounts(t *testing.T) {
	out := t.TempDir()
	const start = int64(1)<<53 - 10
	WriteTestSlot(t, out, 0, 2, 1, TestRun{StartCursor: start, Cursor: start + 40}, true)
	WriteTestSlot(t, out, 1, 2, 1, TestRun{Verdict: checker.Invalid, StartCursor: start, Cursor: start + 4,
		Sink: []int64{start + 1, start + 1, start + 4}}, true)
	runs, err := LoadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if r := runs[0]; r.Events != 40 || r.Lost != 0 || r.Duplicated != 0 {
		t.Errorf("valid run from %d: events %d lost %d duplicated %d; want 40, 0, 0", start, r.Events, r.Lost, r.Duplicated)
	}
	if r := runs[1]; r.Events != 4 || r.Lost != 2 || r.Duplicated != 1 {
		t.Errorf("invalid run from %d: events %d lost %d duplicated %d; want 4, 2, 1", start, r.Events, r.Lost, r.Duplicated)
	}
}

func TestVerdictRule(t *testing.T) {
	rec := func(i int, v checker.Verdict) Record {
		r := unknownRun(i, int64(i+1))
		r.Verdict = v
		return r
	}
	V, I, U := checker.Valid, checker.Invalid, checker.Unknown
	for _, tc := range []struct {
		name     string
		runs     []Record
		expected []int
		want     checker.Verdict
	}{
		{"all valid", []Record{rec(0, V), rec(1, V)}, []int{0, 1}, V},
		{"one unknown", []Record{rec(0, V), rec(1, U)}, []int{0, 1}, U},
		{"one invalid", []Record{rec(0, V), rec(1, I)}, []int{0, 1}, I},
		{"invalid beats unknown", []Record{rec(0, U), rec(1, I)}, []int{0, 1}, I},
		{"invalid beats missing", []Record{rec(1, I)}, []int{0, 1}, I},
		{"missing run", []Record{rec(0, V)}, []int{0, 1}, U},
		{"nothing", nil, nil, U},
		{"interrupted run not counted", []Record{rec(0, V), func() Record { r := rec(1, V); r.Interrupted = true; return r }()}, []int{0, 1}, U},
		{"strange verdict", []Record{rec(0, "maybe")}, []int{0}, U},
	} {
		if got := Summarize(tc.runs, tc.expected).Verdict; got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// Shards' directories and summaries merge into one soak; inputs of different soaks
// do not.
func TestMerge(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	for _, i := range (Shard{1, 2}).Indices(4) {
		WriteTestSlot(t, a, i, 4, 7, TestRun{Cursor: 10}, true)
	}
	for _, i := range (Shard{2, 2}).Indices(4) {
		WriteTestSlot(t, b, i, 4, 7, TestRun{Cursor: 20}, true)
	}
	ra, err := LoadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := LoadDir(b)
	if err != nil {
		t.Fatal(err)
	}
	// Shard 1 alone is missing shard 2's runs.
	if s := Summarize(ra, ExpectedOf(ra)); s.Verdict != checker.Unknown || !slices.Equal(s.Missing, []int{1, 3}) {
		t.Errorf("shard 1 alone: %s, missing %v; want unknown, [1 3]", s.Verdict, s.Missing)
	}
	m, err := Merge(ra, rb, ra) // the same run twice is kept once
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(m, ExpectedOf(m))
	if s.Verdict != checker.Valid || len(s.Runs) != 4 || s.Events != 60 || len(s.Missing) != 0 {
		t.Errorf("merged: %s, %d runs, %d events, missing %v; want valid, 4, 60, none", s.Verdict, len(s.Runs), s.Events, s.Missing)
	}
	for i, r := range s.Runs {
		if r.Index != i || r.Seed != int64(7+i) {
			t.Errorf("merged run %d: index %d seed %d", i, r.Index, r.Seed)
		}
	}

	// A shard's summary file stands for its directory (a CI job may keep only that).
	sa := Summarize(ra, Shard{1, 2}.Indices(4))
	sumDir := filepath.Join(base, "summary-a")
	os.MkdirAll(sumDir, 0o755)
	if err := sa.WriteFiles(sumDir, "soak-shard-1-of-2"); err != nil {
		t.Fatal(err)
	}
	rs, err := LoadDir(sumDir)
	if err != nil {
		t.Fatal(err)
	}
	if m2, err := Merge(rs, rb); err != nil || Summarize(m2, ExpectedOf(m2)).Verdict != checker.Valid {
		t.Errorf("summary + directory: %v", err)
	}

	// Another soak (another base seed) does not merge.
	c := filepath.Join(base, "c")
	WriteTestSlot(t, c, 1, 4, 100, TestRun{Cursor: 1}, true)
	rc, err := LoadDir(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(ra, rb, rc); err == nil {
		t.Error("merging runs of two soaks: no error")
	}
	// The same index with another seed does not either.
	dup := slices.Clone(rb)
	dup[0].Seed = 999
	if _, err := Merge(rb, dup); err == nil || !strings.Contains(err.Error(), "found twice") {
		t.Errorf("same run, two seeds: %v", err)
	}

	// A directory with nothing in it is bad input.
	if _, err := LoadDir(t.TempDir()); !errors.Is(err, ErrNoRuns) {
		t.Errorf("empty directory: %v, want ErrNoRuns", err)
	}
	// A single run directory is one run.
	one := filepath.Join(base, "one")
	WriteTestRun(t, one, 5, TestRun{Cursor: 3})
	if r, err := LoadDir(one); err != nil || len(r) != 1 || r[0].Seed != 5 || r[0].Verdict != checker.Valid {
		t.Errorf("one run directory: %+v, %v", r, err)
	}
}

// Resume: finished slots (with a marker, or with a finished results.json and no
// marker) are not run again; an unfinished slot is moved aside and run afresh. The
// binary is not a program, so any run that is started fails to start and says so.
func TestResume(t *testing.T) {
	out := t.TempDir()
	WriteTestSlot(t, out, 0, 4, 1, TestRun{Cursor: 10}, true)
	WriteTestSlot(t, out, 1, 4, 1, TestRun{Cursor: 10}, false) // soak killed after the run
	// Slot 2: the soak was interrupted during the run.
	slot2 := WriteTestSlot(t, out, 2, 4, 1, TestRun{Cursor: 3, Interrupted: "interrupted"}, false)
	r := unknownRun(2, 3)
	r.Interrupted = true
	if err := writeMarker(slot2, r); err != nil {
		t.Fatal(err)
	}
	// Slot 3: the soak was killed before the run wrote anything.
	os.MkdirAll(filepath.Join(out, slotName(3)), 0o755)
	os.WriteFile(filepath.Join(out, slotName(3), LogFile), []byte("started\n"), 0o644)

	notAProgram := filepath.Join(t.TempDir(), "fenceline")
	if err := os.WriteFile(notAProgram, []byte("not a program\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Binary: notAProgram, Out: out, Runs: 4, Seed0: 1, Duration: time.Second}
	s, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.Valid != 2 || s.Unknown != 2 || s.Verdict != checker.Unknown {
		t.Errorf("summary %d valid %d unknown (%s); want 2 valid (resumed) and 2 unknown (could not start)", s.Valid, s.Unknown, s.Verdict)
	}
	for _, i := range []int{2, 3} {
		if _, err := os.Stat(filepath.Join(out, slotName(i)+".incomplete-1")); err != nil {
			t.Errorf("slot %d not moved aside: %v", i, err)
		}
		m, ok, err := readMarker(filepath.Join(out, slotName(i)))
		if !ok || err != nil || !strings.Contains(m.Reason, "could not start") {
			t.Errorf("slot %d after the rerun: %+v, %v, %v", i, m, ok, err)
		}
	}
	for _, i := range []int{0, 1} {
		if _, err := os.Stat(filepath.Join(out, slotName(i)+".incomplete-1")); err == nil {
			t.Errorf("finished slot %d moved aside", i)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "soak.md")); err != nil {
		t.Error(err)
	}
	// The runs started executed a copy of the binary, named by its hash.
	if len(s.Binaries) != 1 || len(s.Binaries[0]) != 12 {
		t.Errorf("binaries %v; want one sha256 prefix", s.Binaries)
	}
	if _, err := Run(context.Background(), Config{Binary: filepath.Join(t.TempDir(), "nope"), Out: t.TempDir()}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("a binary that does not exist: %v, want ErrBadConfig", err)
	}
	// A run that is unknown is not retried: a second soak starts nothing.
	before, _ := os.ReadDir(out)
	s2, err := Run(context.Background(), cfg)
	if err != nil || s2.Unknown != 2 || s2.Valid != 2 {
		t.Fatalf("second soak: %+v, %v", s2, err)
	}
	after, _ := os.ReadDir(out)
	if len(before) != len(after) {
		t.Errorf("second soak changed the directory: %d entries, then %d", len(before), len(after))
	}
	// Moved-aside slots are not read.
	runs, err := LoadDir(out)
	if err != nil || len(runs) != 4 {
		t.Errorf("LoadDir after resume: %d runs, %v", len(runs), err)
	}
	// Another soak's directory is refused, not mixed.
	other := cfg
	other.Seed0 = 50
	if _, err := Run(context.Background(), other); !errors.Is(err, ErrOtherSoak) {
		t.Errorf("a soak with another base seed in the same directory: %v, want ErrOtherSoak", err)
	}
	other = cfg
	other.Duration = 2 * time.Second // slots 2 and 3 ran with 1s
	if _, err := Run(context.Background(), other); !errors.Is(err, ErrOtherSoak) {
		t.Errorf("a soak with another duration in the same directory: %v, want ErrOtherSoak", err)
	}
}

// A directory holding another soak's runs is refused before anything runs.
func TestOtherSoakRefusedBeforeRunning(t *testing.T) {
	out := t.TempDir()
	WriteTestSlot(t, out, 1, 2, 9, TestRun{Cursor: 1}, true) // base seed 9: run 1 has seed 10
	notAProgram := filepath.Join(t.TempDir(), "fenceline")
	os.WriteFile(notAProgram, []byte("x"), 0o755)
	_, err := Run(context.Background(), Config{Binary: notAProgram, Out: out, Runs: 2, Seed0: 1, Duration: time.Second})
	if !errors.Is(err, ErrOtherSoak) {
		t.Fatalf("Run: %v, want ErrOtherSoak", err)
	}
	if _, err := os.Stat(filepath.Join(out, slotName(0))); err == nil {
		t.Error("run 0 was started before the other soak's run 1 was found")
	}
}

// A shard writes its own summary files, so that shards may share a directory.
func TestShardSummaryName(t *testing.T) {
	if n := (&Config{Shard: Shard{2, 3}}).SummaryName(); n != "soak-shard-2-of-3" {
		t.Error(n)
	}
	if n := (&Config{}).SummaryName(); n != "soak" {
		t.Error(n)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{Out: "x"}, {Binary: "x"}, {Binary: "x", Out: "x", Runs: -1}, {Binary: "x", Out: "x", Shard: Shard{3, 2}},
		{Binary: "x", Out: "x", Seed0: -4}, {Binary: "x", Out: "x", Duration: -time.Second},
	} {
		if _, err := Run(context.Background(), c); err == nil {
			t.Errorf("Run(%+v): no error", c)
		}
	}
}

// The soak's junit.xml has a case per run: the invalid run fails, and a planned run that
// has not finished is skipped, never a pass.
func TestSoakJUnit(t *testing.T) {
	out := t.TempDir()
	WriteTestSlot(t, out, 0, 3, 1, TestRun{Cursor: 10}, true)
	WriteTestSlot(t, out, 1, 3, 1, TestRun{Verdict: checker.Invalid, Cursor: 5, Sink: []int64{1, 2, 2, 5}}, true)
	runs, err := LoadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Summarize(runs, []int{0, 1, 2}).JUnit(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`tests="3" failures="1" errors="0" skipped="1"`, `name="run-0 (seed 1)" classname="fenceline.soak"`, `name="run-2" classname="fenceline.soak"`, "<skipped>not finished</skipped>"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("junit.xml lacks %q:\n%s", want, b.String())
		}
	}
}
