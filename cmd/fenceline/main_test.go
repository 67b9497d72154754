package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
	"github.com/fenceline/fenceline/workloads/ledger"
)

func runCmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// storedRun writes files (name: value) as JSON into a new temporary directory, as a
// stored run's run.json, schedule.json or results.json, and returns the directory.
func storedRun(t *testing.T, files map[string]any) string {
	t.Helper()
	dir := t.TempDir()
	for name, v := range files {
		if err := history.WriteJSON(filepath.Join(dir, name), v); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// usageCase is a command line that must be refused as a usage error whose message
// holds want.
type usageCase struct {
	args []string
	want string
}

// wantUsage runs fenceline with prefix and then each case's args, and wants exit 2
// with the case's want on stderr, and with oneLine that stderr is one line.
func wantUsage(t *testing.T, prefix []string, oneLine bool, cases []usageCase) {
	t.Helper()
	for _, tc := range cases {
		args := append(slices.Clone(prefix), tc.args...)
		code, _, stderr := runCmd(args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || oneLine && strings.Count(stderr, "\n") != 1 {
			t.Errorf("fenceline %s: exit %d, stderr %q; want exit 2 and %q (one line: %v)", strings.Join(args, " "), code, stderr, tc.want, oneLine)
		}
	}
}

// Bad input gets a clear error and exit code 2, never a panic.
func TestUsageErrors(t *testing.T) {
	wantUsage(t, nil, false, []usageCase{
		{nil, "Usage: fenceline <command>"},
		{[]string{"explode"}, `unknown command "explode"`},
		{[]string{"node"}, "--id is required"},
		{[]string{"node", "--id", "n1", "--workload", "kv"}, `unknown workload "kv"`},
		{[]string{"check"}, "fenceline check: want RUN_DIR, got 0 arguments"},
		{[]string{"check", "a", "b"}, "want RUN_DIR, got 2 arguments"},
		{[]string{"check", "--json", "--write", "a"}, "do not go together"},
		{[]string{"status", "--timeout", "0"}, "need --timeout > 0"},
		{[]string{"status", "--timeout", "-1s"}, "need --timeout > 0"},
		{[]string{"status", "--election", "x{y}"}, "must not contain '{' or '}'"},
		{[]string{"node", "--id", "n1", "--election", "x{y}"}, "must not contain '{' or '}'"},
		{[]string{"node", "--id", "n1", "--control", "127.0.0.1:99999"}, "invalid port"},
		{[]string{"node", "--id", "n1", "--control", "999.1.1.1:1"}, `--control "999.1.1.1:1"`},
		{[]string{"node", "--id", "n1", "--control", "127.0.0.1:99999", "--check"}, "invalid port"},
		{[]string{"version", "extra"}, `unexpected argument "extra"`},
		{[]string{"check", "/nonexistent/run"}, "is not a run directory"},
		{[]string{"source", "--rate", "-1"}, "Rate"},
	})
}

// A malformed history is bad input: exit 2, naming the file and the line.
func TestCheckMalformedHistory(t *testing.T) {
	dir := storedRun(t, map[string]any{history.RunInfoFile: history.RunInfo{Workload: "listener"}})
	os.MkdirAll(filepath.Join(dir, history.HistoryDir), 0o755)
	bad := `{"id":"a","type":"invoke","kind":"load","node":"n1","time":1}` + "\n" + `{"id":"a","type":"ok",` + "\n"
	if err := os.WriteFile(filepath.Join(dir, history.HistoryDir, "n1.jsonl"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd("check", dir)
	if code != exitUsage || !strings.Contains(stderr, "n1.jsonl:2") {
		t.Fatalf("exit %d, stderr %q; want 2 naming n1.jsonl:2", code, stderr)
	}
}

// The checker's verdict is the exit code of `fenceline check`: the reports package's
// stored failing run (a no-fence variant) exits 1 and the passing one 0.
func TestCheckExitCodes(t *testing.T) {
	for name, want := range map[string]int{"pass": exitOK, "fail": exitInvalid} {
		src := filepath.Join("..", "..", "reports", "testdata", "runs", name)
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := runCmd("check", dir)
		if code != want {
			t.Errorf("%s: exit %d, want %d\n%s%s", name, code, want, stdout, stderr)
		}
	}
}

// fenceline status reads the lease and the cursor record.
func TestStatus(t *testing.T) {
	srv := redisserver.New(t)
	ctx := context.Background()
	c := election.NewClient(srv.Addr())
	defer c.Close()
	if err := c.Set(ctx, election.LockKey(""), election.LockValue("n2", 7), 0).Err(); err != nil {
		t.Fatal(err)
	}
	c.Set(ctx, election.TokenKey(""), 7, 0)
	store, err := listener.NewRedisStore(c, listener.RedisConfig[source.Event]{Node: "n2", Effects: ledger.RedisEffects})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Commit(ctx, 7, 0, source.Range(0, 5)); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCmd("status", "--redis", srv.Addr())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got statusOutput
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	want := statusOutput{Election: "fenceline", Leader: "n2", Token: 7, TokenCounter: 7, Cursor: 5, MaxToken: 7}
	got.LeaseTTLms = 0
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}

	srv.Kill()
	code, _, stderr = runCmd("status", "--redis", srv.Addr(), "--timeout", "1s")
	if code != exitUnknown || !strings.Contains(stderr, srv.Addr()) {
		t.Fatalf("unreachable redis: exit %d, stderr %q; want 3 naming the address", code, stderr)
	}
}
