//go:build chaos

package soak_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/soak"
	"github.com/fenceline/fenceline/internal/testbin"
)

func TestMain(m *testing.M) { testbin.Main(m) }

func readSummary(t *testing.T, path string) soak.Summary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s soak.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// The real thing: `fenceline soak` runs two 5-second all-fault chaos runs through the
// real binary, sums them up, and a second invocation resumes (runs nothing).
func TestSoakEndToEnd(t *testing.T) {
	bin := testbin.Fenceline(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "soak", "--seeds", "2", "--duration", "5s", "--seed", "7", "--out", out)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("soak of 2 x 5s: %s", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("fenceline soak: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "2 / 0 / 0") {
		t.Errorf("no table of 2 valid runs:\n%s", stdout.String())
	}
	s := readSummary(t, filepath.Join(out, "soak.json"))
	if s.Verdict != checker.Valid || len(s.Runs) != 2 || s.Lost != 0 || s.Duplicated != 0 || s.CountsUnknown != 0 {
		t.Fatalf("soak.json: verdict %s, %d runs, %d lost, %d duplicated, %d without counts", s.Verdict, len(s.Runs), s.Lost, s.Duplicated, s.CountsUnknown)
	}
	for i, r := range s.Runs {
		if r.Index != i || r.Seed != int64(7+i) || r.ExitCode != 0 || r.Events <= 0 || r.RunnerPeakRSS < 5e6 || r.RunnerPeakRSS > 2e9 || r.Faults < 0 ||
			r.RedisPeakMemory < 100e3 || r.RedisPeakMemory > 2e9 {
			t.Errorf("run %d: %+v", i, r)
		}
	}
	if s.Events <= 0 || s.RunnerPeakRSS <= 0 || len(s.Binaries) != 1 {
		t.Errorf("totals: %d events, runner peak %d, binaries %v", s.Events, s.RunnerPeakRSS, s.Binaries)
	}

	// Resume: everything is finished, nothing runs again.
	stdout.Reset()
	stderr.Reset()
	cmd = exec.Command(bin, "soak", "--seeds", "2", "--duration", "5s", "--seed", "7", "--out", out, "--shard", "2/2")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start = time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("resumed soak: %v\n%s", err, stderr.String())
	}
	if d := time.Since(start); d > 4*time.Second || strings.Contains(stderr.String(), "msg=run-starting") {
		t.Errorf("resumed soak took %s and said:\n%s", d, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(out, "soak-shard-2-of-2.md")); err != nil {
		t.Error(err)
	}

	// soak-report reads the directory back: the same verdict, exit 0.
	cmd = exec.Command(bin, "soak-report", out)
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "VALID") {
		t.Errorf("soak-report: %v\n%s", err, b)
	}
}

// Ctrl-C stops the current run cleanly (it gets SIGINT and is waited for), still
// prints the table of what finished, starts nothing else, and exits 3: the soak is
// not complete.
func TestSoakInterrupt(t *testing.T) {
	bin := testbin.Fenceline(t)
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "soak", "--seeds", "3", "--duration", "30s", "--out", out)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// Wait until the first run is under way: its run directory has run.json.
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, _ := filepath.Glob(filepath.Join(out, "run-000", "*", "history"))
		if len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the first run did not start:\n%s", stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(3 * time.Second)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(120 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("soak did not stop within 120s of SIGINT:\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("interrupted soak: %v, want exit 3\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "soak UNKNOWN") || !strings.Contains(stdout.String(), "runs valid / invalid / unknown") {
		t.Errorf("no table after the interrupt:\n%s", stdout.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "run-000", soak.MarkerFile))
	if err != nil {
		t.Fatal(err)
	}
	var r soak.Record
	if err := json.Unmarshal(b, &r); err != nil || !r.Interrupted || r.ExitCode != 3 {
		t.Errorf("marker of the interrupted run: %+v, %v; want interrupted, exit 3 (the run got SIGINT and finished its cleanup)", r, err)
	}
	if _, err := os.Stat(filepath.Join(out, "run-001")); err == nil {
		t.Error("a run started after the interrupt")
	}
	// The run cleaned up: no process is left that was started for it.
	if pids := processesMentioning(out); len(pids) > 0 {
		t.Errorf("processes left behind: %v", pids)
	}
}

// A run that takes longer than its timeout is stopped like on Ctrl-C and counted as
// unknown, and the soak goes on to the next run.
func TestSoakRunTimeout(t *testing.T) {
	bin := testbin.Fenceline(t)
	out := t.TempDir()
	cfg := soak.Config{Binary: bin, Out: out, Runs: 2, Duration: time.Minute, Seed0: 3,
		Shard: soak.Shard{I: 1, N: 2}, RunTimeout: 4 * time.Second}
	start := time.Now()
	s, err := soak.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 50*time.Second {
		t.Errorf("a run of 1m with a 4s timeout took %s", d)
	}
	if len(s.Runs) != 1 || s.Unknown != 1 || s.Verdict != checker.Unknown || !strings.Contains(s.Runs[0].Reason, "longer than 4s") {
		t.Fatalf("summary: %+v", s)
	}
	if pids := processesMentioning(out); len(pids) > 0 {
		t.Errorf("processes left behind: %v", pids)
	}
}

// processesMentioning lists the processes whose command line mentions s.
func processesMentioning(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(string(b), s) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
