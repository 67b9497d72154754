//go:build chaos

package node

import (
	"errors"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/failpoint"
)

// A chaos build knows the broken variants and serves the clock fault hook, but only to a
// node started with Chaos.
func TestChaosBuildHooks(t *testing.T) {
	if !ChaosBuild {
		t.Fatal("ChaosBuild false in a chaos build")
	}
	c := validConfig()
	c.Variant, c.Chaos = "no-fence", true
	if err := c.Validate(); err != nil {
		t.Fatalf("no-fence with --chaos: %v", err)
	}
	c.Chaos = false
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "runs only with --chaos") {
		t.Errorf("no-fence without --chaos: %v", err)
	}
	post := func(mux *http.ServeMux, q string) int {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/fault/clock?"+q, nil))
		return rec.Code
	}
	plain := http.NewServeMux()
	if clk := faultHooks(false, plain); clk != election.SystemClock() {
		t.Errorf("a node without chaos runs on %T", clk)
	}
	if code := post(plain, "offset=1s&rate=1"); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
		t.Errorf("fault hook without chaos: %d", code)
	}
	hooked := http.NewServeMux()
	clk := faultHooks(true, hooked)
	before := clk.Now()
	if code := post(hooked, "offset=1h&rate=1"); code != http.StatusOK {
		t.Fatalf("fault hook: %d", code)
	}
	if d := clk.Now().Sub(before); d < 59*60e9 {
		t.Errorf("clock moved %v after a 1h jump", d)
	}
	if code := post(hooked, "offset=x&rate=1"); code != http.StatusBadRequest {
		t.Errorf("bad offset: %d", code)
	}
}

// --redlock-servers goes with the Redlock variant, which needs its two servers, and with
// no other; the flag takes a comma-separated list without empty addresses.
func TestRedlockServers(t *testing.T) {
	for _, tc := range []struct {
		variant string
		servers []string
		err     string
	}{
		{"redlock-majority", []string{"127.0.0.1:7001", "127.0.0.1:7002"}, ""},
		{"redlock-majority", nil, "needs --redlock-servers with 2 addresses, got 0"},
		{"redlock-majority", []string{"127.0.0.1:7001"}, "got 1"},
		{"no-fence", []string{"127.0.0.1:7001"}, "is for --variant redlock-majority only"},
		{Reference, []string{"127.0.0.1:7001"}, "is for --variant redlock-majority only"},
	} {
		c := validConfig()
		c.Variant, c.Chaos, c.RedlockServers = tc.variant, true, tc.servers
		err := c.Validate()
		if (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s with %v: %v, want %q", tc.variant, tc.servers, err, tc.err)
		}
	}
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c, _ := AddFlags(fs)
	if err := fs.Parse([]string{"--redlock-servers", "a:1, b:2"}); err != nil || !slices.Equal(c.RedlockServers, []string{"a:1", "b:2"}) {
		t.Errorf("--redlock-servers a:1, b:2: %v %v", c.RedlockServers, err)
	}
	if err := fs.Parse([]string{"--redlock-servers", "a:1,"}); err == nil {
		t.Error("--redlock-servers with an empty address accepted")
	}
}

// The failpoints are armed through a chaos node's control endpoint only; a name that is
// not a failpoint, a bad action and --failpoint without --chaos are refused with the
// reason.
func TestFailpointHooks(t *testing.T) {
	do := func(mux *http.ServeMux, method, path, body string) (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
		return rec.Code, rec.Body.String()
	}
	plain := http.NewServeMux()
	faultHooks(false, plain)
	if code, _ := do(plain, http.MethodPut, "/failpoint/election/renew-before-send", "block"); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
		t.Errorf("arming without chaos: %d", code)
	}
	hooked := http.NewServeMux()
	faultHooks(true, hooked)
	t.Cleanup(failpoint.DisarmAll)
	if code, body := do(hooked, http.MethodPut, "/failpoint/election/nope", "block"); code != http.StatusBadRequest || !strings.Contains(body, "unknown failpoint") {
		t.Errorf("unknown name: %d %s", code, body)
	}
	if code, body := do(hooked, http.MethodPut, "/failpoint/election/renew-before-send", "nap"); code != http.StatusBadRequest || !strings.Contains(body, "bad action") {
		t.Errorf("bad action: %d %s", code, body)
	}
	code, body := do(hooked, http.MethodPut, "/failpoint/election/renew-before-send", "2*sleep(1s)")
	if failpoint.Enabled != (code == http.StatusOK) || (!failpoint.Enabled && code != http.StatusNotImplemented) {
		t.Fatalf("arming (failpoints compiled in: %v): %d %s", failpoint.Enabled, code, body)
	}
	if failpoint.Enabled {
		if _, list := do(hooked, http.MethodGet, "/failpoint", ""); !strings.Contains(list, `"action":"2*sleep(1s)"`) {
			t.Errorf("GET /failpoint: %s", list)
		}
		if code, _ := do(hooked, http.MethodDelete, "/failpoint", ""); code != http.StatusOK {
			t.Errorf("disarm all: %d", code)
		}
		if _, list := do(hooked, http.MethodGet, "/failpoint", ""); strings.Contains(list, `"action"`) {
			t.Errorf("armed after DELETE /failpoint: %s", list)
		}
	}
	c := validConfig()
	c.Failpoints = []string{"election/renew-before-send=block"}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "needs --chaos") {
		t.Errorf("--failpoint without --chaos: %v", err)
	}
	c.Chaos = true
	c.Failpoints = []string{"election/nope=block"}
	if err := c.Validate(); !errors.Is(err, failpoint.ErrUnknown) {
		t.Errorf("--failpoint of an unknown name: %v", err)
	}
}

// A client-go target runs in a chaos build with --chaos, and its node refuses at start a
// lease that client-go cannot write in whole seconds.
func TestClientGoTarget(t *testing.T) {
	c := validConfig()
	c.Target, c.Chaos = "client-go-transitions", true
	if err := c.Validate(); err != nil {
		t.Fatalf("client-go-transitions with --chaos: %v", err)
	}
	c.Source, c.Redis = "http://127.0.0.1:1", election.ClientOptions("127.0.0.1:1")
	if err := Check(c); err != nil {
		t.Fatalf("Check: %v", err)
	}
	c.Lease = 1500 * time.Millisecond
	if err := Check(c); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "whole seconds") {
		t.Errorf("--lease-ttl 1.5s: %v, want a usage error about whole seconds", err)
	}
}
