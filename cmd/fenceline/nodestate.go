package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"strconv"
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

// nodeState is what /status reports.
type nodeState struct {
	id, variant string
	chaos       bool
	elector     *election.Elector // nil for the register workload
	cursor      atomic.Int64
	commits     atomic.Int64
	rejected    atomic.Int64
}

func (s *nodeState) status() cluster.NodeStatus {
	st := cluster.NodeStatus{
		ID: s.id, Role: string(election.RoleFollower), Variant: s.variant, Chaos: s.chaos,
		Cursor: s.cursor.Load(), Commits: s.commits.Load(), Rejected: s.rejected.Load(),
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
	case errors.Is(err, listener.ErrStaleToken) || errors.Is(err, listener.ErrCursorConflict):
		t.st.rejected.Add(1)
	}
	return err
}

// controlHandler serves the node's control endpoint. The fault hooks exist only in chaos
// mode (skew != nil): a production node has no way to be told its clock is wrong.
func controlHandler(st *nodeState, reg *prometheus.Registry, skew *skewclock.Clock) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
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

// electionRecorder writes the elector's steps to the node's history.
type electionRecorder struct {
	rec  *history.Recorder
	node string
	boot string
	seq  *atomic.Int64
}

func newElectionRecorder(rec *history.Recorder, node string) electionRecorder {
	return electionRecorder{rec: rec, node: node, boot: newBoot(), seq: new(atomic.Int64)}
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
		case election.Fail:
			ev.Type, ev.Error = history.Fail, history.ErrNotHeld
		default:
			ev.Type = history.Info
			if res.Err != nil {
				ev.Error = res.Err.Error()
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
