package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fenceline/fenceline/cluster"
	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/skewclock"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
)

// nodeState is what /status and /health report.
type nodeState struct {
	id, variant string
	chaos       bool
	elector     *election.Elector // nil for the register workload
	health      *health
	cursor      atomic.Int64
	commits     atomic.Int64
	rejected    atomic.Int64
	historyErr  atomic.Pointer[string]
}

// setHistoryError records the first error writing the history.
func (s *nodeState) setHistoryError(err error) {
	msg := err.Error()
	s.historyErr.CompareAndSwap(nil, &msg)
}

func (s *nodeState) status() cluster.NodeStatus {
	st := cluster.NodeStatus{
		ID: s.id, Role: string(election.RoleFollower), Variant: s.variant, Chaos: s.chaos,
		Cursor: s.cursor.Load(), Commits: s.commits.Load(), Rejected: s.rejected.Load(),
	}
	if e := s.historyErr.Load(); e != nil {
		st.HistoryError = *e
	}
	if s.elector != nil {
		es := s.elector.Status()
		st.Role, st.Token, st.Leader = string(es.Role), es.Token, es.Leader
	}
	return st
}

// trackingStore counts what a store did, for /status; it changes nothing.
type trackingStore struct {
	listener.CursorStore
	st *nodeState
}

func (t *trackingStore) Load(ctx context.Context) (int64, int64, error) {
	c, tok, err := t.CursorStore.Load(ctx)
	if err == nil {
		t.st.cursor.Store(c)
		t.st.health.answered()
	} else if ctx.Err() == nil {
		t.st.health.failed(err)
	}
	return c, tok, err
}

func (t *trackingStore) Commit(ctx context.Context, token, from int64, events []source.Event) error {
	err := t.CursorStore.Commit(ctx, token, from, events)
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

// controlHandler serves the node's control endpoint. The fault hooks exist only in chaos
// mode (skew != nil): a production node has no way to be told its clock is wrong.
func controlHandler(st *nodeState, reg *prometheus.Registry, skew *skewclock.Clock) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		ok, reason := st.health.state()
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
	if skew != nil {
		mux.HandleFunc("POST /fault/clock", func(w http.ResponseWriter, r *http.Request) {
			offset, err := time.ParseDuration(r.URL.Query().Get("offset"))
			if err != nil {
				http.Error(w, "offset: "+err.Error(), http.StatusBadRequest)
				return
			}
			rate, err := strconv.ParseFloat(r.URL.Query().Get("rate"), 64)
			if err != nil {
				http.Error(w, "rate: "+err.Error(), http.StatusBadRequest)
				return
			}
			if err := skew.SetRate(rate); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			skew.SetOffset(offset)
			fmt.Fprintf(w, "{\"offset\":%q,\"rate\":%g}\n", offset, rate)
		})
	}
	return mux
}

// electionRecorder writes the elector's steps to the node's history, and tells health
// whether Redis answered them.
type electionRecorder struct {
	rec    *history.Recorder
	node   string
	boot   string
	seq    *atomic.Int64
	health *health
}

func newElectionRecorder(rec *history.Recorder, node string, h *health) electionRecorder {
	return electionRecorder{rec: rec, node: node, boot: newBoot(), seq: new(atomic.Int64), health: h}
}

func (r electionRecorder) nextID() string {
	return r.node + "/" + r.boot + "/e" + strconv.FormatInt(r.seq.Add(1), 10)
}

func (r electionRecorder) Invoke(op election.Op, token int64) func(election.Result) {
	id, kind := r.nextID(), history.Kind(op)
	r.rec.Record(history.Event{ID: id, Type: history.Invoke, Kind: kind, Node: r.node, Token: token})
	return func(res election.Result) {
		ev := history.Event{ID: id, Kind: kind, Node: r.node, Token: res.Token}
		switch res.Outcome {
		case election.OK:
			ev.Type = history.OK
			r.health.answered()
		case election.Fail:
			ev.Type, ev.Error = history.Fail, history.ErrNotHeld
			r.health.answered()
		default:
			ev.Type = history.Info
			if res.Err != nil {
				ev.Error = res.Err.Error()
				if !errors.Is(res.Err, context.Canceled) {
					r.health.failed(res.Err)
				}
			}
		}
		r.rec.Record(ev)
	}
}

func (r electionRecorder) StepDown(token int64, reason election.Reason) {
	r.rec.Record(history.Event{ID: r.nextID(), Type: history.Info, Kind: history.KindStepDown,
		Node: r.node, Token: token, Reason: string(reason)})
}

// newBoot returns a random id for this process, so that operation ids stay unique across
// restarts of a node.
func newBoot() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// version is the module version this binary was built from.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return s.Value[:12]
		}
	}
	return bi.Main.Version
}

// health tracks whether the node can take part in the election: whether Redis answered
// its last request (an election step, a load or a commit; a rejection is an answer), and
// did so within bound. It logs each change of state once. A nil *health does nothing and
// is always healthy.
type health struct {
	bound  time.Duration
	logger *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	last    time.Time // last answer; zero before the first
	lastErr string    // error of the last request, if it got no answer
	logged  bool      // a state has been logged
	wasOK   bool      // the last state logged
}

func newHealth(bound time.Duration, logger *slog.Logger) *health {
	return &health{bound: bound, logger: logger, now: time.Now}
}

// answered notes that Redis answered a request.
func (h *health) answered() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last, h.lastErr = h.now(), ""
	h.logChange()
}

// failed notes a request that got no answer (unreachable, timed out, refused the
// password or the command).
func (h *health) failed(err error) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastErr = err.Error()
	h.logChange()
}

// state returns whether the node can take part in the election and, if not, why.
func (h *health) state() (bool, string) {
	if h == nil {
		return true, ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stateLocked()
}

func (h *health) stateLocked() (bool, string) {
	switch {
	case h.lastErr != "":
		return false, "Redis did not answer: " + h.lastErr
	case h.last.IsZero():
		return false, "no answer from Redis yet"
	case h.now().Sub(h.last) > h.bound:
		return false, fmt.Sprintf("no answer from Redis for %v (bound %v)", h.now().Sub(h.last).Round(time.Millisecond), h.bound)
	}
	return true, ""
}

// logChange logs the state if it differs from the last one logged. The first state is
// logged only if it is bad after an answer was expected (see watch).
func (h *health) logChange() {
	ok, reason := h.stateLocked()
	if h.logged && ok == h.wasOK {
		return
	}
	if !h.logged && ok {
		h.logged, h.wasOK = true, true
		return
	}
	h.logged, h.wasOK = true, ok
	if ok {
		h.logger.Info("redis-available")
	} else {
		h.logger.Warn("redis-unavailable", slog.String("reason", reason))
	}
}

// watch re-evaluates the state a few times per bound until ctx is done, so that a node
// that stops hearing from Redis says so even when no request fails.
func (h *health) watch(ctx context.Context) {
	if h == nil {
		return
	}
	t := time.NewTicker(max(h.bound/8, 50*time.Millisecond))
	defer t.Stop()
	start := h.now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		if h.logged || h.now().Sub(start) > h.bound {
			h.logChange()
		}
		h.mu.Unlock()
	}
}
