package checker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testfiles"
)

// fuzzBound is how long loading and checking an input of n bytes may take: a
// generous constant for a loaded machine plus a term proportional to the input.
func fuzzBound(n int) time.Duration {
	return 20*time.Second + time.Duration(n)*time.Microsecond
}

// judgeDir loads and checks a run directory as `fenceline check` does, within the
// bound, and enforces what any input must get: no panic, no hang, either a verdict or
// a one-line error of the bad-input kind (exit 2). It returns the run and result when
// there is a verdict.
func judgeDir(t *testing.T, dir string, size int) (*history.Run, *Result) {
	t.Helper()
	type out struct {
		run *history.Run
		res *Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		run, err := history.LoadRun(dir)
		if err != nil {
			ch <- out{err: err}
			return
		}
		res, err := Check(context.Background(), run, Options{
			ExpectedBalances: testBalances, Parallelism: 1, PieceTimeout: 2 * time.Second,
			MaxPieceOps: 4000, PieceOps: 200, OutDir: dir,
		})
		ch <- out{run, res, err}
	}()
	var o out
	select {
	case o = <-ch:
	case <-time.After(fuzzBound(size)):
		t.Fatalf("no verdict within %v for %d bytes", fuzzBound(size), size)
	}
	if o.err != nil {
		if !errors.Is(o.err, history.ErrBadInput) && !errors.Is(o.err, ErrBadHistory) {
			t.Fatalf("an error that is not bad input: %v", o.err)
		}
		if strings.Contains(o.err.Error(), "\n") {
			t.Fatalf("a multi-line error: %q", o.err)
		}
		return nil, nil
	}
	switch o.res.Verdict {
	case Valid, Invalid, Unknown:
	default:
		t.Fatalf("verdict %q", o.res.Verdict)
	}
	return o.run, o.res
}

// agreeWithPorcupine checks that the linearizability verdict is porcupine's on the
// whole uncut history (with the final read, as Check adds it), wherever porcupine
// finishes.
func agreeWithPorcupine(t *testing.T, run *history.Run, res *Result) {
	t.Helper()
	c := res.Check(CheckLinearizability)
	if c == nil || c.Verdict == Unknown {
		return
	}
	p, err := parse(run)
	if err != nil {
		t.Fatalf("parse after a verdict: %v", err)
	}
	if st := run.Store; st != nil {
		p.ops = append(p.ops, op{call: p.end + 1, ret: never, a: st.Cursor, b: st.MaxToken, ev: -1, done: -1, audit: -1, kind: kLoad, out: outOK, final: true})
	}
	ops := linOps(p)
	if len(ops) > 60 {
		return // porcupine uncut would take too long to be a fuzz oracle
	}
	whole := porcupine.CheckOperationsTimeout(registerModel(regState{}, nil), toPorcupine(ops), 2*time.Second)
	if whole == porcupine.Unknown {
		return
	}
	if want := map[porcupine.CheckResult]Verdict{porcupine.Ok: Valid, porcupine.Illegal: Invalid}[whole]; c.Verdict != want {
		t.Fatalf("linearizability %s (%s), porcupine on the uncut history %s\n%s", c.Verdict, c.Message, whole, dumpOps(ops, regState{}))
	}
}

// runFiles are the files of a run directory a fuzz input sets.
var runFiles = []string{
	history.RunInfoFile, "history/n1.jsonl", "history/n2.jsonl.gz", history.FaultsFile,
	history.StoreFile, history.AuditFile, history.ScheduleFile,
}

func writeFiles(t *testing.T, dir string, contents []string) int {
	t.Helper()
	size := 0
	for i, name := range runFiles {
		c := contents[i]
		if c == "\x00" {
			continue // absent
		}
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		data := []byte(c)
		if strings.HasSuffix(name, ".gz") {
			data = testfiles.Gzip(t, data)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		size += len(c)
	}
	return size
}

// FuzzRunDir builds whole run directories from raw file contents: run.json, two
// histories (one compressed), faults, store.json, the audit and the schedule, seeded
// with the golden runs. Whatever they hold: no panic, no hang, a verdict or a
// bad-input error, and porcupine's verdict where it finishes.
func FuzzRunDir(f *testing.F) {
	gold, _ := filepath.Glob(filepath.Join("testdata", "*", history.RunInfoFile))
	for _, g := range gold {
		dir := filepath.Dir(g)
		read := func(name string) string {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				return "\x00"
			}
			return string(b)
		}
		n1, n2 := read("history/n1.jsonl"), read("history/n2.jsonl")
		if n3 := read("history/n3.jsonl"); n3 != "\x00" {
			n2 += n3
		}
		f.Add(read(history.RunInfoFile), n1, n2, read(history.FaultsFile), read(history.StoreFile), read(history.AuditFile), read(history.ScheduleFile))
	}
	small := `{"id":"a","type":"invoke","kind":"load","node":"n1","time":1700000000000000001}
{"id":"a","type":"ok","kind":"load","node":"n1","time":1700000000000000002,"cursor":0}
{"id":"b","type":"invoke","kind":"commit","node":"n1","time":1700000000000000003,"token":1,"from":0,"to":2,"events":2}
{"id":"b","type":"ok","kind":"commit","node":"n1","time":1700000000000000004,"token":1,"from":0,"to":2,"events":2}
`
	f.Add(`{"start":1700000000000000000}`, small, "\x00", "\x00", `{"cursor":100000000,"max_token":1,"token_counter":1,"sink":[1,2],"balances":{}}`, `{"op":"b","node":"n1","token":1,"from":0,"to":2,"result":"ok"}`, "[]")
	f.Add(`{"start":1700000000000000000}`, small+`{"id":"c","type":"invoke","kind":"load","node":"n1","time":9223372036854775807}`, "\x00", "\x00", "{}", "\x00", "garbage")
	f.Add(`{"start":1700000000000000000,"end":1}`, small[:100], "", "", `{"cursor":5188320493577,"max_token":1,"token_counter":1,"sink":[],"balances":{}}`, "", `[{"at_ns":1,"kind":"kill"}]`)
	f.Fuzz(func(t *testing.T, runJSON, n1, n2, faults, store, audit, schedule string) {
		dir := t.TempDir()
		size := writeFiles(t, dir, []string{runJSON, n1, n2, faults, store, audit, schedule})
		if run, res := judgeDir(t, dir, size); res != nil {
			agreeWithPorcupine(t, run, res)
		}
	})
}

// FuzzRegisterRunDir builds whole, well-formed run directories of register histories
// (heavy concurrency, coarse clocks, unknown outcomes, a corrupted outcome) from a
// seed, writes them to disk, and sometimes cuts or flips a byte of one file. A
// well-formed directory must get a verdict, and its linearizability verdict must be
// porcupine's on the uncut history.
func FuzzRegisterRunDir(f *testing.F) {
	for i := range 20 {
		f.Add(uint64(i), uint8(10+i), uint16(0), uint8(0))
	}
	f.Add(uint64(99), uint8(40), uint16(300), uint8(1))
	f.Add(uint64(98), uint8(30), uint16(77), uint8(2))
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, at uint16, damage uint8) {
		rng := rand.New(rand.NewPCG(seed, 17))
		ops, _ := registerHistory(rng, 3+int(n)%40)
		const base = int64(1_700_000_000_000_000_000)
		var lines [2]strings.Builder
		enc := func(w *strings.Builder, e history.Event) {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(b)
			w.WriteByte('\n')
		}
		for i, o := range ops {
			node := fmt.Sprintf("n%d", 1+int(o.node)%2)
			w := &lines[int(o.node)%2]
			id := fmt.Sprintf("%s/x/%d", node, i)
			inv := history.Event{ID: id, Type: history.Invoke, Kind: history.KindLoad, Node: node, Time: base + 1 + o.call}
			done := history.Event{ID: id, Type: history.OK, Kind: history.KindLoad, Node: node, Time: base + 1 + o.ret}
			if o.commit {
				inv.Kind, inv.Token, inv.From, inv.To = history.KindCommit, o.token, o.a, o.b
				done.Kind, done.Token, done.From, done.To = history.KindCommit, o.token, o.a, o.b
				switch o.out {
				case outStale:
					done.Type, done.Error = history.Fail, history.ErrStaleToken
				case outConflict:
					done.Type, done.Error = history.Fail, history.ErrCursorConflict
				}
			} else {
				done.Cursor, done.Token = o.a, o.b
			}
			enc(w, inv)
			if o.ret != never {
				enc(w, done)
			}
		}
		runJSON := fmt.Sprintf(`{"seed":%d,"nodes":["n1","n2"],"workload":"register","start":%d}`, seed, base)
		contents := []string{runJSON, lines[0].String(), lines[1].String(), "\x00", "\x00", "\x00", "[]"}
		if damage%4 != 0 {
			// Cut or flip a byte of one file: malformed input must be a bad-input error.
			k := int(damage) % 3
			if c := contents[k]; len(c) > 0 {
				j := int(at) % len(c)
				if damage%4 == 1 {
					contents[k] = c[:j]
				} else {
					contents[k] = c[:j] + string(c[j]^0x5a) + c[j+1:]
				}
			}
		}
		dir := t.TempDir()
		size := writeFiles(t, dir, contents)
		run, res := judgeDir(t, dir, size)
		if damage%4 == 0 && res == nil {
			t.Fatal("a well-formed run directory got no verdict")
		}
		if res != nil {
			agreeWithPorcupine(t, run, res)
		}
	})
}
