package history

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
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
	// TakeoverOnDisconnect: the nodes ran with --takeover-on-disconnect (docs/failover.md).
	TakeoverOnDisconnect bool          `json:"takeover_on_disconnect,omitempty"`
	Duration             time.Duration `json:"duration_ns"`
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
	// StoppedAtViolation is set when the chaos phase ended before Duration because a
	// check of the history so far found a violation (--stop-at-violation): what it found.
	// The run still healed, recovered and read the store; a complete check that does not
	// confirm the violation makes its verdict unknown, never valid.
	StoppedAtViolation string `json:"stopped_at_violation,omitempty"`
	// Budget is the run's failover budget (`--budget`, checker.ParseBudgets), judged by
	// every check of the run; empty: none.
	Budget string `json:"budget,omitempty"`
	// RedisPeakMemory is Redis's used_memory_peak in bytes, read before the final stop;
	// 0 if it could not be read.
	RedisPeakMemory int64 `json:"redis_peak_memory_bytes,omitempty"`
	// Target is the design under test when it is not the reference (package targets).
	Target string `json:"target,omitempty"`
	// NoFence is set when the target writes the cursor without a fencing token: the
	// no-stale-write check does not apply to it.
	NoFence bool `json:"no_fence,omitempty"`
	// Store is where the nodes kept the cursor: "redis" or "postgres". Runs recorded
	// before it existed leave it empty, which means redis.
	Store string `json:"store,omitempty"`
	// Redis is how Redis ran. Runs recorded before it existed leave it nil: one server.
	Redis *RedisSetup `json:"redis,omitempty"`
	// EtcdMembers is the size of the etcd cluster the run had (--etcd-members); 0: none.
	EtcdMembers int `json:"etcd_members,omitempty"`
	// Schedule is how the run's schedule was made: "random" ("" too), "targeted",
	// "mixed" (generated from Seed), or "replayed" (given, by a replay or a shrink).
	Schedule string `json:"schedule,omitempty"`
	// ShrunkFrom, set by `fenceline shrink` on the failing run it found, is how many
	// faults the schedule it was shrunk from had, and ShrunkFromRun that run's directory.
	ShrunkFrom    int    `json:"shrunk_from,omitempty"`
	ShrunkFromRun string `json:"shrunk_from_run,omitempty"`
	// ShrunkTo is how many faults this run's schedule has, recorded with ShrunkFrom.
	ShrunkTo int `json:"shrunk_to,omitempty"`
	// StartToken and StartCursor are where the run began: the token counter (the first
	// token issued is StartToken+1) and the stored cursor (the first event to ingest is
	// StartCursor+1; the cursor record's token is 0). Both 0: a fresh store.
	StartToken  int64 `json:"start_token,omitempty"`
	StartCursor int64 `json:"start_cursor,omitempty"`
	// LeaseCounted: the nodes say, at each step-down, the lease their term counted on
	// (Event.Lease), as fenceline's own node does; the step-down check then requires it
	// of every step-down.
	LeaseCounted bool `json:"lease_counted,omitempty"`
	// SourceRate is the event source's rate, events per second (0: unknown or
	// unlimited): what a leader that keeps up applies.
	SourceRate float64 `json:"source_rate,omitempty"`
}

// RedisSetup is how Redis ran in a run: what a replay needs to run it the same way.
type RedisSetup struct {
	// Topology is "single", "sentinel" or "cluster".
	Topology string `json:"topology"`
	// MinReplicasToWrite and MinReplicasMaxLag (seconds) are the data nodes'
	// min-replicas-to-write and min-replicas-max-lag; 0: off.
	MinReplicasToWrite int `json:"min_replicas_to_write,omitempty"`
	MinReplicasMaxLag  int `json:"min_replicas_max_lag,omitempty"`
	// Wait is the nodes' --redis-wait: WAIT for this many replicas after every script.
	Wait int `json:"wait,omitempty"`
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
	// WriteStore puts it in its own file, AuditFile. LoadRun leaves here only what
	// store.json holds (older and hand-written runs keep the audit there) and holds the
	// entries of AuditFile packed after them: read the whole stream with AuditLen and
	// AuditAt.
	Audit []AuditEntry `json:"audit,omitempty"`
	// packed holds the entries LoadRun read from AuditFile, after those of Audit (see
	// AuditLen and AuditAt, which read both).
	packed auditLog
}

// AuditBodyFailed is the Result of the audit entry of a write whose body raised an error
// after the token check: its token was recorded as accepted (ErrBodyFailed in the
// history).
const AuditBodyFailed = "error"

// AuditEntry is one fenced write attempt as the store saw it.
type AuditEntry struct {
	StreamID string `json:"stream_id"` // Redis stream entry id: the store's own order
	Op       string `json:"op"`        // operation id (Event.ID of the commit)
	Node     string `json:"node"`
	Token    int64  `json:"token"`
	From     int64  `json:"from"`
	To       int64  `json:"to"`
	// Kind is KindWrite for a fenced write that moves no cursor (From and To are then 0),
	// and empty for a commit.
	Kind Kind `json:"kind,omitempty"`
	// Result is "ok", ErrStaleToken or ErrCursorConflict, or AuditBodyFailed.
	Result string `json:"result"`
	// ServerTime is Redis's clock (TIME) in microseconds; informative only.
	ServerTime int64 `json:"server_time_us"`
}

// Run is everything a run directory holds that the checker needs.
type Run struct {
	Dir    string
	Info   RunInfo
	Events Events  // all nodes' events, ordered by time
	Faults []Event // fault events, ordered by time
	Store  *Store  // nil if the final read never happened
	// Warnings lists what LoadRun tolerated but a reader must know: a torn last line
	// of a history or of the fault log (cut mid-line by a full disk or a crash) that
	// was dropped. The checker reports them and never calls such a run valid.
	Warnings []string
}

// ErrNoRun is returned when a directory is not a run directory. It wraps ErrBadInput.
var ErrNoRun error = &inputError{"history: not a run directory"}

// ErrBadRunFile is returned (wrapped, naming the file and the problem) when run.json,
// store.json or schedule.json is not what the harness writes. It wraps ErrBadInput.
var ErrBadRunFile error = &inputError{"history: bad run file"}

// ErrNoHistory is returned when a run directory has no history/ directory, or no
// event in it. It wraps ErrBadInput.
var ErrNoHistory error = &inputError{"history: no history"}

// GzipSuffix is appended to a history, fault or audit file compressed at the end of a
// run (history/<node>.jsonl.gz, faults.jsonl.gz, audit.jsonl.gz). LoadRun reads either;
// when both exist it reads the plain one.
const GzipSuffix = ".gz"

// ScheduleFile holds the fault schedule generated from the seed: a JSON array of
// steps, each an object with at least "kind" (a string) and "at_ns" (an integer).
const ScheduleFile = "schedule.json"

// Validate reports whether the run description is usable: times within 0..MaxTime,
// no negative duration, End not before Start.
func (ri *RunInfo) Validate() error {
	for _, f := range []struct {
		name string
		v    int64
	}{{"start", ri.Start}, {"heal_time", ri.HealTime}, {"end", ri.End}} {
		if f.v < 0 || f.v > MaxTime {
			return fmt.Errorf("%w: %s: %s %d is outside 0..%d (host nanoseconds since 1970)", ErrBadRunFile, RunInfoFile, f.name, f.v, MaxTime)
		}
	}
	if ri.LeaseTTL < 0 || ri.Duration < 0 || int64(ri.LeaseTTL) > MaxTime || int64(ri.Duration) > MaxTime {
		return fmt.Errorf("%w: %s: lease_ttl_ns %d or duration_ns %d is negative or too large", ErrBadRunFile, RunInfoFile, ri.LeaseTTL, ri.Duration)
	}
	if ri.End != 0 && ri.Start != 0 && ri.End < ri.Start {
		return fmt.Errorf("%w: %s: end %d is before start %d", ErrBadRunFile, RunInfoFile, ri.End, ri.Start)
	}
	return nil
}

// LoadRun reads a run directory. The files are read in parallel: a long run's histories
// and audit stream are hundreds of megabytes. History, fault and audit files may be
// gzip-compressed (GzipSuffix).
//
// Every error about the content of the directory wraps ErrBadInput and names the file
// (and line): a missing run.json (ErrNoRun), a broken run.json, store.json or
// schedule.json (ErrBadRunFile), no history/ or no event in it (ErrNoHistory), a
// malformed line (ErrMalformed). A torn last line of a history or of the fault log is
// not an error: it is dropped and listed in Run.Warnings.
func LoadRun(dir string) (*Run, error) {
	r := &Run{Dir: dir}
	if err := readJSON(filepath.Join(dir, RunInfoFile), &r.Info, "a run description"); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no %s", ErrNoRun, dir, RunInfoFile)
		}
		return nil, err
	}
	if err := r.Info.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if err := checkSchedule(filepath.Join(dir, ScheduleFile)); err != nil {
		return nil, err
	}
	files, err := historyFiles(dir)
	if err != nil {
		return nil, err
	}
	var (
		st      Store
		stErr   error
		audit   auditLog
		auErr   error
		faults  []Event
		fWarn   string
		fErr    error
		hWarn   []string
		wg      sync.WaitGroup
		auditAt string
	)
	wg.Go(func() { stErr = readStore(filepath.Join(dir, StoreFile), &st) })
	wg.Go(func() { audit, auditAt, auErr = readAudit(filepath.Join(dir, AuditFile)) })
	wg.Go(func() { faults, fWarn, fErr = readEventsFile(filepath.Join(dir, FaultsFile)) })
	r.Events, hWarn, err = readHistories(files)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if r.Events.Len() == 0 {
		return nil, fmt.Errorf("%w: %s: the history files hold no event", ErrNoHistory, filepath.Join(dir, HistoryDir))
	}
	r.Warnings = append(r.Warnings, hWarn...)
	switch {
	case fErr == nil:
		r.Faults = faults
		SortByTime(r.Faults)
		if fWarn != "" {
			r.Warnings = append(r.Warnings, fWarn)
		}
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
		r.Store.packed = audit // after the entries store.json holds, if any
	case auErr == nil:
		return nil, fmt.Errorf("%w: %s has %s but no %s", ErrBadInput, dir, filepath.Base(auditAt), StoreFile)
	case !errors.Is(auErr, os.ErrNotExist):
		return nil, auErr
	}
	return r, nil
}

// historyFiles lists the history files of dir: history/*.jsonl, and history/*.jsonl.gz
// for a node with no plain file.
func historyFiles(dir string) ([]string, error) {
	hd := filepath.Join(dir, HistoryDir)
	ents, err := os.ReadDir(hd)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s has no %s/ directory", ErrNoHistory, dir, HistoryDir)
		}
		return nil, fmt.Errorf("history: %w", err)
	}
	plain := map[string]bool{}
	var files []string
	for _, e := range ents {
		if n := e.Name(); e.IsDir() && (strings.HasSuffix(n, ".jsonl") || strings.HasSuffix(n, ".jsonl"+GzipSuffix)) {
			// Skipping it would judge the run without that node's operations.
			return nil, fmt.Errorf("%w: %s is a directory, not a history file", ErrBadInput, filepath.Join(hd, n))
		}
	}
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".jsonl") {
			plain[n] = true
			files = append(files, filepath.Join(hd, n))
		}
	}
	for _, e := range ents {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".jsonl"+GzipSuffix) && !plain[strings.TrimSuffix(n, GzipSuffix)] {
			files = append(files, filepath.Join(hd, n))
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: %s holds no <node>.jsonl file", ErrNoHistory, hd)
	}
	sort.Strings(files)
	return files, nil
}

// openData opens path, or path+GzipSuffix when path does not exist, decompressing it.
// The name returned is the file actually opened. The error wraps os.ErrNotExist when
// neither exists.
func openData(path string) (io.ReadCloser, string, error) {
	f, err := os.Open(path)
	if err == nil {
		return openFile(f, path)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, path, fmt.Errorf("history: %w", err)
	}
	gz := path + GzipSuffix
	g, gerr := os.Open(gz)
	if gerr != nil {
		if errors.Is(gerr, os.ErrNotExist) {
			return nil, path, fmt.Errorf("history: %w", err)
		}
		return nil, gz, fmt.Errorf("history: %w", gerr)
	}
	return openFile(g, gz)
}

// openFile wraps an opened file in a gzip reader when its name says it is compressed.
func openFile(f *os.File, name string) (io.ReadCloser, string, error) {
	if !strings.HasSuffix(name, GzipSuffix) {
		return f, name, nil
	}
	zr, err := gzip.NewReader(bufio.NewReaderSize(f, 1<<16))
	if err != nil {
		f.Close()
		return nil, name, fmt.Errorf("%s: %w: not a gzip file: %v", name, ErrBadInput, err)
	}
	limit := int64(16 << 20)
	if st, err := f.Stat(); err == nil {
		limit += maxGzipRatio * st.Size()
	}
	return &gzFile{zr: zr, f: f, name: name, limit: limit}, name, nil
}

// gzFile reads a gzip-compressed file; a corrupt or truncated stream is bad input.
type gzFile struct {
	zr    *gzip.Reader
	f     *os.File
	name  string
	read  int64 // bytes decompressed so far
	limit int64 // see maxGzipRatio
}

// maxGzipRatio bounds how much a compressed file may expand (plus 16 MiB), so that
// memory stays proportional to the input: histories compress about tenfold, and a
// file that expands a thousandfold is no history the harness wrote.
const maxGzipRatio = 200

func (g *gzFile) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("%s: %w: corrupt or truncated gzip data: %v", g.name, ErrBadInput, err)
	}
	if g.read += int64(n); g.read > g.limit {
		return n, fmt.Errorf("%s: %w: decompresses to more than %d times its size", g.name, ErrBadInput, maxGzipRatio)
	}
	return n, err
}

func (g *gzFile) Close() error {
	g.zr.Close()
	return g.f.Close()
}

// readEventsFile reads a history-format file (plain or compressed), tolerating a torn
// last line.
func readEventsFile(path string) ([]Event, string, error) {
	rc, name, err := openData(path)
	if err != nil {
		return nil, "", err
	}
	defer rc.Close()
	b := newBuilder(0)
	warn, err := b.read(rc, name, true)
	if err != nil {
		return nil, "", err
	}
	return b.events().All(), warn, nil
}

// readHistories reads history files into one Events ordered by time, as a stable sort
// of their concatenation would order it. A long run's histories are hundreds of
// megabytes, so it counts their lines first and reads every file, in parallel, into its
// own part of one slice of exactly that size: no slice grows, and nothing is held twice.
func readHistories(files []string) (Events, []string, error) {
	counts := make([]int, len(files))
	total := 0
	for i, f := range files {
		n, err := countLines(f)
		if err != nil {
			return Events{}, nil, err
		}
		counts[i], total = n, total+n
	}
	all := make([]row, total)
	parts := make([]*builder, len(files))
	warns := make([]string, len(files))
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	off := 0
	for i, f := range files {
		b := newBuilder(0)
		// A full slice expression: a file that grew since it was counted reallocates its
		// part instead of writing over the next one.
		b.rows = all[off : off : off+counts[i]]
		off += counts[i]
		parts[i] = b
		wg.Go(func() {
			fh, err := os.Open(f)
			if err != nil {
				errs[i] = fmt.Errorf("history: %w", err)
				return
			}
			rc, _, err := openFile(fh, f)
			if err != nil {
				errs[i] = err
				return
			}
			defer rc.Close()
			if warns[i], errs[i] = b.read(rc, f, true); errs[i] == nil && !b.events().SortedByTime() {
				b.sortByTime() // a node writes in time order: rarely needed
			}
		})
	}
	wg.Wait()
	if err := firstError(errs); err != nil {
		return Events{}, nil, err
	}
	var ws []string
	for _, w := range warns {
		if w != "" {
			ws = append(ws, w)
		}
	}
	return merge(parts, all, counts), ws, nil
}

// countLines counts the newline-terminated lines of a file (plus a last one without).
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("history: %w", err)
	}
	rc, _, err := openFile(f, path)
	if err != nil {
		return 0, err
	}
	defer rc.Close()
	buf := make([]byte, 1<<20)
	n, size, last := 0, 0, byte('\n')
	for {
		k, err := rc.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			size += k
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
	// Blank lines are skipped and hold no event: a file of newlines must not make the
	// reader allocate an event for each. No event line is shorter than minEventLine.
	return min(n, size/minEventLine+1), nil
}

// minEventLine bounds the length of a line that holds an event from below:
// {"id":"x","type":"ok","kind":"load","time":1} has 46 bytes.
const minEventLine = 40

// readAudit reads the audit file (plain or compressed). Unlike a history, a torn
// line is an error: an entry missing from the audit stream would be read as a commit
// that never reached the store.
func readAudit(path string) (auditLog, string, error) {
	rc, name, err := openData(path)
	if err != nil {
		return auditLog{}, name, err
	}
	defer rc.Close()
	// A long run's audit has an entry per commit: counted first, so that the slice is
	// allocated once at its size instead of doubling.
	n, err := countLines(name)
	if err != nil {
		return auditLog{}, name, err
	}
	l := auditLog{rows: make([]auditRow, 0, n)}
	var ids arena
	strs := map[string]uint32{"": 0}
	l.strs = []string{""}
	index := func(s string) uint32 {
		k, ok := strs[s]
		if !ok {
			k = uint32(len(l.strs))
			strs[s] = k
			l.strs = append(l.strs, s)
		}
		return k
	}
	var in interner
	var a AuditEntry
	err = scanLines(rc, name, func(line int, b []byte, torn bool) error {
		sid, op, err := decodeAudit(b, &a, &ids, &in)
		if err != nil {
			what := ""
			if torn {
				what = " (a torn last line: the audit copy is incomplete)"
			}
			return fmt.Errorf("%s:%d: %w%s: %v", name, line, ErrMalformed, what, err)
		}
		l.rows = append(l.rows, auditRow{token: a.Token, from: a.From, to: a.To, serverTime: a.ServerTime,
			sid: sid, op: op, node: index(a.Node), result: index(a.Result), kind: index(string(a.Kind))})
		return nil
	})
	if err != nil {
		return auditLog{}, name, err
	}
	l.ids = ids.done()
	return l, name, nil
}

// readStore reads store.json, requiring the fields the harness always writes: a file
// that lacks them (`{}`, or a file of another kind) is not a final read of the store.
func readStore(path string, st *Store) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	var f struct {
		Cursor       *int64       `json:"cursor"`
		MaxToken     *int64       `json:"max_token"`
		TokenCounter *int64       `json:"token_counter"`
		Sink         sinkJSON     `json:"sink"`
		Balances     balancesJSON `json:"balances"`
		Audit        []AuditEntry `json:"audit"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("%w: %s is not a final store read: %v", ErrBadRunFile, path, err)
	}
	var missing []string
	for _, m := range []struct {
		name string
		ok   bool
	}{{"cursor", f.Cursor != nil}, {"max_token", f.MaxToken != nil}, {"token_counter", f.TokenCounter != nil}, {"sink", f.Sink.set}, {"balances", f.Balances.set}} {
		if !m.ok {
			missing = append(missing, m.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s is not a final store read: missing %s", ErrBadRunFile, path, strings.Join(missing, ", "))
	}
	*st = Store{Cursor: *f.Cursor, MaxToken: *f.MaxToken, TokenCounter: *f.TokenCounter, Sink: f.Sink.v, Balances: f.Balances.v, Audit: f.Audit}
	return nil
}

// sinkJSON decodes the sink, a long array of integers, directly (encoding/json
// decodes it by reflection, a slice growing by doubling), and records that the member
// exists, null included.
type sinkJSON struct {
	set bool
	v   []int64
}

func (s *sinkJSON) UnmarshalJSON(b []byte) error {
	s.set = true
	if v, ok := parseInts(b); ok {
		s.v = v
		return nil
	}
	return json.Unmarshal(b, &s.v)
}

// parseInts parses a JSON array of plain integers, or null; false for anything else.
func parseInts(b []byte) ([]int64, bool) {
	i := skipSpace(b, 0)
	if string(b[i:]) == "null" {
		return nil, true
	}
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	out := make([]int64, 0, bytes.Count(b, []byte{','})+1)
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, skipSpace(b, i+1) == len(b)
	}
	for {
		n, j, ok := plainInt(b, i)
		if !ok {
			return nil, false
		}
		out = append(out, n)
		i = skipSpace(b, j)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return out, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

// balancesJSON records that the balances member exists, null included.
type balancesJSON struct {
	set bool
	v   map[string]int64
}

func (m *balancesJSON) UnmarshalJSON(b []byte) error {
	m.set = true
	return json.Unmarshal(b, &m.v)
}

// checkSchedule checks schedule.json, if present: a JSON array of fault steps.
func checkSchedule(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	var steps []map[string]json.RawMessage
	// null is what the harness writes for a run with no faults (a nil schedule).
	if t := bytes.TrimSpace(b); bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte("[]")) {
		return nil
	}
	if err := json.Unmarshal(b, &steps); err != nil || steps == nil {
		return fmt.Errorf("%w: %s is not a fault schedule (a JSON array of steps)%s", ErrBadRunFile, path, jsonWhy(err))
	}
	for i, s := range steps {
		var kind string
		var at int64
		if json.Unmarshal(s["kind"], &kind) != nil || kind == "" || json.Unmarshal(s["at_ns"], &at) != nil || at < 0 {
			return fmt.Errorf("%w: %s: step %d is not a fault step (it needs a \"kind\" and a non-negative \"at_ns\")", ErrBadRunFile, path, i)
		}
	}
	return nil
}

func jsonWhy(err error) string {
	if err == nil {
		return ""
	}
	return ": " + err.Error()
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
	for i := range st.AuditLen() {
		line, err := json.Marshal(st.AuditAt(i))
		if err != nil {
			return err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	// The audit first, then store.json, which is what makes the final read exist for
	// a reader: if either cannot be written (a full disk), neither is left behind, and
	// the run has no final read rather than half of one.
	audit := filepath.Join(dir, AuditFile)
	tmp := audit + ".tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, audit); err != nil {
		os.Remove(tmp)
		return err
	}
	rest := *st
	rest.Audit, rest.packed = nil, auditLog{}
	if err := writeJSON(filepath.Join(dir, StoreFile), &rest, false); err != nil {
		os.Remove(audit)
		return err
	}
	return nil
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
	// Written aside and renamed over: a reader sees the old file or the new one. A
	// failed write (a full disk) removes its temporary file rather than leave it.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// readJSON reads a JSON file; what says what it should be ("a run description"), for
// the message when it is not.
func readJSON(path string, v any, what string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %s is not %s: %v", ErrBadRunFile, path, what, err)
	}
	return nil
}

// Locate returns where the lines of operation id are in the run directory's history
// and fault files, as "file:line", in file order (at most 4). It reads the files again,
// so it is meant for error messages; it returns nil for a run not loaded from a
// directory.
func (r *Run) Locate(id string) []string {
	if r == nil || r.Dir == "" {
		return nil
	}
	files, _ := historyFiles(r.Dir)
	files = append(files, filepath.Join(r.Dir, FaultsFile))
	var out []string
	b := newBuilder(0)
	for _, f := range files {
		rc, name, err := openData(f)
		if err != nil {
			continue
		}
		_ = scanLines(rc, name, func(line int, l []byte, _ bool) error {
			b.ids.chunks, b.ids.cur = b.ids.chunks[:0], b.ids.cur[:0] // one line's id at a time
			if b.decode(l) == nil && str(b.ids.chunks, b.ids.cur, b.f.id) == id {
				out = append(out, fmt.Sprintf("%s:%d", name, line))
				if len(out) == 4 {
					return io.EOF
				}
			}
			return nil
		})
		rc.Close()
		if len(out) == 4 {
			break
		}
	}
	return out
}

// firstError returns the first of errs that is not nil, saying how many more there
// are: an error message stays one line.
func firstError(errs []error) error {
	var first error
	more := 0
	for _, err := range errs {
		switch {
		case err == nil:
		case first == nil:
			first = err
		default:
			more++
		}
	}
	if more > 0 {
		return fmt.Errorf("%w (and %d more files with errors)", first, more)
	}
	return first
}
