package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/harness"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/testbin"
	"github.com/fenceline/fenceline/reports"
	"github.com/fenceline/fenceline/source"
)

// A Redis outage the harness did not cause (here Redis is stopped behind its back) is
// noticed by the harness's own probe, recorded as a fault of kind redis-unavailable, and
// the failover window it opens is attributed to it.
func TestRedisOutageNotInjected(t *testing.T) {
	cfg := config(t, testbin.Fenceline(t), 14*time.Second, 3)
	cfg.Nemeses = nil
	start := cfg.Start
	addr := make(chan string, 1)
	cfg.Start = func(ctx context.Context, spec backend.Spec) (backend.Backend, error) {
		c, err := start(ctx, spec)
		if err == nil {
			addr <- c.RedisAddr()
		}
		return c, err
	}
	go func() {
		a := <-addr
		time.Sleep(5 * time.Second)
		pid := redisPID(t, a)
		if pid == 0 {
			return
		}
		syscall.Kill(pid, syscall.SIGSTOP)
		time.Sleep(4 * time.Second)
		syscall.Kill(pid, syscall.SIGCONT)
	}()
	if err := harness.Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	run, err := history.LoadRun(cfg.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var begun, ended bool
	for _, f := range run.Faults {
		if f.Fault != harness.RedisUnavailable {
			continue
		}
		switch f.Type {
		case history.Invoke:
			begun = true
		case history.OK:
			ended = strings.Contains(f.Reason, "not injected by the harness: Redis unavailable")
		}
	}
	if !begun || !ended {
		t.Fatalf("outage recorded: begun %v, ended %v; faults %+v", begun, ended, run.Faults)
	}
	res, err := checker.Check(context.Background(), run, checker.Options{ExpectedBalances: source.Balances, OutDir: cfg.Dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != checker.Valid {
		t.Errorf("verdict %s, want valid", res.Verdict)
	}
	var attributed bool
	for _, w := range res.Windows {
		attributed = attributed || w.Fault == harness.RedisUnavailable
	}
	if !attributed {
		t.Errorf("no failover window attributed to the outage: %+v", res.Windows)
	}
	if err := reports.Write(run, res); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(cfg.Dir, reports.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "no injected fault (Redis unavailable)") {
		t.Errorf("report.md does not label the outage as a fault the harness did not inject")
	}
}

// redisPID finds the redis-server listening at addr among the processes: Redis sets its
// process title to "redis-server ADDR".
func redisPID(t *testing.T, addr string) int {
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		cmd := string(b)
		if strings.Contains(cmd, "redis-server") && strings.Contains(cmd, addr) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	t.Errorf("no redis-server at %s found", addr)
	return 0
}
