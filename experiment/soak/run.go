//go:build chaos

package soak

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/reports"
)

// Files of a soak.
const (
	// MarkerFile is written into a run's slot when its chaos command has exited.
	MarkerFile = "soak-run.json"
	// LogFile receives the chaos command's stdout and stderr, in the slot.
	LogFile = "chaos.log"
	// ResultsFile is the run's results.json (package reports), in the run directory.
	ResultsFile = "results.json"
)

// Record is one run of a soak: how it was made (from the soak) and what it measured (from
// its results.json and run.json). Counts are -1 when unknown.
type Record struct {
	// Index is the run's index in the soak (0-based); -1 for a run directory that was
	// not made by a soak.
	Index int   `json:"index"`
	Seed  int64 `json:"seed"`
	// Planned is the number of runs of the soak it belongs to, and Seed0 its base seed;
	// 0 when not known.
	Planned int   `json:"planned"`
	Seed0   int64 `json:"seed0"`
	// ChaosDuration is the chaos phase the run was given; 0 when not known.
	ChaosDuration time.Duration `json:"chaos_duration_ns,omitempty"`
	// Binary is the SHA-256 (first 12 hex digits) of the fenceline binary that ran;
	// "" when not known.
	Binary string `json:"binary_sha256,omitempty"`
	// Profile is the campaign profile the run belongs to; "" in a plain soak.
	Profile string `json:"profile,omitempty"`
	// Dir is the run directory, relative to the soak directory when it is inside it.
	Dir string `json:"dir"`
	// ExitCode is the chaos command's exit code; -1 if not known (killed by a signal,
	// or a run directory not made by a soak).
	ExitCode int `json:"exit_code"`
	// Verdict is the run's verdict: the checker's, made no better than the exit code
	// says (a failed command is never valid). Reason says why a run is unknown.
	Verdict checker.Verdict `json:"verdict"`
	Reason  string          `json:"reason,omitempty"`
	// Interrupted is set when the soak itself was interrupted during the run: such a
	// run is rerun on resume and not summed up.
	Interrupted bool          `json:"interrupted,omitempty"`
	Elapsed     time.Duration `json:"elapsed_ns"`
	// RunnerPeakRSS is the chaos command's peak resident set in bytes (its rusage);
	// RedisPeakMemory is Redis's used_memory_peak in bytes (run.json). 0: unknown.
	RunnerPeakRSS   int64 `json:"runner_peak_rss_bytes"`
	RedisPeakMemory int64 `json:"redis_peak_memory_bytes"`
	// Events counts the events the run ingested (the final cursor less the start
	// cursor); SinkEvents is the sink's length; Lost and Duplicated are the events
	// missing from or repeated in the sink, counted from the start cursor.
	Events            int64 `json:"events"`
	SinkEvents        int64 `json:"sink_events"`
	Lost              int64 `json:"lost"`
	Duplicated        int64 `json:"duplicated"`
	LeaderChanges     int   `json:"leader_changes"`
	FencingRejections int   `json:"fencing_rejections"`
	Faults            int   `json:"faults"`
	// Failover is the run's failover statistics per fault kind.
	Failover []reports.Failover `json:"failover"`
	// FailedChecks names the checks that judged the run invalid, in results.json's order.
	FailedChecks []string `json:"failed_checks,omitempty"`
}

// unknownRun is a run of which nothing was measured yet.
func unknownRun(index int, seed int64) Record {
	return Record{Index: index, Seed: seed, ExitCode: -1, Verdict: checker.Unknown, Events: -1, SinkEvents: -1,
		Lost: -1, Duplicated: -1, LeaderChanges: -1, FencingRejections: -1, Faults: -1, Failover: []reports.Failover{}}
}

// slotName is the directory of run index in a soak directory.
func slotName(index int) string { return fmt.Sprintf("run-%03d", index) }

var slotRE = regexp.MustCompile(`^run-(\d+)$`)

// fill reads results.json and run.json of the run directory dir into r. It leaves the
// counts unknown and sets Verdict unknown with a reason when results.json is missing or
// unreadable.
func (r *Record) fill(dir string) {
	r.Verdict = checker.Unknown
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		r.Reason = "no results.json: the run was not checked"
		return
	}
	var res reports.Results
	if err := json.Unmarshal(b, &res); err != nil {
		r.Reason = fmt.Sprintf("results.json unreadable: %v", err)
		return
	}
	if res.Schema != reports.Schema {
		r.Reason = fmt.Sprintf("results.json has schema %q, want %q", res.Schema, reports.Schema)
		return
	}
	r.Verdict = res.Verdict
	if r.Seed == 0 {
		r.Seed = res.Run.Seed
	}
	r.Elapsed = res.Run.ElapsedNS
	r.LeaderChanges, r.FencingRejections = res.LeaderChanges, res.FencingRejections
	r.Faults = int(res.Ops.Faults)
	r.Failover = res.Failover
	r.FailedChecks = nil
	for _, c := range res.Checks {
		if c.Verdict == checker.Invalid {
			r.FailedChecks = append(r.FailedChecks, c.Name)
		}
	}
	if r.Failover == nil {
		r.Failover = []reports.Failover{}
	}
	if st := res.Store; st != nil {
		// Counted from the run's start cursor, as results.json counts the sink: a
		// boundary start puts the cursor near 2^53 before the first event.
		r.Events, r.SinkEvents = st.Cursor-res.Run.StartCursor, int64(st.SinkEvents)
		r.Lost, r.Duplicated = int64(st.SinkLost), int64(st.SinkDuplicated)
	}
	switch {
	case res.Run.Interrupted != "":
		r.Verdict = checker.Combine(r.Verdict, checker.Unknown)
		r.Reason = "run interrupted: " + res.Run.Interrupted
	case r.Verdict != checker.Valid:
		r.Reason = res.Summary
	}
	if r.ExitCode > 0 && r.Verdict == checker.Valid {
		r.Verdict, r.Reason = checker.Unknown, fmt.Sprintf("the chaos command exited %d", r.ExitCode)
	}
	if ib, err := os.ReadFile(filepath.Join(dir, history.RunInfoFile)); err == nil {
		var info history.RunInfo
		if json.Unmarshal(ib, &info) == nil {
			r.RedisPeakMemory = info.RedisPeakMemory
		}
	}
}

// runDirIn returns the one run directory inside a slot: a directory (not the "latest"
// link) holding run.json or results.json. It returns "" when there is none.
func runDirIn(slot string) (string, error) {
	ents, err := os.ReadDir(slot)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var found []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(slot, e.Name())
		if isRunDir(d) {
			found = append(found, d)
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("soak: %s holds %d run directories, want one", slot, len(found))
}

func isRunDir(d string) bool {
	for _, f := range []string{ResultsFile, history.RunInfoFile} {
		if _, err := os.Stat(filepath.Join(d, f)); err == nil {
			return true
		}
	}
	return false
}

// readMarker reads a slot's marker; ok is false when there is none.
func readMarker(slot string) (Record, bool, error) {
	b, err := os.ReadFile(filepath.Join(slot, MarkerFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, err
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return Record{}, false, fmt.Errorf("soak: %s: %w", filepath.Join(slot, MarkerFile), err)
	}
	return r, true, nil
}

// finishedResults reports whether the run directory's results.json is that of a
// finished run: readable, schema v1, not interrupted.
func finishedResults(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, ResultsFile))
	if err != nil {
		return false
	}
	var res reports.Results
	return json.Unmarshal(b, &res) == nil && res.Schema == reports.Schema && res.Run.Interrupted == ""
}

// loadSlot reads the run in slot (directory name run-NNN of soak directory soakDir).
// done is false when the slot holds no finished run (no marker or an interrupted one,
// and no finished results.json).
func loadSlot(soakDir string, index int) (r Record, done bool, err error) {
	slot := filepath.Join(soakDir, slotName(index))
	m, ok, err := readMarker(slot)
	if err != nil {
		return Record{}, false, err
	}
	runDir, err := runDirIn(slot)
	if err != nil {
		return Record{}, false, err
	}
	if ok && !m.Interrupted {
		r = m
		if runDir != "" {
			// Read the numbers afresh: the run may have been checked again since.
			r.fill(runDir)
		}
		return r, true, nil
	}
	if runDir != "" && finishedResults(runDir) {
		// The soak was killed after the run finished, before it wrote the marker.
		r = unknownRun(index, 0)
		if ok {
			r.Seed, r.Planned, r.Seed0, r.ChaosDuration, r.Binary, r.Profile = m.Seed, m.Planned, m.Seed0, m.ChaosDuration, m.Binary, m.Profile
		}
		r.Dir = rel(soakDir, runDir)
		r.fill(runDir)
		return r, true, nil
	}
	return Record{}, false, nil
}

func rel(base, p string) string {
	if r, err := filepath.Rel(base, p); err == nil {
		return filepath.ToSlash(r)
	}
	return p
}

// ErrNoRuns is returned (wrapped, naming the directory) when a directory given to
// LoadDir holds no run: no run-NNN slot with a finished run, no soak.json and no
// results.json.
var ErrNoRuns = errors.New("soak: no runs")

// LoadDir reads the finished runs in dir, which is one of: a soak directory (run-NNN
// slots; moved-aside and unfinished slots are skipped), a directory holding a soak
// summary (soak.json or soak-shard-*.json, as a CI job may keep only that), or one run
// directory (results.json). Runs are returned in index order.
func LoadDir(dir string) ([]Record, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	if !st.IsDir() {
		return loadSummaryFile(dir)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	var runs []Record
	slots := 0
	for _, e := range ents {
		m := slotRE.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		slots++
		idx, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		r, done, err := loadSlot(dir, idx)
		if err != nil {
			return nil, err
		}
		if done {
			runs = append(runs, r)
		}
	}
	if slots == 0 {
		for _, name := range summaryFiles(dir) {
			rs, err := loadSummaryFile(name)
			if err != nil {
				return nil, err
			}
			runs = append(runs, rs...)
		}
		if len(runs) == 0 && finishedOrAny(dir) {
			r := unknownRun(-1, 0)
			r.Dir = filepath.ToSlash(dir)
			r.fill(dir)
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return nil, fmt.Errorf("%w in %s: no finished run-NNN directory, soak summary or results.json", ErrNoRuns, dir)
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].Index < runs[j].Index })
	return runs, nil
}

func finishedOrAny(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ResultsFile))
	return err == nil
}

// summaryFiles lists the soak summaries in dir: soak.json, else the shards' ones.
func summaryFiles(dir string) []string {
	if p := filepath.Join(dir, SummaryName+".json"); fileExists(p) {
		return []string{p}
	}
	m, _ := filepath.Glob(filepath.Join(dir, SummaryName+"-shard-*.json"))
	sort.Strings(m)
	return m
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func loadSummaryFile(p string) ([]Record, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("soak: %w", err)
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("soak: %s: %w", p, err)
	}
	if s.Schema != SummarySchema {
		return nil, fmt.Errorf("soak: %s: schema %q, want %q", p, s.Schema, SummarySchema)
	}
	if len(s.Runs) == 0 {
		return nil, fmt.Errorf("%w in %s", ErrNoRuns, p)
	}
	return s.Runs, nil
}
