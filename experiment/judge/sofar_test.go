package judge

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/history"
)

// runSoFar copies the stored run src into a directory as a running run looks: no final
// read (store.json, audit.jsonl) and run.json still marked unfinished. It returns the
// directory and the store src had, whose audit stream SoFar is given as the harness's
// snapshot.
func runSoFar(t *testing.T, src string) (string, *history.Store) {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	full, err := history.LoadRun(dst)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{history.StoreFile, history.AuditFile, "expected.json"} {
		if err := os.Remove(filepath.Join(dst, f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	var info history.RunInfo
	b, err := os.ReadFile(filepath.Join(dst, history.RunInfoFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	info.End, info.HealTime, info.Interrupted = 0, 0, "the run did not finish"
	if err := history.WriteJSON(filepath.Join(dst, history.RunInfoFile), info); err != nil {
		t.Fatal(err)
	}
	return dst, full.Store
}

// TestSoFar: the check of a running run finds a stale write the store accepted, also
// when the run's final store is far behind (it is not judged), finds nothing in the
// reference's run, and stays silent on a directory with no history yet and on a
// violation only the final read shows (a lost event).
func TestSoFar(t *testing.T) {
	ctx := context.Background()
	dir, st := runSoFar(t, "../../checker/testdata/real/no-fence-delay-invalid")
	if got := SoFar(ctx, dir, st); !strings.Contains(got, " at t+") {
		t.Errorf("no-fence-delay-invalid: %q, want a violation and its time", got)
	}
	if got := SoFar(ctx, dir, nil); got != "" {
		// Without the audit stream its stale write is a commit of unknown outcome.
		t.Errorf("no-fence-delay-invalid without the audit stream: %q, want nothing", got)
	}
	dir, st = runSoFar(t, "../../checker/testdata/real/reference-valid")
	if got := SoFar(ctx, dir, st); got != "" {
		t.Errorf("reference-valid: %q, want nothing", got)
	}
	// A snapshot read early in the run: its cursor and token counter are behind what
	// the histories acknowledge since, which is no violation while the run goes on.
	early := *st
	early.Cursor, early.MaxToken, early.TokenCounter = 0, 0, 0
	if got := SoFar(ctx, dir, &early); got != "" {
		t.Errorf("reference-valid with an early store: %q, want nothing", got)
	}
	dir, st = runSoFar(t, "../../checker/testdata/lost-event")
	if got := SoFar(ctx, dir, st); got != "" {
		t.Errorf("lost-event (exactly-once, which needs the final read): %q, want nothing", got)
	}
	if got := SoFar(ctx, t.TempDir(), nil); got != "" {
		t.Errorf("empty directory: %q, want nothing", got)
	}
}

// TestSoFarReadsAConsistentCut: the nodes' files are read one after another while the
// nodes write on, so a file read late can hold a commit refused as stale whose cause,
// a newer leader's commit, the file read earlier does not yet hold. Events stamped after
// the check began are left out: without the cut this prefix is a linearizability
// violation (a false alarm of the reference, seen eight mutants at once on two cores).
func TestSoFarReadsAConsistentCut(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	t0 := now.Add(-10 * time.Second).UnixNano()
	at := func(s float64) int64 { return t0 + int64(s*1e9) }
	info := history.RunInfo{Seed: 1, Nodes: []string{"n1", "n2"}, Workload: "listener", LeaseTTL: 2 * time.Second,
		Duration: time.Minute, Start: t0, Persistence: true, Election: "fenceline"}
	if err := history.WriteJSON(filepath.Join(dir, history.RunInfoFile), info); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "faults.jsonl"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, history.ScheduleFile), []byte("[]"), 0o644)
	os.MkdirAll(filepath.Join(dir, "history"), 0o755)
	files := map[string][]history.Event{
		"n1": {
			{ID: "n1/a/1", Type: history.Invoke, Kind: history.KindAcquire, Node: "n1", Time: at(0.10)},
			{ID: "n1/a/1", Type: history.OK, Kind: history.KindAcquire, Node: "n1", Time: at(0.11), Token: 1},
			{ID: "n1/c/1", Type: history.Invoke, Kind: history.KindLoad, Node: "n1", Time: at(0.20)},
			{ID: "n1/c/1", Type: history.OK, Kind: history.KindLoad, Node: "n1", Time: at(0.21)},
			{ID: "n1/c/2", Type: history.Invoke, Kind: history.KindCommit, Node: "n1", Time: at(0.30), Token: 1, From: 0, To: 10, Events: 10},
			{ID: "n1/c/2", Type: history.OK, Kind: history.KindCommit, Node: "n1", Time: at(0.31), Token: 1, From: 0, To: 10, Events: 10},
			// A late commit, refused because n2 committed under token 2 while the check
			// read n2's file first: its answer is stamped after the check began.
			{ID: "n1/c/3", Type: history.Invoke, Kind: history.KindCommit, Node: "n1", Time: at(9.0), Token: 1, From: 10, To: 20, Events: 10},
			{ID: "n1/c/3", Type: history.Fail, Kind: history.KindCommit, Node: "n1", Time: now.Add(time.Second).UnixNano(), Token: 1, From: 10, To: 20, Events: 10, Error: history.ErrStaleToken},
		},
		"n2": {
			{ID: "n2/a/1", Type: history.Invoke, Kind: history.KindAcquire, Node: "n2", Time: at(8.0)},
			{ID: "n2/a/1", Type: history.OK, Kind: history.KindAcquire, Node: "n2", Time: at(8.01), Token: 2},
			{ID: "n2/c/1", Type: history.Invoke, Kind: history.KindLoad, Node: "n2", Time: at(8.1)},
			{ID: "n2/c/1", Type: history.OK, Kind: history.KindLoad, Node: "n2", Time: at(8.11), Token: 1, Cursor: 10},
		},
	}
	for node, evs := range files {
		var b []byte
		for _, e := range evs {
			line, _ := json.Marshal(e)
			b = append(append(b, line...), '\n')
		}
		if err := os.WriteFile(filepath.Join(dir, "history", node+".jsonl"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := SoFar(context.Background(), dir, nil); got != "" {
		t.Errorf("a prefix read across a leader change: %q, want nothing", got)
	}
}
