package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
)

// state is what /status and /health report.
type state struct {
	id, variant, target string
	chaos               bool
	// elector is set once the elector exists, while the control endpoint already
	// serves; nil for the register workload.
	elector atomic.Pointer[leaderView]
	// lease is the lease TTL: a leader past its local deadline by more than that is
	// stuck, and /health says so.
	lease      time.Duration
	health     *health
	cursor     atomic.Int64
	commits    atomic.Int64
	rejected   atomic.Int64
	historyErr atomic.Pointer[string]
}

// leaderView is what /status and /health read of an elector: package election's, or a
// lock library's (package targets).
type leaderView interface {
	Status() election.Status
	Check(maxTolerable time.Duration) error
}

// setHistoryError records the first error writing the history.
func (s *state) setHistoryError(err error) {
	msg := err.Error()
	s.historyErr.CompareAndSwap(nil, &msg)
}

// Status is what GET /status answers, as JSON; the harness reads it back into this type.
type Status struct {
	ID       string `json:"id"`
	Role     string `json:"role"` // "leader" or "follower"
	Token    int64  `json:"token,omitempty"`
	Leader   string `json:"leader,omitempty"` // last leader this node saw
	Cursor   int64  `json:"cursor"`
	Variant  string `json:"variant"`
	Target   string `json:"target"` // the design under test: "reference", or a lock library's target (package targets)
	Chaos    bool   `json:"chaos"`
	Commits  int64  `json:"commits"`
	Rejected int64  `json:"rejected"`
	// HistoryError is set when the node could not write its history (a full disk):
	// what it records from then on is lost, and the harness ends the run as unknown.
	HistoryError string `json:"history_error,omitempty"`
}

func (s *state) status() Status {
	st := Status{
		ID: s.id, Role: string(election.RoleFollower), Variant: s.variant, Target: s.target, Chaos: s.chaos,
		Cursor: s.cursor.Load(), Commits: s.commits.Load(), Rejected: s.rejected.Load(),
	}
	if e := s.historyErr.Load(); e != nil {
		st.HistoryError = *e
	}
	if el := s.elector.Load(); el != nil {
		es := (*el).Status()
		st.Role, st.Token, st.Leader = string(es.Role), es.Token, es.Leader
	}
	return st
}

// trackingStore counts what a store did, for /status; it changes nothing.
type trackingStore struct {
	listener.Store[source.Event]
	st *state
}

func (t *trackingStore) Load(ctx context.Context) (int64, int64, error) {
	c, tok, err := t.Store.Load(ctx)
	if err == nil {
		t.st.cursor.Store(c)
		t.st.health.answered()
	} else if ctx.Err() == nil {
		t.st.health.failed(err)
	}
	return c, tok, err
}

func (t *trackingStore) Commit(ctx context.Context, token, from int64, events []source.Event) error {
	err := t.Store.Commit(ctx, token, from, events)
	switch {
	case err == nil:
		t.st.commits.Add(1)
		if len(events) > 0 {
			t.st.cursor.Store(events[len(events)-1].ID)
		}
		t.st.health.answered()
	case errors.Is(err, listener.ErrStaleToken) || errors.Is(err, listener.ErrCursorConflict):
		t.st.rejected.Add(1)
		t.st.health.answered()
	case errors.Is(err, listener.ErrOutcomeUnknown) && ctx.Err() == nil:
		t.st.health.failed(err)
	}
	return err
}

// controlHandler serves the node's control endpoint: /health, /status, /metrics. The
// fault hooks are added to it by faultHooks, in a chaos build only.
func controlHandler(st *state, reg *prometheus.Registry) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		ok, reason := st.health.state()
		if el := st.elector.Load(); ok && el != nil {
			if err := (*el).Check(st.lease); err != nil {
				ok, reason = false, err.Error()
			}
		}
		if e := st.historyErr.Load(); e != nil {
			ok, reason = false, "cannot write the history: "+*e
		}
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]string{"status": "unavailable", "reason": reason})
			return
		}
		fmt.Fprintln(w, `{"status":"ok"}`)
	})
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st.status())
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return mux
}
