package history_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testfiles"
)

const (
	runJSON   = `{"seed":1,"nodes":["n1"],"workload":"listener","backend":"sim","nemeses":[],"lease_ttl_ns":2000000000,"duration_ns":0,"start":1700000000000000000,"end":1700000001000000000,"persistence":true,"election":"x"}`
	storeJSON = `{"cursor":2,"max_token":1,"token_counter":1,"sink":[1,2],"balances":{}}`
	auditLine = `{"stream_id":"1-0","op":"n1/a/2","node":"n1","token":1,"from":0,"to":2,"result":"ok","server_time_us":1}`
	n1Lines   = `{"id":"n1/a/1","type":"invoke","kind":"acquire","node":"n1","time":1700000000000000100}
{"id":"n1/a/1","type":"ok","kind":"acquire","node":"n1","time":1700000000000000200,"token":1}
{"id":"n1/a/2","type":"invoke","kind":"commit","node":"n1","time":1700000000000000300,"token":1,"from":0,"to":2,"events":2}
{"id":"n1/a/2","type":"ok","kind":"commit","node":"n1","time":1700000000000000400,"token":1,"from":0,"to":2,"events":2}
`
	faultLines = `{"id":"f1","type":"invoke","kind":"fault","node":"n1","time":1700000000000000250,"fault":"pause"}
{"id":"f1","type":"ok","kind":"fault","node":"n1","time":1700000000000000350,"fault":"pause"}
`
)

// writeDir writes a run directory from a map of relative path to content; a nil
// content for "history/" makes the directory alone.
func writeDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := []byte(content)
		if strings.HasSuffix(name, history.GzipSuffix) {
			data = testfiles.Gzip(t, []byte(content))
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func goodRun() map[string]string {
	return map[string]string{
		"run.json":          runJSON,
		"store.json":        storeJSON,
		"audit.jsonl":       auditLine + "\n",
		"faults.jsonl":      faultLines,
		"history/n1.jsonl":  n1Lines,
		"schedule.json":     `[{"at_ns":4000000000,"kind":"pause","params":{},"target":{"leader":true}}]`,
		"logs/n1.log":       "",
		"history/notes.txt": "not a history",
	}
}

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "\x00" {
			delete(out, kv[i])
			continue
		}
		out[kv[i]] = kv[i+1]
	}
	return out
}

func TestLoadRunGood(t *testing.T) {
	r, err := history.LoadRun(writeDir(t, goodRun()))
	if err != nil {
		t.Fatal(err)
	}
	if r.Events.Len() != 4 || len(r.Faults) != 2 || r.Store == nil || r.Store.AuditLen() != 1 || len(r.Warnings) != 0 {
		t.Fatalf("loaded %d events, %d faults, store %+v, warnings %v", r.Events.Len(), len(r.Faults), r.Store, r.Warnings)
	}
}

// A step-down that counts its lease (election.LeaseRecorder) keeps it through the
// compact rows: it is kept whole.
func TestLoadRunStepDownLease(t *testing.T) {
	sd := `{"id":"n1/a/3","type":"info","kind":"step-down","node":"n1","time":1700000000000000500,"token":1,"reason":"shutdown","lease_ns":1900000000}` + "\n"
	r, err := history.LoadRun(writeDir(t, with(goodRun(), "history/n1.jsonl", n1Lines+sd)))
	if err != nil {
		t.Fatal(err)
	}
	last := r.Events.At(r.Events.Len() - 1)
	if last.Kind != history.KindStepDown || last.Lease != 1900000000 || last.Reason != "shutdown" || last.Token != 1 {
		t.Fatalf("the step-down loaded as %+v", last)
	}
	if first := r.Events.At(0); first.Lease != 0 {
		t.Fatalf("an acquire loaded with lease %d", first.Lease)
	}
}

// A fault's completion keeps the interval in which it was surely in effect.
func TestLoadRunFaultInEffect(t *testing.T) {
	heal := `{"id":"f1","type":"ok","kind":"fault","node":"n1","time":1700000000000000350,"fault":"presence-loss","in_effect_from":1700000000000000260,"in_effect_to":1700000000000000340}` + "\n"
	r, err := history.LoadRun(writeDir(t, with(goodRun(), "faults.jsonl", strings.SplitAfter(faultLines, "\n")[0]+heal)))
	if err != nil {
		t.Fatal(err)
	}
	if f := r.Faults[1]; f.InEffectFrom != 1700000000000000260 || f.InEffectTo != 1700000000000000340 {
		t.Fatalf("the heal loaded as %+v", f)
	}
}

// TestLoadRunBadInput: every kind of bad input is an error that wraps ErrBadInput
// (exit 2) and names the file (and line), never a verdict and never a panic.
func TestLoadRunBadInput(t *testing.T) {
	maxLine := `{"id":"n1/a/9","type":"invoke","kind":"load","node":"n1","time":9223372036854775807}` + "\n"
	cases := []struct {
		name  string
		files map[string]string
		is    error
		want  []string
	}{
		{"no history dir", with(goodRun(), "history/n1.jsonl", "\x00", "history/notes.txt", "\x00"), history.ErrNoHistory, []string{"no history/ directory"}},
		{"empty history dir", with(goodRun(), "history/n1.jsonl", "\x00", "history/notes.txt", "\x00", "history/", ""), history.ErrNoHistory, []string{"no <node>.jsonl"}},
		{"empty history files", with(goodRun(), "history/n1.jsonl", "", "history/n2.jsonl", "\n"), history.ErrNoHistory, []string{"no event"}},
		{"time 2^63-1", with(goodRun(), "history/n1.jsonl", n1Lines+maxLine), history.ErrMalformed, []string{"n1.jsonl:5", "time 9223372036854775807"}},
		{"time 2^62+1", with(goodRun(), "history/n1.jsonl", strings.Replace(maxLine, "9223372036854775807", "4611686018427387905", 1)+n1Lines), history.ErrMalformed, []string{"n1.jsonl:1"}},
		{"run.json end 2^63-1", with(goodRun(), "run.json", strings.Replace(runJSON, `"end":1700000001000000000`, `"end":9223372036854775807`, 1)), history.ErrBadRunFile, []string{"run.json", "end"}},
		{"broken run.json", with(goodRun(), "run.json", `{"seed":`), history.ErrBadRunFile, []string{"run.json is not a run description"}},
		{"run.json of another kind", with(goodRun(), "run.json", `[1,2]`), history.ErrBadRunFile, []string{"run.json is not a run description"}},
		{"broken store.json", with(goodRun(), "store.json", `{"cursor":`), history.ErrBadRunFile, []string{"store.json is not a final store read"}},
		{"empty store.json object", with(goodRun(), "store.json", `{}`), history.ErrBadRunFile, []string{"store.json is not a final store read: missing cursor, max_token, token_counter, sink, balances"}},
		{"store.json without sink", with(goodRun(), "store.json", `{"cursor":2,"max_token":1,"token_counter":1,"balances":{}}`), history.ErrBadRunFile, []string{"missing sink"}},
		{"store.json null", with(goodRun(), "store.json", `null`), history.ErrBadRunFile, []string{"store.json"}},
		{"garbage schedule", with(goodRun(), "schedule.json", `garbage`), history.ErrBadRunFile, []string{"schedule.json is not a fault schedule"}},
		{"schedule an object", with(goodRun(), "schedule.json", `{"at_ns":1}`), history.ErrBadRunFile, []string{"schedule.json is not a fault schedule"}},
		{"schedule of numbers", with(goodRun(), "schedule.json", `[1,2]`), history.ErrBadRunFile, []string{"schedule.json"}},
		{"schedule step without kind", with(goodRun(), "schedule.json", `[{"at_ns":1}]`), history.ErrBadRunFile, []string{"step 0 is not a fault step"}},
		{"lease on a commit", with(goodRun(), "history/n1.jsonl", strings.Replace(n1Lines, `"events":2}`, `"events":2,"lease_ns":1900000000}`, 1)), history.ErrMalformed, []string{"n1.jsonl:3", "lease_ns 1900000000 on a commit"}},
		{"negative lease", with(goodRun(), "history/n1.jsonl", n1Lines+`{"id":"n1/a/3","type":"info","kind":"step-down","node":"n1","time":1700000000000000500,"token":1,"reason":"shutdown","lease_ns":-1}`+"\n"), history.ErrMalformed, []string{"n1.jsonl:5", "lease_ns -1"}},
		{"in effect on a commit", with(goodRun(), "history/n1.jsonl", strings.Replace(n1Lines, `"events":2}`, `"events":2,"in_effect_from":5,"in_effect_to":6}`, 1)), history.ErrMalformed, []string{"n1.jsonl:3", "only a fault's completion"}},
		{"in effect backwards", with(goodRun(), "faults.jsonl", strings.Replace(faultLines, `"fault":"pause"}
{"id":"f1","type":"ok","kind":"fault","node":"n1","time":1700000000000000350,"fault":"pause"}`, `"fault":"pause"}
{"id":"f1","type":"ok","kind":"fault","node":"n1","time":1700000000000000350,"fault":"pause","in_effect_from":7,"in_effect_to":6}`, 1)), history.ErrMalformed, []string{"faults.jsonl:2", "not an interval"}},
		{"two bad files", with(goodRun(), "history/n1.jsonl", "x\n", "history/n2.jsonl", "y\n"), history.ErrMalformed, []string{"n1.jsonl:1", "and 1 more files with errors"}},
		{"torn line in the middle", with(goodRun(), "history/n1.jsonl", n1Lines[:60]+"\n"+n1Lines), history.ErrMalformed, []string{"n1.jsonl:1"}},
		{"torn last audit line", with(goodRun(), "audit.jsonl", auditLine+"\n"+auditLine[:30]), history.ErrMalformed, []string{"audit.jsonl:2", "torn last line"}},
		{"history file a directory", with(goodRun(), "history/n2.jsonl", "\x00", "history/n2.jsonl/", ""), history.ErrBadInput, []string{"n2.jsonl is a directory"}},
		{"corrupt gzip history", with(goodRun(), "history/n1.jsonl", "\x00", "history/n2.jsonl.gz", "\x00"), history.ErrBadInput, []string{"n2.jsonl.gz"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := c.files
			dir := writeDir(t, files)
			if c.name == "corrupt gzip history" {
				b := testfiles.Gzip(t, []byte(n1Lines))
				if err := os.WriteFile(filepath.Join(dir, "history", "n2.jsonl.gz"), b[:len(b)-12], 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r, err := history.LoadRun(dir)
			if err == nil {
				t.Fatalf("loaded without error: %d events", r.Events.Len())
			}
			if !errors.Is(err, c.is) || !errors.Is(err, history.ErrBadInput) {
				t.Errorf("error %v: not %v and ErrBadInput", err, c.is)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") {
				t.Errorf("error is not one line: %q", msg)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	if _, err := history.LoadRun(t.TempDir()); !errors.Is(err, history.ErrNoRun) || !errors.Is(err, history.ErrBadInput) {
		t.Errorf("empty directory: %v", err)
	}
}

// TestLoadRunTornLastLine: a history or fault log whose last line was cut (a full
// disk) still loads; the torn line is dropped and reported.
func TestLoadRunTornLastLine(t *testing.T) {
	torn := `{"id":"n1/a/3","type":"invoke","kind":"lo`
	r, err := history.LoadRun(writeDir(t, with(goodRun(), "history/n1.jsonl", n1Lines+torn, "faults.jsonl", faultLines+`{"id":"f2","ty`)))
	if err != nil {
		t.Fatal(err)
	}
	if r.Events.Len() != 4 || len(r.Faults) != 2 {
		t.Errorf("%d events, %d faults; want 4 and 2", r.Events.Len(), len(r.Faults))
	}
	if len(r.Warnings) != 2 || !strings.Contains(r.Warnings[0], "n1.jsonl:5: torn last line dropped") || !strings.Contains(r.Warnings[1], "faults.jsonl:3") {
		t.Errorf("warnings %q", r.Warnings)
	}
	// A run with no faults has a schedule of null or [].
	for _, sched := range []string{"null", "[]\n"} {
		if _, err := history.LoadRun(writeDir(t, with(goodRun(), "schedule.json", sched))); err != nil {
			t.Errorf("schedule %q: %v", sched, err)
		}
	}
	// A whole last line without its newline is not torn.
	r, err = history.LoadRun(writeDir(t, with(goodRun(), "history/n1.jsonl", strings.TrimSuffix(n1Lines, "\n"))))
	if err != nil || r.Events.Len() != 4 || len(r.Warnings) != 0 {
		t.Errorf("last line without newline: %v, %d events, warnings %q", err, r.Events.Len(), r.Warnings)
	}
	// Read, the strict reader, still refuses it.
	if _, err := history.Read(strings.NewReader(n1Lines+torn), "h"); !errors.Is(err, history.ErrMalformed) {
		t.Errorf("Read of a torn line: %v", err)
	}
}

// TestLoadRunGzip: compressed history, fault and audit files read as the plain ones;
// when both exist, the plain one is read.
func TestLoadRunGzip(t *testing.T) {
	want, err := history.LoadRun(writeDir(t, goodRun()))
	if err != nil {
		t.Fatal(err)
	}
	zipped := with(goodRun(),
		"history/n1.jsonl", "\x00", "history/n1.jsonl.gz", n1Lines,
		"faults.jsonl", "\x00", "faults.jsonl.gz", faultLines,
		"audit.jsonl", "\x00", "audit.jsonl.gz", auditLine+"\n")
	dir := writeDir(t, zipped)
	got, err := history.LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if loc := got.Locate("n1/a/2"); len(loc) != 2 || !strings.HasSuffix(loc[0], "n1.jsonl.gz:3") {
		t.Errorf("Locate in a compressed file: %q", loc)
	}
	got.Dir = want.Dir
	if !reflect.DeepEqual(got, want) {
		t.Errorf("compressed run differs:\n%+v\n%+v", got, want)
	}
	// Both: the plain file wins (the compressed one here is garbage).
	both := with(goodRun(), "history/n1.jsonl.gz", "x", "faults.jsonl.gz", "x", "audit.jsonl.gz", "x")
	dir = writeDir(t, both)
	for _, f := range []string{"history/n1.jsonl.gz", "faults.jsonl.gz", "audit.jsonl.gz"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("not gzip"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err = history.LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	got.Dir = want.Dir
	if !reflect.DeepEqual(got, want) {
		t.Errorf("with both plain and compressed files:\n%+v\n%+v", got, want)
	}
	// A torn last line inside a compressed history is tolerated too.
	got, err = history.LoadRun(writeDir(t, with(zipped, "history/n1.jsonl.gz", n1Lines+`{"id":"n1/a/3","ty`)))
	if err != nil || len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "n1.jsonl.gz:5") {
		t.Errorf("torn line in a compressed history: %v, %q", err, got.Warnings)
	}
}

func TestLocate(t *testing.T) {
	r, err := history.LoadRun(writeDir(t, goodRun()))
	if err != nil {
		t.Fatal(err)
	}
	loc := r.Locate("n1/a/1")
	if len(loc) != 2 || !strings.HasSuffix(loc[0], filepath.Join("history", "n1.jsonl")+":1") || !strings.HasSuffix(loc[1], "n1.jsonl:2") {
		t.Errorf("Locate: %q", loc)
	}
	if loc := r.Locate("f1"); len(loc) != 2 || !strings.HasSuffix(loc[0], "faults.jsonl:1") {
		t.Errorf("Locate of a fault: %q", loc)
	}
	if loc := (&history.Run{}).Locate("x"); loc != nil {
		t.Errorf("Locate without a directory: %q", loc)
	}
}

// TestLoadRunMemoryBoundedByInput: blank lines allocate no event, and a compressed
// file that expands far beyond any history is bad input.
func TestLoadRunMemoryBoundedByInput(t *testing.T) {
	blank := strings.Repeat("\n", 16<<20)
	dir := writeDir(t, with(goodRun(), "history/n2.jsonl", blank))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err := history.LoadRun(dir)
	runtime.ReadMemStats(&after)
	if err != nil || r.Events.Len() != 4 {
		t.Fatalf("16 MB of blank lines: %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 128<<20 { // was 16M events, 2.7 GB
		t.Errorf("16 MB of blank lines made LoadRun allocate %d MB", alloc>>20)
	}
	line := strings.Split(n1Lines, "\n")[0] + "\n"
	bomb := strings.Repeat(line, (64<<20)/len(line)) // 64 MB of one line: a thousandfold
	_, err = history.LoadRun(writeDir(t, with(goodRun(), "history/n1.jsonl", "\x00", "history/n1.jsonl.gz", bomb)))
	if !errors.Is(err, history.ErrBadInput) || !strings.Contains(err.Error(), "decompresses to more than") {
		t.Errorf("a gzip bomb: %v", err)
	}
}
