package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Layout of a run directory. The harness writes it, the checker and reports read it.
const (
	RunInfoFile = "run.json"     // RunInfo
	HistoryDir  = "history"      // one <node>.jsonl per node (and per register client)
	FaultsFile  = "faults.jsonl" // fault events, same format as histories
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
	Audit []AuditEntry `json:"audit"`
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

// LoadRun reads a run directory.
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
	for _, f := range files {
		evs, err := ReadFile(f)
		if err != nil {
			return nil, err
		}
		r.Events = append(r.Events, evs...)
	}
	SortByTime(r.Events)
	if evs, err := ReadFile(filepath.Join(dir, FaultsFile)); err == nil {
		r.Faults = evs
		SortByTime(r.Faults)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var st Store
	switch err := readJSON(filepath.Join(dir, StoreFile), &st); {
	case err == nil:
		r.Store = &st
	case errors.Is(err, os.ErrNotExist):
	default:
		return nil, err
	}
	return r, nil
}

// SortByTime orders events by time, keeping the order of equal times (a node's own
// invoke and completion may share a timestamp on a coarse clock).
func SortByTime(evs []Event) {
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].Time < evs[j].Time })
}

// WriteJSON writes v as indented JSON to path, atomically (write and rename).
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
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
