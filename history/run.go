package history

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"
)

// Layout of a run directory. The harness writes it, the checker and reports read it.
const (
	RunInfoFile = "run.json"     // RunInfo
	HistoryDir  = "history"      // one <node>.jsonl per node (and per register client)
	FaultsFile  = "faults.jsonl" // fault events, same format as histories
	AuditFile   = "audit.jsonl"  // Store.Audit, one entry per line (kept out of store.json)
	StoreFile   = "store.json"   // Store: the final read of Redis after recovery
	LogsDir     = "logs"         // <node>.log: each node's JSON log (stderr)
)

// RunInfo describes how a run was made.
type RunInfo struct {
	Seed     int64         `json:"seed"`
	Nodes    []string      `json:"nodes"`
	Workload string        `json:"workload"`
	Variant  string        `json:"variant,omitempty"`
	Backend  string        `json:"backend"`
	Nemeses  []string      `json:"nemeses"`
	LeaseTTL time.Duration `json:"lease_ttl_ns"`
	Duration time.Duration `json:"duration_ns"`
	// Start and End bound the run; HealTime is when every fault was healed at the end
	// (zero if the run never got there). Host wall-clock nanoseconds.
	Start    int64 `json:"start"`
	HealTime int64 `json:"heal_time,omitempty"`
	End      int64 `json:"end"`
	// Persistence is false when Redis ran without an append-only file.
	Persistence bool `json:"persistence"`
	// Election is the election name (the hash tag of every key).
	Election string `json:"election"`
	// Versions of the programs involved (fenceline, redis, go).
	Versions map[string]string `json:"versions,omitempty"`
	// Interrupted is set when the run was stopped early (Ctrl-C) or could not complete.
	Interrupted string `json:"interrupted,omitempty"`
	// RedisPeakMemory is Redis's used_memory_peak in bytes, read before the final stop;
	// 0 if it could not be read.
	RedisPeakMemory int64 `json:"redis_peak_memory_bytes,omitempty"`
}

// Store is the final state of the store, read from Redis after the run's recovery phase.
type Store struct {
	// Cursor and MaxToken are the cursor record: the last event applied and the highest
	// token the store has accepted.
	Cursor   int64 `json:"cursor"`
	MaxToken int64 `json:"max_token"`
	// TokenCounter is the election's token counter (0 if the key is missing).
	TokenCounter int64 `json:"token_counter"`
	// Sink lists the ids of applied events in the order they were applied.
	Sink []int64 `json:"sink"`
	// Balances are the simulated ledger's balances, by account.
	Balances map[string]int64 `json:"balances"`
	// Audit is the store's audit stream: every fenced write attempt, in the store's order.
	// WriteStore puts it in its own file, AuditFile; LoadRun reads it from there (or
	// from store.json, where older and hand-written runs keep it).
	Audit []AuditEntry `json:"audit,omitempty"`
}

// AuditEntry is one fenced write attempt as the store saw it.
type AuditEntry struct {
	StreamID string `json:"stream_id"` // Redis stream entry id: the store's own order
	Op       string `json:"op"`        // operation id (Event.ID of the commit)
	Node     string `json:"node"`
	Token    int64  `json:"token"`
	From     int64  `json:"from"`
	To       int64  `json:"to"`
	// Result is "ok", ErrStaleToken or ErrCursorConflict.
	Result string `json:"result"`
	// ServerTime is Redis's clock (TIME) in microseconds; informative only.
	ServerTime int64 `json:"server_time_us"`
}

// Run is everything a run directory holds that the checker needs.
type Run struct {
	Dir    string
	Info   RunInfo
	Events []Event // all nodes' events, ordered by time
	Faults []Event // fault events, ordered by time
	Store  *Store  // nil if the final read never happened
}

// ErrNoRun is returned when a directory is not a run directory.
var ErrNoRun = errors.New("history: not a run directory")

// LoadRun reads a run directory. The files are read in parallel: a long run's histories
// and audit stream are hundreds of megabytes.
func LoadRun(dir string) (*Run, error) {
	r := &Run{Dir: dir}
	if err := readJSON(filepath.Join(dir, RunInfoFile), &r.Info); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no %s", ErrNoRun, dir, RunInfoFile)
		}
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, HistoryDir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var (
		st     Store
		stErr  error
		audit  []AuditEntry
		auErr  error
		faults []Event
		fErr   error
		wg     sync.WaitGroup
	)
	wg.Go(func() { stErr = readJSON(filepath.Join(dir, StoreFile), &st) })
	wg.Go(func() { audit, auErr = readAudit(filepath.Join(dir, AuditFile)) })
	wg.Go(func() { faults, fErr = ReadFile(filepath.Join(dir, FaultsFile)) })
	r.Events, err = readHistories(files)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	switch {
	case fErr == nil:
		r.Faults = faults
		SortByTime(r.Faults)
	case !errors.Is(fErr, os.ErrNotExist):
		return nil, fErr
	}
	switch {
	case stErr == nil:
		r.Store = &st
	case errors.Is(stErr, os.ErrNotExist):
	default:
		return nil, stErr
	}
	switch {
	case auErr == nil && r.Store != nil:
		r.Store.Audit = append(r.Store.Audit, audit...)
	case auErr == nil:
		return nil, fmt.Errorf("history: %s has %s but no %s", dir, AuditFile, StoreFile)
	case !errors.Is(auErr, os.ErrNotExist):
		return nil, auErr
	}
	return r, nil
}

// readHistories reads history files into one slice ordered by time, as a stable sort of
// their concatenation would order it. A long run's histories are hundreds of megabytes,
// so it counts their lines first and reads every file, in parallel, into its own part of
// one slice of exactly that size: no slice grows, and nothing is held twice.
func readHistories(files []string) ([]Event, error) {
	counts := make([]int, len(files))
	total := 0
	for i, f := range files {
		n, err := countLines(f)
		if err != nil {
			return nil, err
		}
		counts[i], total = n, total+n
	}
	all := make([]Event, total)
	parts := make([][]Event, len(files))
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	off := 0
	for i, f := range files {
		// A full slice expression: a file that grew since it was counted reallocates its
		// part instead of writing over the next one.
		dst := all[off : off : off+counts[i]]
		off += counts[i]
		wg.Go(func() {
			fh, err := os.Open(f)
			if err != nil {
				errs[i] = fmt.Errorf("history: %w", err)
				return
			}
			defer fh.Close()
			if parts[i], errs[i] = readInto(fh, f, dst); errs[i] == nil {
				SortByTime(parts[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	out := all[:0]
	for _, p := range parts {
		out = append(out, p...) // copies within all, towards its start, or from a reallocated part
	}
	SortByTime(out) // merges the sorted parts
	return out, nil
}

// countLines counts the newline-terminated lines of a file (plus a last one without).
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	n, last := 0, byte('\n')
	for {
		k, err := f.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("history: %s: %w", path, err)
		}
	}
	if last != '\n' {
		n++
	}
	return n, nil
}

func readAudit(path string) ([]AuditEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	var out []AuditEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var a AuditEntry
		if err := decodeAudit(sc.Bytes(), &a); err != nil {
			return nil, fmt.Errorf("%s:%d: %w: %v", path, line, ErrMalformed, err)
		}
		out = append(out, a)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", path, line+1, err)
	}
	return out, nil
}

// SortByTime orders events by time, keeping the order of equal times (a node's own
// invoke and completion may share a timestamp on a coarse clock).
func SortByTime(evs []Event) {
	slices.SortStableFunc(evs, func(a, b Event) int { return cmp.Compare(a.Time, b.Time) })
}

// WriteJSON writes v as indented JSON to path, atomically (write and rename).
func WriteJSON(path string, v any) error {
	return writeJSON(path, v, true)
}

// WriteStore writes the final store state into run directory dir: StoreFile, compact
// JSON (a long run's sink has an entry per event), and the audit stream as AuditFile, one
// entry per line.
func WriteStore(dir string, st *Store) error {
	var b bytes.Buffer
	for _, a := range st.Audit {
		line, err := json.Marshal(a)
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, AuditFile), b.Bytes(), 0o644); err != nil {
		return err
	}
	rest := *st
	rest.Audit = nil
	return writeJSON(filepath.Join(dir, StoreFile), &rest, false)
}

func writeJSON(path string, v any, indent bool) error {
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("history: %s: %w: %v", path, ErrMalformed, err)
	}
	return nil
}
