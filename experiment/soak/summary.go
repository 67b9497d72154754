//go:build chaos

package soak

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/matrix"
	"github.com/fenceline/fenceline/reports"
)

// SummarySchema names the format of soak.json.
const SummarySchema = "fenceline/soak/v1"

// SummaryName is the base name of a soak's summary files: soak.md and soak.json (a
// shard writes soak-shard-I-of-N.md and .json).
const SummaryName = "soak"

// Summary is a soak's result: the totals over its finished runs and the runs
// themselves. It is the content of soak.json.
type Summary struct {
	Schema string `json:"schema"`
	// Verdict is Invalid if any run is invalid, else Unknown if any run is unknown or
	// missing (or there is none), else Valid.
	Verdict checker.Verdict `json:"verdict"`
	// Expected counts the runs the summary should hold; Missing lists the indices of
	// those that did not finish.
	Expected int   `json:"expected"`
	Missing  []int `json:"missing"`
	// Tally counts the finished runs by verdict.
	matrix.Tally
	// Events sums the runs' final cursors and SinkEvents their sinks' lengths; Lost
	// and Duplicated the events lost from or repeated in the sinks. CountsUnknown is
	// the number of runs whose counts are not known (not summed).
	Events        int64 `json:"events"`
	SinkEvents    int64 `json:"sink_events"`
	Lost          int64 `json:"lost"`
	Duplicated    int64 `json:"duplicated"`
	CountsUnknown int   `json:"counts_unknown"`
	// LeaderChanges, FencingRejections and Faults are sums over the runs.
	LeaderChanges     int `json:"leader_changes"`
	FencingRejections int `json:"fencing_rejections"`
	Faults            int `json:"faults"`
	// RunnerPeakRSS and RedisPeakMemory are the largest over the runs, in bytes, with
	// the seed of the run that had it; 0 when no run measured it.
	RunnerPeakRSS       int64 `json:"runner_peak_rss_bytes"`
	RunnerPeakSeed      int64 `json:"runner_peak_seed"`
	RedisPeakMemory     int64 `json:"redis_peak_memory_bytes"`
	RedisPeakMemorySeed int64 `json:"redis_peak_memory_seed"`
	// Elapsed sums the runs' lengths.
	Elapsed time.Duration `json:"elapsed_ns"`
	// Binaries lists the fenceline binaries the runs executed (SHA-256 prefixes),
	// sorted: more than one means the runs did not all test the same build.
	Binaries []string `json:"binaries"`
	// Failover is the worst failover window per fault kind, sorted by kind.
	Failover []Worst `json:"failover"`
	// Profiles sums a campaign's runs per profile, in the order profiles first appear
	// among the runs; empty for a plain soak.
	Profiles []ProfileSum `json:"profiles"`
	Runs     []Record     `json:"runs"`
}

// ProfileSum is a campaign profile's runs.
type ProfileSum struct {
	Name string `json:"name"`
	matrix.Tally
	// FailedChecks counts, per check, the profile's runs it judged invalid.
	FailedChecks map[string]int `json:"failed_checks"`
	Faults       int            `json:"faults"`
	// Events, Lost and Duplicated are summed over the runs whose counts are known.
	Events     int64         `json:"events"`
	Lost       int64         `json:"lost"`
	Duplicated int64         `json:"duplicated"`
	Elapsed    time.Duration `json:"elapsed_ns"`
}

// Worst is one fault kind's failover windows over every run of a soak. Percentiles
// cannot be pooled from per-run percentiles, so it keeps the worst run's p99 and the
// longest window.
type Worst struct {
	Fault    string `json:"fault"`
	Injected int    `json:"injected"`
	Windows  int    `json:"windows"`
	// WorstP99 is the highest per-run p99 of the window to the new token; Max the
	// longest window, in run MaxSeed.
	WorstP99 time.Duration `json:"worst_p99_ns"`
	Max      time.Duration `json:"max_ns"`
	MaxSeed  int64         `json:"max_seed"`
}

// Summarize sums runs up. expected lists the run indices that should be there (the
// soak's, or a shard's); an index with no finished run among runs is missing and
// makes the soak unknown. Interrupted runs are not summed up.
func Summarize(runs []Record, expected []int) *Summary {
	s := &Summary{Schema: SummarySchema, Expected: len(expected), Missing: []int{}, Failover: []Worst{}, Runs: []Record{},
		Binaries: []string{}, Profiles: []ProfileSum{}}
	have := map[int]bool{}
	worst := map[string]*Worst{}
	profiles := map[string]int{} // index in s.Profiles
	var verdicts []checker.Verdict
	for _, r := range runs {
		if r.Interrupted {
			continue
		}
		have[r.Index] = true
		s.Runs = append(s.Runs, r)
		verdicts = append(verdicts, r.Verdict)
		s.Add(r.Verdict)
		if r.Profile != "" {
			s.addToProfile(profiles, r)
		}
		if r.Events < 0 || r.Lost < 0 || r.Duplicated < 0 {
			s.CountsUnknown++
		} else {
			s.Events += r.Events
			s.SinkEvents += max(r.SinkEvents, 0)
			s.Lost += r.Lost
			s.Duplicated += r.Duplicated
		}
		s.LeaderChanges += max(r.LeaderChanges, 0)
		s.FencingRejections += max(r.FencingRejections, 0)
		s.Faults += max(r.Faults, 0)
		s.Elapsed += r.Elapsed
		if r.Binary != "" && !slices.Contains(s.Binaries, r.Binary) {
			s.Binaries = append(s.Binaries, r.Binary)
		}
		if r.RunnerPeakRSS > s.RunnerPeakRSS {
			s.RunnerPeakRSS, s.RunnerPeakSeed = r.RunnerPeakRSS, r.Seed
		}
		if r.RedisPeakMemory > s.RedisPeakMemory {
			s.RedisPeakMemory, s.RedisPeakMemorySeed = r.RedisPeakMemory, r.Seed
		}
		for _, f := range r.Failover {
			w := worst[f.Fault]
			if w == nil {
				w = &Worst{Fault: f.Fault}
				worst[f.Fault] = w
			}
			w.Injected += f.Injected
			w.Windows += f.Windows
			if f.ToNewToken.Count > 0 {
				w.WorstP99 = max(w.WorstP99, f.ToNewToken.P99)
				if f.ToNewToken.Max > w.Max {
					w.Max, w.MaxSeed = f.ToNewToken.Max, r.Seed
				}
			}
		}
	}
	slices.Sort(s.Binaries)
	for _, i := range expected {
		if !have[i] {
			s.Missing = append(s.Missing, i)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(worst)) {
		s.Failover = append(s.Failover, *worst[k])
	}
	if len(s.Missing) > 0 || len(s.Runs) == 0 {
		verdicts = append(verdicts, checker.Unknown)
	}
	s.Verdict = checker.Combine(verdicts...)
	return s
}

func (s *Summary) addToProfile(index map[string]int, r Record) {
	i, ok := index[r.Profile]
	if !ok {
		i = len(s.Profiles)
		index[r.Profile] = i
		s.Profiles = append(s.Profiles, ProfileSum{Name: r.Profile, FailedChecks: map[string]int{}})
	}
	p := &s.Profiles[i]
	p.Add(r.Verdict)
	for _, c := range r.FailedChecks {
		p.FailedChecks[c]++
	}
	p.Faults += max(r.Faults, 0)
	if r.Events >= 0 && r.Lost >= 0 && r.Duplicated >= 0 {
		p.Events += r.Events
		p.Lost += r.Lost
		p.Duplicated += r.Duplicated
	}
	p.Elapsed += r.Elapsed
}

// Merge joins the runs of several soak directories or summaries (the shards of one
// soak) into one list in index order. A run found twice with the same seed is kept
// once; the same index with another seed, or runs of soaks with different plans
// (run count or base seed), are an error: the inputs are not shards of one soak.
// Runs without an index (plain run directories) are kept as they are.
func Merge(sets ...[]Record) ([]Record, error) {
	byIndex := map[int]Record{}
	var loose []Record
	var plan *Record
	for _, set := range sets {
		for _, r := range set {
			if r.Index < 0 {
				loose = append(loose, r)
				continue
			}
			if r.Planned > 0 {
				if plan == nil {
					p := r
					plan = &p
				} else if plan.Planned != r.Planned || plan.Seed0 != r.Seed0 {
					return nil, fmt.Errorf("soak: runs of different soaks: %d runs from base seed %d (seed %d) and %d runs from base seed %d (seed %d)",
						plan.Planned, plan.Seed0, plan.Seed, r.Planned, r.Seed0, r.Seed)
				}
			}
			if old, ok := byIndex[r.Index]; ok {
				if old.Seed != r.Seed {
					return nil, fmt.Errorf("soak: run %d found twice, with seeds %d and %d: the inputs are not shards of one soak", r.Index, old.Seed, r.Seed)
				}
				continue
			}
			byIndex[r.Index] = r
		}
	}
	out := make([]Record, 0, len(byIndex)+len(loose))
	for _, r := range byIndex {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return append(out, loose...), nil
}

// ExpectedOf returns the indices a merged soak should hold: 0..Planned-1 of its
// runs' plan, or the indices present when no run knows the plan.
func ExpectedOf(runs []Record) []int {
	planned := 0
	for _, r := range runs {
		planned = max(planned, r.Planned)
	}
	var out []int
	if planned > 0 {
		for i := range planned {
			out = append(out, i)
		}
		return out
	}
	for _, r := range runs {
		if r.Index >= 0 {
			out = append(out, r.Index)
		}
	}
	return out
}

// WriteFiles writes name.md, name.json and name.junit.xml of s into dir.
func (s *Summary) WriteFiles(dir, name string) error {
	var md, ju bytes.Buffer
	s.Markdown(&md)
	js, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	if err := s.JUnit(&ju); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, name+".md"), md.Bytes()); err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(dir, name+".junit.xml"), ju.Bytes()); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, name+".json"), append(js, '\n'))
}

// JUnit writes the soak as one test suite with a case per run ("run-NNN (seed S)"):
// an invalid run is a failure, an unknown one an error, and a planned run that has not
// finished is skipped, so that a partial soak never looks green.
func (s *Summary) JUnit(w io.Writer) error {
	var cases []reports.MatrixCase
	for _, r := range s.Runs {
		class := "fenceline.soak"
		if r.Profile != "" {
			class += "." + r.Profile
		}
		c := reports.MatrixCase{Name: fmt.Sprintf("run-%s (seed %d)", idxText(r.Index), r.Seed), Class: class,
			Time: r.Elapsed, Out: string(r.Verdict) + "; " + r.Dir + "\n"}
		switch r.Verdict {
		case checker.Valid:
		case checker.Invalid:
			c.Failure = cmp.Or(r.Reason, "invalid")
		default:
			c.Error = cmp.Or(r.Reason, "unknown")
		}
		cases = append(cases, c)
	}
	for _, i := range s.Missing {
		cases = append(cases, reports.MatrixCase{Name: fmt.Sprintf("run-%d", i), Class: "fenceline.soak", Skipped: "not finished"})
	}
	return reports.MatrixJUnit(w, "fenceline soak", s.Elapsed, [][2]string{{"verdict", string(s.Verdict)}}, cases)
}

func writeAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// Headline sums the soak up in one line.
func (s *Summary) Headline() string {
	h := fmt.Sprintf("%s: %d runs valid, %d invalid, %d unknown", strings.ToUpper(string(s.Verdict)), s.Valid, s.Invalid, s.Unknown)
	if len(s.Missing) > 0 {
		h += fmt.Sprintf(", %d of %d not finished (%s)", len(s.Missing), s.Expected, indexList(s.Missing))
	}
	return h + "; " + s.lossText() + " events lost or duplicated."
}

func (s *Summary) lossText() string {
	t := strconv.FormatInt(s.Lost+s.Duplicated, 10)
	if s.CountsUnknown > 0 {
		t += fmt.Sprintf(" (counts unknown for %d runs)", s.CountsUnknown)
	}
	return t
}

func indexList(xs []int) string {
	var b []string
	for i, x := range xs {
		if i == 8 {
			b = append(b, fmt.Sprintf("… %d more", len(xs)-8))
			break
		}
		b = append(b, "run "+strconv.Itoa(x))
	}
	return strings.Join(b, ", ")
}

// Markdown writes soak.md: the headline, then the totals, the worst failover window
// per fault kind and the runs.
func (s *Summary) Markdown(w io.Writer) {
	fmt.Fprintf(w, "# fenceline soak: %s\n\n", strings.ToUpper(string(s.Verdict)))
	fmt.Fprintf(w, "**%s**\n\n", mdEscape(s.Headline()))
	for _, t := range s.tables() {
		fmt.Fprintf(w, "## %s\n\n", t.title)
		reports.RenderTable(w, t.header, t.right, t.rows, true)
		fmt.Fprintln(w)
	}
}

// Terminal writes the same tables as Markdown, boxed for a terminal.
func (s *Summary) Terminal(w io.Writer) {
	fmt.Fprintf(w, "soak %s\n\n", s.Headline())
	for _, t := range s.tables() {
		fmt.Fprintf(w, "%s\n", t.title)
		reports.RenderTable(w, t.header, t.right, t.rows, false)
		fmt.Fprintln(w)
	}
}

type table struct {
	title  string
	header []string
	right  []bool
	rows   [][]string
}

func (s *Summary) tables() []table {
	totals := table{title: "Totals", header: []string{"", "value"}, right: []bool{false, true}}
	add := func(k, v string) { totals.rows = append(totals.rows, []string{k, v}) }
	add("runs valid / invalid / unknown", fmt.Sprintf("%d / %d / %d", s.Valid, s.Invalid, s.Unknown))
	if s.Expected > 0 {
		add("runs finished / expected", fmt.Sprintf("%d / %d", len(s.Runs), s.Expected))
	}
	add("events ingested (final cursors)", group(s.Events))
	add("events lost or duplicated", fmt.Sprintf("%s lost, %s duplicated", group(s.Lost), group(s.Duplicated)))
	if s.CountsUnknown > 0 {
		add("runs whose event counts are unknown", strconv.Itoa(s.CountsUnknown))
	}
	add("faults injected", group(int64(s.Faults)))
	add("leader changes", group(int64(s.LeaderChanges)))
	add("stale writes rejected by the fence", group(int64(s.FencingRejections)))
	add("peak memory of the runner", bytesText(s.RunnerPeakRSS, s.RunnerPeakSeed))
	add("peak memory of Redis (used_memory_peak)", bytesText(s.RedisPeakMemory, s.RedisPeakMemorySeed))
	add("time in runs", s.Elapsed.Round(time.Second).String())
	switch len(s.Binaries) {
	case 0:
	case 1:
		add("fenceline binary (sha256)", s.Binaries[0])
	default:
		add("fenceline binaries (sha256): not one build", strings.Join(s.Binaries, ", "))
	}

	fo := table{title: "Failover windows, worst per fault kind",
		header: []string{"fault", "injected", "windows", "worst p99 of a run", "longest window", "seed"},
		right:  []bool{false, true, true, true, true, true}}
	for _, f := range s.Failover {
		row := []string{f.Fault, strconv.Itoa(f.Injected), strconv.Itoa(f.Windows), "—", "—", "—"}
		if f.Windows > 0 {
			row[3], row[4], row[5] = durText(f.WorstP99), durText(f.Max), strconv.FormatInt(f.MaxSeed, 10)
		}
		fo.rows = append(fo.rows, row)
	}

	prof := table{title: "Profiles",
		header: []string{"profile", "runs", "valid / invalid / unknown", "checks failed (runs)", "faults", "events", "lost / dup", "time in runs"},
		right:  []bool{false, true, false, false, true, true, true, true}}
	for _, p := range s.Profiles {
		prof.rows = append(prof.rows, []string{p.Name, strconv.Itoa(p.Valid + p.Invalid + p.Unknown),
			fmt.Sprintf("%d / %d / %d", p.Valid, p.Invalid, p.Unknown), checkCounts(p.FailedChecks), group(int64(p.Faults)),
			group(p.Events), group(p.Lost) + " / " + group(p.Duplicated), p.Elapsed.Round(time.Second).String()})
	}

	runs := table{title: "Runs",
		header: []string{"run", "seed", "verdict", "events", "lost", "dup", "leader changes", "faults", "runner peak", "Redis peak", "time", "directory"},
		right:  []bool{true, true, false, true, true, true, true, true, true, true, true, false}}
	if len(s.Profiles) > 0 {
		runs.header = slices.Insert(runs.header, 2, "profile")
		runs.right = slices.Insert(runs.right, 2, false)
	}
	for _, r := range s.Runs {
		v := string(r.Verdict)
		if r.Reason != "" && r.Verdict != checker.Valid {
			v += ": " + r.Reason
		}
		row := []string{idxText(r.Index), strconv.FormatInt(r.Seed, 10), v,
			count(r.Events), count(r.Lost), count(r.Duplicated), count(int64(r.LeaderChanges)), count(int64(r.Faults)),
			bytesText(r.RunnerPeakRSS, 0), bytesText(r.RedisPeakMemory, 0), r.Elapsed.Round(time.Second).String(), r.Dir}
		if len(s.Profiles) > 0 {
			row = slices.Insert(row, 2, r.Profile)
		}
		runs.rows = append(runs.rows, row)
	}
	out := []table{totals}
	if len(prof.rows) > 0 {
		out = append(out, prof)
	}
	if len(fo.rows) > 0 {
		out = append(out, fo)
	}
	return append(out, runs)
}

// checkCounts writes "name n, ..." sorted by name, or "—".
func checkCounts(m map[string]int) string {
	if len(m) == 0 {
		return "—"
	}
	var b []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = append(b, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(b, ", ")
}

// mdEscape escapes the characters Markdown would read as emphasis.
func mdEscape(s string) string {
	return strings.NewReplacer("*", "\\*", "_", "\\_").Replace(s)
}

func idxText(i int) string {
	if i < 0 {
		return "—"
	}
	return strconv.Itoa(i)
}

func count(n int64) string {
	if n < 0 {
		return "—"
	}
	return group(n)
}

// group writes n with thousands separators: 120,106.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func bytesText(n, seed int64) string {
	if n <= 0 {
		return "—"
	}
	t := fmt.Sprintf("%.1f MB", float64(n)/1e6)
	if seed != 0 {
		t += fmt.Sprintf(" (seed %d)", seed)
	}
	return t
}

func durText(d time.Duration) string {
	if d >= time.Millisecond {
		return d.Round(time.Millisecond).String()
	}
	return d.String()
}
