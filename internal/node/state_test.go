package node

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fenceline/fenceline/cluster"
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

// The harness reads /status into a type of its own: every field the node writes must
// come back with its value.
func TestStatusMatchesTheHarnessType(t *testing.T) {
	want := Status{ID: "n1", Role: "leader", Token: 7, Leader: "n1", Cursor: 42, Variant: "reference",
		Chaos: true, Commits: 3, Rejected: 1, HistoryError: "disk full"}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var theirs cluster.NodeStatus
	if err := json.Unmarshal(b, &theirs); err != nil {
		t.Fatal(err)
	}
	back, err := json.Marshal(theirs)
	if err != nil {
		t.Fatal(err)
	}
	var got Status
	if err := json.Unmarshal(back, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("through cluster.NodeStatus: %+v, want %+v", got, want)
	}
}
