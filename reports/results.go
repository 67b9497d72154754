package reports

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

// Schema names the format of results.json and its major version. A change that removes
// or redefines a field gets a new version; new fields may appear within a version.
// Version 2 bounds the long lists (see Options.ListLimit); results-full.json.gz, when
// written, has the same schema with nothing left out.
const Schema = "fenceline/results/v2"

// DefaultListLimit is N when Options.ListLimit is 0: results.json keeps the first 50
// and the last 50 items of each long list.
const DefaultListLimit = 50

// Options change what Write writes. The zero value gives the defaults.
type Options struct {
	// ListLimit is N: each long list of results.json (windows, changes, rejections,
	// terms, overlaps, faults, and each check's offending operations) keeps its first N
	// and its last N items, and says how many it left out. 0 means DefaultListLimit; a
	// negative value keeps every item (results.json then grows with the run).
	ListLimit int
	// NoFullResults stops Write from writing FullResultsFile, the complete lists, when
	// a list of results.json was cut.
	NoFullResults bool
}

// limit is the list limit the options give: a count, or -1 for none.
func (o Options) limit() int {
	switch {
	case o.ListLimit == 0:
		return DefaultListLimit
	case o.ListLimit < 0:
		return -1
	}
	return o.ListLimit
}

// Results is the content of results.json: a run's verdict and everything measured,
// for CI tools. See the package documentation for the schema. Times ending in _at_ns
// are nanoseconds since Run.StartUnixNS; other _ns fields are durations in nanoseconds.
type Results struct {
	Schema  string          `json:"schema"`
	Verdict checker.Verdict `json:"verdict"`
	// Summary is the verdict in one sentence.
	Summary string `json:"summary"`
	// RedisLostAcknowledgedWrites is set when the run is invalid with proof that Redis
	// lost writes it had acknowledged in a failover (RedisLostWrites): its violations
	// are a finding about Redis's replication, not the election. RedisLossEvidence
	// is the proof and RedisLostCommits counts the acknowledged commits missing from
	// the final store (omitted when the proof is of another kind).
	RedisLostAcknowledgedWrites bool       `json:"redis_lost_acknowledged_writes"`
	RedisLossEvidence           string     `json:"redis_lost_acknowledged_writes_evidence,omitempty"`
	RedisLostCommits            int        `json:"redis_lost_acknowledged_commits,omitempty"`
	Run                         RunSummary `json:"run"`
	Checks                      []Check    `json:"checks"`
	// FirstViolation is the earliest violation of the run; null when no check is invalid.
	FirstViolation *FirstViolation `json:"first_violation"`
	// Failover summarizes the failover windows per fault kind, sorted by kind.
	Failover []Failover `json:"failover"`
	Windows  []Window   `json:"windows"`
	// LeaderChanges, FencingRejections and CursorConflicts are the checker's counts;
	// Changes and Rejections list the leader changes and stale-token rejections. Every
	// list of Results keeps its first and last ListLimit items (see Totals, Omitted).
	LeaderChanges     int `json:"leader_changes"`
	FencingRejections int `json:"fencing_rejections"`
	CursorConflicts   int `json:"cursor_conflicts"`
	// Throughput is the checker's measurement of commit throughput (omitted when it
	// could not be measured).
	Throughput *checker.Throughput `json:"throughput,omitempty"`
	Changes    []LeaderChange      `json:"changes"`
	Rejections []Rejection         `json:"rejections"`
	Terms      []Term              `json:"terms"`
	// Overlaps lists the leadership overlaps, in time order.
	Overlaps []Overlap        `json:"overlaps"`
	Faults   []Fault          `json:"faults"`
	Ops      checker.OpCounts `json:"ops"`
	// Store is the final read of the store; null if it never happened.
	Store *StoreSummary `json:"store"`
	// Files lists the run directory's files, relative to it: inputs that exist and the
	// reports written with this file.
	Files []string `json:"files"`
	// CheckDurationNS is how long the checker took.
	CheckDurationNS time.Duration `json:"check_duration_ns"`
	// ListLimit is N: each long list holds its first N and last N items; 0 when no list
	// was limited (results-full.json.gz).
	ListLimit int `json:"list_limit"`
	// Totals counts the items of each long list; Omitted those left out of its middle.
	// For every list, its length plus its Omitted count is its Totals count.
	Totals  ListCounts `json:"totals"`
	Omitted ListCounts `json:"omitted"`
	// Full names the file with every list complete (FullResultsFile), relative to the
	// run directory; "" when nothing was left out or it was not written.
	Full string `json:"full,omitempty"`
}

// ListCounts counts items per long list of Results.
type ListCounts struct {
	Windows    int `json:"windows"`
	Changes    int `json:"changes"`
	Rejections int `json:"rejections"`
	Terms      int `json:"terms"`
	Overlaps   int `json:"overlaps"`
	Faults     int `json:"faults"`
	// Offending counts the offending operations of every check together.
	Offending int `json:"offending"`
}

// RunSummary describes how the run was made (run.json).
type RunSummary struct {
	Seed        int64             `json:"seed"`
	Nodes       []string          `json:"nodes"`
	Workload    string            `json:"workload"`
	Variant     string            `json:"variant"`
	Backend     string            `json:"backend"`
	Nemeses     []string          `json:"nemeses"`
	Election    string            `json:"election,omitempty"`
	LeaseTTLNS  time.Duration     `json:"lease_ttl_ns"`
	DurationNS  time.Duration     `json:"duration_ns"`
	Persistence bool              `json:"persistence"`
	Versions    map[string]string `json:"versions"`
	// Start and End are RFC 3339 UTC times ("" if unknown); StartUnixNS and EndUnixNS
	// the same in nanoseconds since the Unix epoch. Every _at_ns field counts from
	// StartUnixNS.
	Start       string        `json:"start"`
	End         string        `json:"end"`
	StartUnixNS int64         `json:"start_unix_ns"`
	EndUnixNS   int64         `json:"end_unix_ns"`
	ElapsedNS   time.Duration `json:"elapsed_ns"`
	// HealAtNS is when every fault was healed at the end; null if the run never got there.
	HealAtNS *time.Duration `json:"heal_at_ns"`
	// Interrupted says why the run stopped early; "" for a complete run.
	Interrupted string `json:"interrupted,omitempty"`
	// StoppedAtViolation is what ended the chaos phase before its duration
	// (--stop-at-violation); "" for a run that ran its course.
	StoppedAtViolation string `json:"stopped_at_violation,omitempty"`
	// StartToken and StartCursor are where the run's token counter and cursor began
	// (run.json); omitted for a fresh store.
	StartToken  int64 `json:"start_token,omitempty"`
	StartCursor int64 `json:"start_cursor,omitempty"`
}

// Check is one check's result.
type Check struct {
	Name    string          `json:"name"`
	Verdict checker.Verdict `json:"verdict"`
	Message string          `json:"message"`
	// Offending lists the first offending operations, earliest first; OffendingOmitted
	// counts those left out of its middle (see Options.ListLimit).
	Offending        []string `json:"offending"`
	OffendingOmitted int      `json:"offending_omitted"`
	// Visualization is the porcupine visualization of the failing piece, relative to
	// the run directory; "" if none.
	Visualization string `json:"visualization,omitempty"`
	// FirstViolationAtNS is when the check's earliest violation happened (the
	// checker's CheckResult.FirstViolation: its first offending operation's completion,
	// or when it became visible); null when the check is not invalid, or its result
	// was stored without the time.
	FirstViolationAtNS *time.Duration   `json:"first_violation_at_ns"`
	Stats              map[string]int64 `json:"stats,omitempty"`
}

// FirstViolation is the run's earliest violation over its invalid checks
// (checker.Result.FirstViolation).
type FirstViolation struct {
	Check string `json:"check"`
	// AtNS is null when the check's result holds no time.
	AtNS        *time.Duration `json:"at_ns"`
	Description string         `json:"description"`
}

// Failover is the failover statistics of one fault kind.
type Failover struct {
	Fault string `json:"fault"`
	// Injected counts the faults of this kind; Windows those that displaced the leader.
	Injected   int          `json:"injected"`
	Windows    int          `json:"windows"`
	ToNewToken Distribution `json:"to_new_token"`
	Gap        Distribution `json:"gap"`
}

// Distribution summarizes durations with nearest-rank percentiles; all zero when
// Count is 0.
type Distribution struct {
	Count int `json:"count"`
	// N is the number of samples the percentiles rest on (Count, named as every
	// percentile's sample count is). FewSamples is set when 0 < N < 5: each percentile
	// is then one of the N samples (p90 and p99 the maximum).
	N          int           `json:"n"`
	FewSamples bool          `json:"fewer_than_5,omitempty"`
	Min        time.Duration `json:"min_ns"`
	P50        time.Duration `json:"p50_ns"`
	P90        time.Duration `json:"p90_ns"`
	P99        time.Duration `json:"p99_ns"`
	Max        time.Duration `json:"max_ns"`
}

// distribution is d as results.json gives it, with its sample count.
func distribution(d checker.Distribution) Distribution {
	return Distribution{Count: d.Count, N: d.Count, FewSamples: d.Count > 0 && d.Count < minSamples,
		Min: d.Min, P50: d.P50, P90: d.P90, P99: d.P99, Max: d.Max}
}

// Window is one failover caused by a fault (see checker.Window).
type Window struct {
	Fault        string        `json:"fault"`
	FaultNode    string        `json:"fault_node"`
	InjectedAtNS time.Duration `json:"injected_at_ns"`
	OldNode      string        `json:"old_node"`
	OldToken     int64         `json:"old_token"`
	NewNode      string        `json:"new_node"`
	NewToken     int64         `json:"new_token"`
	LastOldAtNS  time.Duration `json:"last_old_at_ns"`
	FirstNewAtNS time.Duration `json:"first_new_at_ns"`
	ToNewTokenNS time.Duration `json:"to_new_token_ns"`
	GapNS        time.Duration `json:"gap_ns"`
}

// LeaderChange is the store accepting its first commit under a token higher than every
// token it had accepted.
type LeaderChange struct {
	AtNS        time.Duration `json:"at_ns"`
	OldNode     string        `json:"old_node"`
	OldToken    int64         `json:"old_token"`
	NewNode     string        `json:"new_node"`
	NewToken    int64         `json:"new_token"`
	LastOldAtNS time.Duration `json:"last_old_at_ns"`
	GapNS       time.Duration `json:"gap_ns"`
	// Cause is the checker's attribution (checker.LeaderChange.Cause: "fault", "stall",
	// "after-heal", or "" for nothing); Fault and FaultNode name the fault the change is
	// attributed to, "" for none.
	Cause     string `json:"cause,omitempty"`
	Fault     string `json:"fault,omitempty"`
	FaultNode string `json:"fault_node,omitempty"`
}

// Rejection is a commit the store rejected because its token was stale.
type Rejection struct {
	AtNS  time.Duration `json:"at_ns"`
	Node  string        `json:"node"`
	Op    string        `json:"op"`
	Token int64         `json:"token"`
	From  int64         `json:"from"`
	To    int64         `json:"to"`
	// StoreToken is the highest token the store had accepted before (audit order);
	// 0 when there is no audit stream.
	StoreToken int64 `json:"store_token"`
	// SeenBy is "node" when the node was told, "audit" when only the audit stream
	// shows the rejection (the node's outcome was unknown).
	SeenBy string `json:"seen_by"`
}

// Term is one leadership term (see checker.Term).
type Term struct {
	Node      string        `json:"node"`
	Token     int64         `json:"token"`
	StartAtNS time.Duration `json:"start_at_ns"`
	EndAtNS   time.Duration `json:"end_at_ns"`
	EndReason string        `json:"end_reason"`
	Commits   int           `json:"commits"`
	// FirstCommitAtNS and LastCommitAtNS are null when the term committed nothing.
	FirstCommitAtNS *time.Duration `json:"first_commit_at_ns"`
	LastCommitAtNS  *time.Duration `json:"last_commit_at_ns"`
}

// Overlap is an interval in which two nodes each believed they led.
type Overlap struct {
	NodeA      string        `json:"node_a"`
	TokenA     int64         `json:"token_a"`
	NodeB      string        `json:"node_b"`
	TokenB     int64         `json:"token_b"`
	StartAtNS  time.Duration `json:"start_at_ns"`
	EndAtNS    time.Duration `json:"end_at_ns"`
	DurationNS time.Duration `json:"duration_ns"`
}

// Fault is one fault of the run, from faults.jsonl.
type Fault struct {
	ID           string        `json:"id"`
	Kind         string        `json:"kind"`
	Target       string        `json:"target"`
	InjectedAtNS time.Duration `json:"injected_at_ns"`
	// HealedAtNS and HeldNS are null when the fault was never healed.
	HealedAtNS *time.Duration `json:"healed_at_ns"`
	HeldNS     *time.Duration `json:"held_ns"`
	// Failed is set when the injection certainly did not happen.
	Failed bool   `json:"failed"`
	Error  string `json:"error,omitempty"`
	Detail string `json:"detail,omitempty"`
}

// StoreSummary is the final read of the store, without the sink and the audit stream
// (store.json has them).
type StoreSummary struct {
	Cursor       int64 `json:"cursor"`
	MaxToken     int64 `json:"max_token"`
	TokenCounter int64 `json:"token_counter"`
	SinkEvents   int   `json:"sink_events"`
	AuditEntries int   `json:"audit_entries"`
	// SinkLost counts the events Run.StartCursor+1..Cursor missing from the sink (the
	// events the run had to apply; none below its start) and SinkDuplicated the sink
	// entries among those events that repeat an earlier one (an event applied three
	// times is two repeats): the exactly-once check's findings as totals
	// (a soak sums them over its runs). Counted in 64 bits, never clamped where int has
	// 64 bits.
	SinkLost       int `json:"sink_lost"`
	SinkDuplicated int `json:"sink_duplicated"`
}

// NewResults builds the content of results.json with the default options, as Write
// writes it (Full names FullResultsFile when a list is cut, though NewResults writes
// nothing). It reads nothing but run.Dir's listing (for Files).
func NewResults(run *history.Run, res *checker.Result) (*Results, error) {
	v, err := newView(run, res)
	if err != nil {
		return nil, err
	}
	return v.results(v.limit), nil
}

// FullResultsFile is the name of the compressed results with every list complete,
// written next to results.json when one of its lists was cut.
const FullResultsFile = "results-full.json.gz"

// setOptions applies o to the view: the list limit and whether FullResultsFile is
// written (when a list is longer than twice the limit). newView applies the defaults.
func (v *view) setOptions(o Options) {
	v.limit, v.full = o.limit(), ""
	if v.limit < 0 || o.NoFullResults {
		return
	}
	long := 2 * v.limit
	cut := len(v.res.Windows) > long || len(v.changes) > long || len(v.rejections) > long ||
		len(v.res.Terms) > long || len(v.res.Overlaps) > long || len(v.faults) > long
	for _, c := range v.res.Checks {
		cut = cut || len(c.Offending) > long
	}
	if cut {
		v.full = FullResultsFile
	}
}

// WriteResults writes results.json's content to w, indented, with a final newline.
func WriteResults(w io.Writer, run *history.Run, res *checker.Result) error {
	r, err := NewResults(run, res)
	if err != nil {
		return err
	}
	return writeJSON(w, r)
}

// writeFullJSON writes r gzipped, without indentation (it is for programs). The gzip
// header carries no time or name, so the bytes depend only on r.
func writeFullJSON(w io.Writer, r *Results) error {
	// The fastest level: the lists of a long register run are tens of megabytes of JSON,
	// which the default level takes most of a second to compress, for a file a fifth
	// smaller (measured: 2.25 MB against 2.75 MB for 327,000 overlaps).
	zw, err := gzip.NewWriterLevel(w, gzip.BestSpeed)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(zw, 64<<10)
	if err := streamJSON(bw, reflect.ValueOf(r).Elem()); err != nil {
		return err
	}
	if err := bw.WriteByte('\n'); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return zw.Close()
}

// streamJSON writes the struct v as json.Marshal does, each list an item at a time:
// encoding/json builds a whole document in memory before it writes a byte, and the
// complete lists of a long register run are 50 MB of JSON (150 MB of allocations as
// its buffer doubled). TestStreamJSON holds it to json.Marshal's bytes.
func streamJSON(w *bufio.Writer, v reflect.Value) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf) // escapes HTML, as json.Marshal does
	put := func(x any) error {
		buf.Reset()
		if err := enc.Encode(x); err != nil {
			return err
		}
		_, err := w.Write(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}))
		return err
	}
	t := v.Type()
	w.WriteByte('{')
	first := true
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || f.Anonymous || name == "-" {
			continue // Results has no such field; json.Marshal's rules for them are not copied
		}
		if name == "" {
			name = f.Name
		}
		fv := v.Field(i)
		if slices.Contains(strings.Split(opts, ","), "omitempty") && emptyJSON(fv) {
			continue
		}
		if !first {
			w.WriteByte(',')
		}
		first = false
		if err := put(name); err != nil {
			return err
		}
		w.WriteByte(':')
		if fv.Kind() != reflect.Slice || fv.IsNil() || fv.Type().Elem().Kind() == reflect.Uint8 {
			if err := put(fv.Interface()); err != nil {
				return err
			}
			continue
		}
		w.WriteByte('[')
		for j := range fv.Len() {
			if j > 0 {
				w.WriteByte(',')
			}
			if err := put(fv.Index(j).Interface()); err != nil {
				return err
			}
		}
		w.WriteByte(']')
	}
	return w.WriteByte('}')
}

// emptyJSON is encoding/json's test for omitempty.
func emptyJSON(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// maxOffendingShown caps the offending operations report.md, index.html, junit.xml
// and the terminal summary show per check: the first and the last maxOffendingShown.
const maxOffendingShown = 10

// shownOffending is off as those reports show it: cut to its first and last
// maxOffendingShown entries, with "… and N more" between them.
func shownOffending(off []string) []string {
	shown, omitted := headTail(off, maxOffendingShown)
	if omitted == 0 {
		return off
	}
	out := slices.Clone(shown[:maxOffendingShown])
	out = append(out, fmt.Sprintf("… and %d more (see %s)", omitted, ResultsFile))
	return append(out, shown[maxOffendingShown:]...)
}

// headTail returns the first n and the last n items of s, and how many it left out
// between them; all of s when n is negative or s has at most 2n items.
func headTail[T any](s []T, n int) ([]T, int) {
	if n < 0 || len(s) <= 2*n {
		return s, 0
	}
	out := make([]T, 0, 2*n)
	out = append(out, s[:n]...)
	return append(out, s[len(s)-n:]...), len(s) - 2*n
}

func writeJSON(w io.Writer, r *Results) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// results builds results.json's content, each long list cut to its first and last n
// items (every item when n < 0).
func (v *view) results(n int) *Results {
	in := v.run.Info
	r := &Results{
		Schema: Schema, Verdict: v.verdict(), Summary: v.headline(),
		Run: RunSummary{
			Seed: in.Seed, Nodes: nonNil(v.nodes), Workload: in.Workload, Variant: orDefault(in.Variant, "reference"),
			Backend: in.Backend, Nemeses: nonNil(in.Nemeses), Election: in.Election,
			LeaseTTLNS: in.LeaseTTL, DurationNS: in.Duration, Persistence: in.Persistence,
			Versions: in.Versions, StartUnixNS: v.start, EndUnixNS: v.end, ElapsedNS: time.Duration(v.end - v.start),
			Start: rfc3339(v.start), End: rfc3339(v.end), Interrupted: in.Interrupted,
			StoppedAtViolation: in.StoppedAtViolation, StartToken: in.StartToken, StartCursor: in.StartCursor,
		},
		LeaderChanges: v.res.LeaderChanges, FencingRejections: v.res.FencingRejections, CursorConflicts: v.res.CursorConflicts,
		Throughput: v.res.Throughput,
		Ops:        v.res.Ops, CheckDurationNS: v.res.Duration,
		Checks: []Check{}, Failover: []Failover{}, Windows: []Window{}, Changes: []LeaderChange{},
		Rejections: []Rejection{}, Terms: []Term{}, Overlaps: []Overlap{}, Faults: []Fault{},
	}
	loss := v.redisLoss()
	r.RedisLostAcknowledgedWrites, r.RedisLossEvidence, r.RedisLostCommits = loss.Lost, loss.Evidence, loss.Commits
	if r.Run.Versions == nil {
		r.Run.Versions = map[string]string{}
	}
	if in.HealTime > 0 {
		r.Run.HealAtNS = ptr(v.rel(in.HealTime))
	}
	if n >= 0 {
		r.ListLimit = n
	}
	windows, changes, rejections := v.res.Windows, v.changes, v.rejections
	terms, overlaps, faults := v.res.Terms, v.res.Overlaps, v.faults
	r.Totals = ListCounts{Windows: len(windows), Changes: len(changes), Rejections: len(rejections),
		Terms: len(terms), Overlaps: len(overlaps), Faults: len(faults)}
	windows, r.Omitted.Windows = headTail(windows, n)
	changes, r.Omitted.Changes = headTail(changes, n)
	rejections, r.Omitted.Rejections = headTail(rejections, n)
	terms, r.Omitted.Terms = headTail(terms, n)
	overlaps, r.Omitted.Overlaps = headTail(overlaps, n)
	faults, r.Omitted.Faults = headTail(faults, n)
	// Every list is made at its size: those of a long register run are tens of
	// megabytes, and growing them by doubling allocated three times that.
	r.Windows, r.Changes, r.Rejections = make([]Window, 0, len(windows)), make([]LeaderChange, 0, len(changes)), make([]Rejection, 0, len(rejections))
	r.Terms, r.Overlaps, r.Faults = make([]Term, 0, len(terms)), make([]Overlap, 0, len(overlaps)), make([]Fault, 0, len(faults))
	for _, c := range v.res.Checks {
		off, omitted := headTail(c.Offending, n)
		r.Totals.Offending += len(c.Offending)
		r.Omitted.Offending += omitted
		ck := Check{Name: c.Name, Verdict: c.Verdict, Message: c.Message,
			Offending: nonNil(off), OffendingOmitted: omitted, Visualization: c.Visualization, Stats: c.Stats}
		if c.Verdict == checker.Invalid && c.FirstViolation != 0 {
			ck.FirstViolationAtNS = ptr(v.rel(c.FirstViolation))
		}
		r.Checks = append(r.Checks, ck)
	}
	if fv, ok := v.res.FirstViolation(); ok {
		r.FirstViolation = &FirstViolation{Check: fv.Check, Description: fv.Description}
		if fv.Time != 0 {
			r.FirstViolation.AtNS = ptr(v.rel(fv.Time))
		}
	}
	for _, f := range v.res.Failover {
		r.Failover = append(r.Failover, Failover{Fault: f.Fault, Injected: f.Injected, Windows: f.Windows,
			ToNewToken: distribution(f.ToNewToken), Gap: distribution(f.Gap)})
	}
	for _, w := range windows {
		r.Windows = append(r.Windows, Window{Fault: w.Fault, FaultNode: w.FaultNode, InjectedAtNS: v.rel(w.Injected),
			OldNode: w.OldNode, OldToken: w.OldToken, NewNode: w.NewNode, NewToken: w.NewToken,
			LastOldAtNS: v.rel(w.LastOld), FirstNewAtNS: v.rel(w.FirstNew), ToNewTokenNS: w.ToNewToken, GapNS: w.Gap})
	}
	for _, c := range changes {
		lc := LeaderChange{AtNS: v.rel(c.At), OldNode: c.OldNode, OldToken: c.OldToken, NewNode: c.NewNode, NewToken: c.NewToken,
			LastOldAtNS: v.rel(c.LastOld), GapNS: time.Duration(c.At - c.LastOld)}
		switch {
		case c.Cause != nil:
			lc.Cause, lc.Fault, lc.FaultNode = c.Cause.Cause, c.Cause.Fault, c.Cause.FaultNode
		case c.Window != nil: // a result stored before changes were attributed
			lc.Fault, lc.FaultNode = c.Window.Fault, c.Window.FaultNode
		}
		r.Changes = append(r.Changes, lc)
	}
	for _, x := range rejections {
		r.Rejections = append(r.Rejections, Rejection{AtNS: v.rel(x.At), Node: x.Node, Op: x.Op, Token: x.Token,
			From: x.From, To: x.To, StoreToken: x.StoreToken, SeenBy: x.SeenBy})
	}
	for _, t := range terms {
		tm := Term{Node: t.Node, Token: t.Token, StartAtNS: v.rel(t.Start), EndAtNS: v.rel(t.End), EndReason: t.EndReason, Commits: t.Commits}
		if t.FirstCommit != 0 {
			tm.FirstCommitAtNS = ptr(v.rel(t.FirstCommit))
		}
		if t.LastCommit != 0 {
			tm.LastCommitAtNS = ptr(v.rel(t.LastCommit))
		}
		r.Terms = append(r.Terms, tm)
	}
	for _, o := range overlaps {
		r.Overlaps = append(r.Overlaps, Overlap{NodeA: o.NodeA, TokenA: o.TokenA, NodeB: o.NodeB, TokenB: o.TokenB,
			StartAtNS: v.rel(o.Start), EndAtNS: v.rel(o.End), DurationNS: o.Duration})
	}
	for _, f := range faults {
		ft := Fault{ID: f.ID, Kind: f.Kind, Target: f.Target, InjectedAtNS: v.rel(f.Inject), Failed: f.Failed, Error: f.Err, Detail: f.Detail}
		if f.Heal != 0 {
			ft.HealedAtNS, ft.HeldNS = ptr(v.rel(f.Heal)), ptr(f.held())
		}
		r.Faults = append(r.Faults, ft)
	}
	if st := v.run.Store; st != nil {
		r.Store = &StoreSummary{Cursor: st.Cursor, MaxToken: st.MaxToken, TokenCounter: st.TokenCounter,
			SinkEvents: len(st.Sink), AuditEntries: st.AuditLen()}
		r.Store.SinkLost, r.Store.SinkDuplicated = clampInt(v.sinkLost), clampInt(v.sinkDup)
	}
	r.Files = v.allFiles()
	if r.Omitted != (ListCounts{}) {
		r.Full = v.full
	}
	return r
}

// sinkCounts counts the events start+1..cursor missing from sink and the entries of
// sink among those events that repeat an earlier one, as the exactly-once check judges
// a run that began at cursor start (history.RunInfo.StartCursor): events at or below
// start were never the run's to apply, and those beyond the cursor the check counts
// apart. An event applied three times counts two repeats (the check counts it once,
// as one event duplicated). Counts are int64: a boundary start puts the cursor near 2^53, and a
// cursor far beyond a short sink loses that many events. Its memory is bounded by the
// sink, not by the cursor: a sink in increasing order (what a correct run leaves) is
// counted in one pass, any other from a sorted copy.
func sinkCounts(sink []int64, start, cursor int64) (lost, dup int64) {
	sorted := sink
	if !slices.IsSorted(sink) {
		sorted = slices.Clone(sink)
		slices.Sort(sorted)
	}
	in := uint64(0)
	for i, id := range sorted {
		if id <= start || id > cursor {
			continue // not the run's to apply: the check finds it beyond the cursor
		}
		if i > 0 && id == sorted[i-1] {
			dup++
			continue
		}
		in++
	}
	if cursor > start {
		// cursor-start can exceed MaxInt64 only for a negative start, which no run has.
		if want := uint64(cursor) - uint64(start); want > in {
			lost = int64(min(want-in, math.MaxInt64))
		}
	}
	return lost, dup
}

// clampInt is n as an int: n itself wherever int has 64 bits.
func clampInt(n int64) int { return int(min(n, int64(math.MaxInt))) }

func ptr[T any](x T) *T { return &x }

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func rfc3339(ns int64) string {
	if ns <= 0 {
		return ""
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339Nano)
}
