package node

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// /status carries the history error and /health turns 503 with it.
func TestStatusReportsHistoryError(t *testing.T) {
	st := &state{id: "n1", health: newHealth(time.Minute, nil)}
	st.health.last = time.Now()
	h := controlHandler(st, prometheus.NewRegistry())
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get("/health"); code != http.StatusOK {
		t.Fatalf("/health %d %s", code, body)
	}
	st.setHistoryError(errors.New("history h.jsonl: write: no space left on device"))
	st.setHistoryError(errors.New("a later error"))
	if _, body := get("/status"); !strings.Contains(body, `"history_error":"history h.jsonl: write: no space left on device"`) {
		t.Errorf("/status %s", body)
	}
	if code, body := get("/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, "no space left") {
		t.Errorf("/health %d %s", code, body)
	}
}

// /status names the design under test: a node running a lock library's target says so,
// not only its variant (which is "reference" for every target).
func TestStatusNamesTarget(t *testing.T) {
	st := &state{id: "n1", variant: "reference", target: "redsync-fenced", health: newHealth(time.Minute, nil)}
	if got := st.status(); got.Target != "redsync-fenced" || got.Variant != "reference" {
		t.Errorf("status %+v: want target redsync-fenced, variant reference", got)
	}
}
