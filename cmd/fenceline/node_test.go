package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/source"
)

// The register workload (tokens outside the election, synthetic commits) is refused
// without --chaos, in every build (a default build has no --clients either: "exists
// only in a chaos build").
func TestNodeRefusals(t *testing.T) {
	t.Setenv(passwordEnv, "")
	wantUsage(t, []string{"node", "--id", "n1"}, true, []usageCase{
		{[]string{"--workload", "register"}, "runs only with --chaos"},
		{[]string{"--workload", "register", "--clients", "5"}, "chaos"},
	})
}

// startNode runs a node in this process until the test ends and returns its control
// address, its log and a channel with its exit code.
func startNode(t *testing.T, args ...string) (string, *syncBuf, <-chan int) {
	t.Helper()
	src, err := source.NewServer(source.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(src.Handler())
	t.Cleanup(ts.Close)
	addrFile := filepath.Join(t.TempDir(), "addr")
	ctx, cancel := context.WithCancel(context.Background())
	logs := &syncBuf{}
	exited := make(chan int, 1)
	go func() {
		exited <- runNodeContext(ctx, append([]string{"--source", ts.URL, "--control", "127.0.0.1:0",
			"--addr-file", addrFile}, args...), logs)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			t.Error("node did not stop within 15s")
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			return strings.TrimSpace(string(b)), logs, exited
		}
		select {
		case code := <-exited:
			t.Fatalf("node exited %d at start:\n%s", code, logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("node did not write its address:\n%s", logs.String())
		}
	}
}

type healthReply struct {
	code   int
	Status string `json:"status"`
	Reason string `json:"reason"`
}

func getHealth(t *testing.T, control string) healthReply {
	t.Helper()
	resp, err := http.Get("http://" + control + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	h := healthReply{code: resp.StatusCode}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("/health: %v: %q", err, b)
	}
	return h
}

// waitHealth polls /health until it answers code with a reason containing reason, and
// returns that reply.
func waitHealth(t *testing.T, control string, code int, reason string, within time.Duration, logs *syncBuf) healthReply {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		h := getHealth(t, control)
		if h.code == code && strings.Contains(h.Reason, reason) {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health answered %d %+v for %v, want %d; log:\n%s", h.code, h, within, code, logs.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// countLog counts the log lines with msg.
func countLog(logs *syncBuf, msg string) int {
	return strings.Count(logs.String(), `"msg":"`+msg+`"`)
}

// /health says whether the node can take part in the election: 503 with the reason when
// Redis refuses its password or cannot be reached, 200 when it answers; the log says so
// once per change, not at every attempt. go-redis's own log lines come through the node's
// JSON logger.
func TestNodeHealth(t *testing.T) {
	srv := redisserver.New(t)
	requirePassword(t, srv.Addr(), "right")

	t.Setenv(passwordEnv, "wrong")
	control, logs, _ := startNode(t, "--id", "n1", "--redis", srv.Addr(), "--lease-ttl", "1s")
	waitHealth(t, control, http.StatusServiceUnavailable, "WRONGPASS", 10*time.Second, logs)
	time.Sleep(3 * time.Second) // about a dozen failed acquire attempts
	if getHealth(t, control).code != http.StatusServiceUnavailable {
		t.Error("wrong password: /health turned ok")
	}
	if n := countLog(logs, "redis-unavailable"); n != 1 {
		t.Errorf("wrong password: %d redis-unavailable lines in 3s, want 1:\n%s", n, logs.String())
	}

	t.Setenv(passwordEnv, "right")
	// Lease 2s: requests time out after about 333ms, which a loaded machine rarely
	// reaches; the counts below are of changes after the set-up anyway.
	control, logs, _ = startNode(t, "--id", "n2", "--redis", srv.Addr(), "--lease-ttl", "2s")
	waitHealth(t, control, http.StatusOK, "", 10*time.Second, logs)

	downBefore, upBefore := countLog(logs, "redis-unavailable"), countLog(logs, "redis-available")
	srv.Kill()
	waitHealth(t, control, http.StatusServiceUnavailable, "Redis did not answer", 5*time.Second, logs)
	time.Sleep(2 * time.Second)
	if n := countLog(logs, "redis-unavailable") - downBefore; n != 1 {
		t.Errorf("Redis down: %d redis-unavailable lines, want 1:\n%s", n, logs.String())
	}
	if err := srv.Restart(context.Background()); err != nil {
		t.Fatal(err)
	}
	requirePassword(t, srv.Addr(), "right")
	waitHealth(t, control, http.StatusOK, "", 10*time.Second, logs)
	if n := countLog(logs, "redis-available") - upBefore; n != 1 {
		t.Errorf("%d redis-available lines, want 1:\n%s", n, logs.String())
	}
	// Every line is JSON, go-redis's included (it logs the broken pub/sub connection).
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("log line is not JSON: %q", line)
		}
	}
	if countLog(logs, "redis-client") == 0 {
		t.Errorf("no go-redis line came through the node's logger:\n%s", logs.String())
	}
}

// A history that cannot be written (a full disk: /dev/full) stops the node promptly with
// a non-zero exit and the reason in its log.
func TestNodeHistoryWriteError(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	srv := redisserver.New(t)
	t.Setenv(passwordEnv, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logs := &syncBuf{}
	exited := make(chan int, 1)
	addrFile := filepath.Join(t.TempDir(), "addr")
	start := time.Now()
	go func() {
		exited <- runNodeContext(ctx, []string{"--id", "n1", "--redis", srv.Addr(), "--control", "127.0.0.1:0",
			"--addr-file", addrFile, "--source", "http://127.0.0.1:1", "--history", "/dev/full"}, logs)
	}()
	// Until it exits, /status says why.
	sawStatus := false
	for !sawStatus && time.Since(start) < 5*time.Second {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			if resp, err := http.Get("http://" + strings.TrimSpace(string(b)) + "/status"); err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				sawStatus = strings.Contains(string(body), `"history_error":"write /dev/full: no space left on device"`)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !sawStatus {
		t.Error("/status never showed history_error")
	}
	select {
	case code := <-exited:
		if code == exitOK {
			t.Errorf("exit 0 after a failed history write")
		}
	case <-time.After(10 * time.Second):
		cancel()
		<-exited
		t.Fatalf("the node was still running 10s after its history failed:\n%s", logs.String())
	}
	if countLog(logs, "history-write-failed") != 1 || !strings.Contains(logs.String(), "no space left on device") {
		t.Errorf("log does not say why:\n%s", logs.String())
	}
}
