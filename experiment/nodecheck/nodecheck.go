//go:build chaos

// Package nodecheck is `fenceline node-check`: the conformance check of a node written in
// any language against the node protocol (docs/node-protocol.md). It starts one node with
// the protocol's environment against a real redis-server and event source (behind
// toxiproxy, as in a chaos run), watches its /status, stops it with SIGTERM, and then
// reads what it recorded: every history line is parsed on its own and every problem is
// reported with its line number; the run is then judged by the checker like any chaos
// run. It exists in chaos builds only.
package nodecheck

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fenceline/fenceline/node"

	"github.com/fenceline/fenceline/backend"
	"github.com/fenceline/fenceline/backend/proc"
	"github.com/fenceline/fenceline/experiment/judge"
	"github.com/fenceline/fenceline/harness/finalread"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/exitcode"
)

// Config is one conformance check.
type Config struct {
	// Cmd is the node's command line (run with /bin/sh -c "exec Cmd"). Required.
	Cmd string
	// Binary is the fenceline binary that serves the event source. Required.
	Binary string
	// LeaseTTL is the lease the node is given; Lead how long it is watched (it must lead
	// and commit within that time).
	LeaseTTL, Lead time.Duration
	// Dir receives the run directory (history, logs, report). Required.
	Dir string
}

// Prepare checks cfg as `fenceline node-check` gives it and fills in its defaults: the
// Binary is this executable, the Dir a new temporary directory (kept). Its errors are
// usage errors.
func (cfg *Config) Prepare() error {
	if strings.TrimSpace(cfg.Cmd) == "" || cfg.LeaseTTL < 100*time.Millisecond || cfg.Lead <= 0 {
		return errors.New("need --node-cmd, --lease-ttl >= 100ms and --lead > 0")
	}
	var err error
	if cfg.Binary == "" {
		cfg.Binary, err = os.Executable()
	}
	if err == nil && cfg.Dir == "" {
		cfg.Dir, err = os.MkdirTemp("", "fenceline-node-check-")
	}
	return err
}

// nodeID is the one node a check starts.
const nodeID = "n1"

// Run checks the node and prints, line by line, what it found. It returns 0 when the
// node conforms, 1 when it recorded or answered something the protocol does not allow
// (or the checker finds its run invalid), 2 when it could not be started (it exited at
// once, never wrote its control address, never answered /health), 3 when the check
// itself could not be completed. It blocks.
func Run(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	c := &check{out: stdout}
	fmt.Fprintf(stdout, "fenceline node-check: %s as node %s, lease %s\n", cfg.Cmd, nodeID, cfg.LeaseTTL)
	start := time.Now()
	l, err := proc.Start(ctx, proc.Config{Binary: cfg.Binary, Spec: backend.Spec{
		Dir: cfg.Dir, Nodes: 1, Node: backend.NodeOptions{Cmd: cfg.Cmd, LeaseTTL: cfg.LeaseTTL, Chaos: true},
	}})
	if err != nil {
		fmt.Fprintf(stderr, "fenceline node-check: %v\n", err)
		return exitcode.Usage
	}
	defer l.Close(context.Background())
	c.ok("started; wrote its control address (%s) to FENCELINE_ADDR_FILE; GET /health answered 200", l.ControlAddr(nodeID))
	c.watchStatus(ctx, l, cfg.Lead)
	if err := l.StopNode(ctx, nodeID); err != nil {
		c.bad("SIGTERM: %v", err)
	} else {
		c.ok("exited on SIGTERM")
	}
	end := time.Now()
	st, err := finalread.ReadStore(ctx, l.RedisAddr(), "fenceline")
	if err != nil {
		c.bad("the store it left does not match the key layout (README, Redis key layout): %v", err)
	}
	histPath := filepath.Join(cfg.Dir, history.HistoryDir, nodeID+".jsonl")
	c.history(histPath, start.UnixNano(), end.UnixNano())
	if st == nil || c.problems > 0 {
		return c.verdict(exitcode.Invalid)
	}
	// The run as a chaos run without faults: the checker has the last word.
	info := history.RunInfo{Seed: 1, Nodes: []string{nodeID}, Workload: "listener", Backend: "local",
		Nemeses: []string{}, LeaseTTL: cfg.LeaseTTL, Duration: end.Sub(start), Start: start.UnixNano(),
		HealTime: start.UnixNano(), End: end.UnixNano(), Persistence: true, Election: "fenceline",
		Target: "node-cmd: " + cfg.Cmd}
	if err := history.WriteJSON(filepath.Join(cfg.Dir, history.RunInfoFile), info); err != nil {
		fmt.Fprintf(stderr, "fenceline node-check: %v\n", err)
		return exitcode.Unknown
	}
	if err := history.WriteStore(cfg.Dir, st); err != nil {
		fmt.Fprintf(stderr, "fenceline node-check: %v\n", err)
		return exitcode.Unknown
	}
	code, _ := judge.Dir(cfg.Dir, io.Discard, stderr)
	switch code {
	case exitcode.OK:
		c.ok("the checker finds its run valid (report: %s)", filepath.Join(cfg.Dir, "report.md"))
	case exitcode.Invalid:
		c.bad("the checker finds its run invalid (report: %s)", filepath.Join(cfg.Dir, "report.md"))
	default:
		c.bad("the checker could not judge its run (exit %d; report: %s)", code, filepath.Join(cfg.Dir, "report.md"))
	}
	return c.verdict(exitcode.Invalid)
}

// check accumulates findings.
type check struct {
	out      io.Writer
	problems int
}

func (c *check) ok(format string, a ...any) { fmt.Fprintf(c.out, "  ✓ "+format+"\n", a...) }

// maxShown caps the problems printed: a defect repeats on every line.
const maxShown = 20

func (c *check) bad(format string, a ...any) {
	c.problems++
	if c.problems <= maxShown {
		fmt.Fprintf(c.out, "  ✗ "+format+"\n", a...)
	}
}

func (c *check) verdict(failed int) int {
	if c.problems > maxShown {
		fmt.Fprintf(c.out, "  … and %d more problems\n", c.problems-maxShown)
	}
	if c.problems == 0 {
		fmt.Fprintln(c.out, "conforms")
		return exitcode.OK
	}
	fmt.Fprintf(c.out, "does not conform: %d problems\n", c.problems)
	return failed
}

// watchStatus polls /status for up to lead: it must answer with the node's id and a
// known role, and report leading under a token, and commits.
func (c *check) watchStatus(ctx context.Context, l *proc.Backend, lead time.Duration) {
	deadline := time.Now().Add(lead)
	var last node.Status
	var lastErr error
	answered, led := false, false
	for time.Now().Before(deadline) && ctx.Err() == nil {
		st, err := l.NodeStatus(ctx, nodeID)
		if err != nil {
			lastErr = err
		} else {
			answered, last = true, st
			if st.ID != nodeID || (st.Role != "leader" && st.Role != "follower") {
				c.bad("GET /status answered id %q and role %q: want id %q and role leader or follower", st.ID, st.Role, nodeID)
				return
			}
			if st.Role == "leader" && st.Token > 0 {
				led = true
			}
			if led && st.Commits > 0 {
				c.ok("GET /status: led with token %d and committed (%d commits, cursor %d)", st.Token, st.Commits, st.Cursor)
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	switch {
	case !answered:
		c.bad("GET /status never answered within %s: %v", lead, lastErr)
	case !led:
		c.bad("GET /status never said role leader with a token within %s (last: %+v)", lead, last)
	default:
		c.bad("GET /status said it led but reported no commit within %s (last: %+v)", lead, last)
	}
}

// pending is an invoke waiting for its completion.
type pending struct {
	line int
	ev   history.Event
}

// history reads the node's history line by line and reports every line the protocol
// does not allow, and what is missing.
func (c *check) history(path string, start, end int64) {
	f, err := os.Open(path)
	if err != nil {
		c.bad("no history at FENCELINE_HISTORY: %v", err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	open := map[string]pending{}
	seen := map[string]bool{}
	count := map[string]int{} // kind -> operations answered ok
	token, lines, before := int64(0), 0, c.problems
	for sc.Scan() {
		lines++
		line := sc.Text()
		evs, err := history.Read(strings.NewReader(line+"\n"), fmt.Sprintf("%s:%d", filepath.Base(path), lines))
		if err != nil {
			c.bad("line %d: %v", lines, err)
			continue
		}
		if len(evs) != 1 {
			c.bad("line %d: not one event", lines)
			continue
		}
		ev := evs[0]
		where := fmt.Sprintf("line %d: %s %s %s", lines, ev.Type, ev.Kind, ev.ID)
		switch {
		case ev.Node != nodeID:
			c.bad("%s: node %q, want %q (FENCELINE_NODE_ID)", where, ev.Node, nodeID)
		case ev.Time < start || ev.Time > end:
			c.bad("%s: time %d is outside the run (%d..%d): it must be the host's wall clock in nanoseconds", where, ev.Time, start, end)
		}
		if ev.Kind == history.KindStepDown {
			continue
		}
		if ev.Type == history.Invoke {
			if seen[ev.ID] {
				c.bad("%s: the id was used before: every operation needs a new one", where)
			}
			seen[ev.ID] = true
			open[ev.ID] = pending{lines, ev}
			if ev.Kind == history.KindCommit && token > 0 && ev.Token != token {
				c.bad("%s: commit with token %d, but the last token this node acquired is %d", where, ev.Token, token)
			}
			continue
		}
		inv, ok := open[ev.ID]
		if !ok {
			c.bad("%s: a completion without an invoke before it", where)
			continue
		}
		delete(open, ev.ID)
		if inv.ev.Kind != ev.Kind {
			c.bad("%s: completes an invoke of kind %s (line %d)", where, inv.ev.Kind, inv.line)
		}
		if ev.Time < inv.ev.Time {
			c.bad("%s: completed before its invoke (line %d)", where, inv.line)
		}
		if ev.Type != history.OK {
			continue
		}
		count[string(ev.Kind)]++
		if ev.Kind == history.KindAcquire {
			if ev.Token <= token {
				c.bad("%s: acquired token %d, not above the previous %d", where, ev.Token, token)
			}
			token = ev.Token
		}
	}
	if err := sc.Err(); err != nil {
		c.bad("reading %s: %v", path, err)
	}
	for _, p := range slices.SortedFunc(maps.Values(open), func(a, b pending) int { return a.line - b.line }) {
		c.bad("line %d: %s %s has no completion (ok, fail or info): after SIGTERM every operation must be completed", p.line, p.ev.Kind, p.ev.ID)
	}
	for _, k := range []history.Kind{history.KindAcquire, history.KindLoad, history.KindCommit} {
		if count[string(k)] == 0 {
			c.bad("no %s answered ok in the history: a node records every acquire, load and commit", k)
		}
	}
	if lines == 0 {
		c.bad("the history (FENCELINE_HISTORY) is empty: the node recorded nothing")
	} else if c.problems == before {
		c.ok("history: %d lines, every operation invoked and completed (%d acquires, %d loads, %d commits ok)",
			lines, count["acquire"], count["load"], count["commit"])
	}
}
