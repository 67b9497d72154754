//go:build chaos

package node

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/election"
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
