package main

// The node-protocol glue (docs/node-protocol.md): what lets fenceline's chaos harness run
// this program as a node and judge it. A service of your own does not need this file.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
)

// harness is the glue of a run under the harness; nil otherwise, and then its methods do
// nothing.
type harness struct {
	id       string
	addrFile string
	file     *os.File
	rec      *history.Recorder
	hooks    faultHooks
	boot     string
	seq      atomic.Int64
	// what /status reports besides the election's view
	cursor, commits, rejected atomic.Int64
}

// fromHarness reads the harness's FENCELINE_* variables into o, if FENCELINE_NODE_ID is
// set, and opens the history to append to.
func fromHarness(o *options) (*harness, error) {
	id := os.Getenv("FENCELINE_NODE_ID")
	if id == "" {
		return nil, nil
	}
	o.id, o.redis, o.feed, o.listen = id, os.Getenv("FENCELINE_REDIS"), os.Getenv("FENCELINE_SOURCE"), os.Getenv("FENCELINE_CONTROL")
	o.name = os.Getenv("FENCELINE_ELECTION")
	if o.name == "" {
		o.name = election.DefaultName
	}
	ms, err := strconv.Atoi(os.Getenv("FENCELINE_LEASE_TTL_MS"))
	if err != nil {
		return nil, fmt.Errorf("FENCELINE_LEASE_TTL_MS: %w", err)
	}
	o.lease = time.Duration(ms) * time.Millisecond
	if b := os.Getenv("FENCELINE_BATCH"); b != "" {
		if o.batch, err = strconv.Atoi(b); err != nil {
			return nil, fmt.Errorf("FENCELINE_BATCH: %w", err)
		}
	}
	// Appended, never truncated: a restarted node goes on with the same history.
	f, err := os.OpenFile(os.Getenv("FENCELINE_HISTORY"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	// boot keeps the election's operation ids unique across restarts of the node.
	return &harness{id: id, addrFile: os.Getenv("FENCELINE_ADDR_FILE"), file: f, rec: history.NewRecorder(f),
		hooks: newFaultHooks(), boot: hex.EncodeToString(b[:])}, nil
}

// configure records the election's steps and the store's requests in the history and
// keeps the whole audit (the checker resolves unknown outcomes from it); in a chaos
// build, it runs the lease on the clock that the clock fault skews.
func (h *harness) configure(ec *election.Config, sc *listener.RedisConfig[source.Event]) {
	if h == nil {
		return
	}
	h.hooks.configure(ec)
	ec.Recorder = electionRecorder{h}
	sc.Recorder = storeRecorder{h}
	sc.AuditMaxLen = listener.AuditUnbounded
}

// handle adds the control endpoint's /health and /status, and in a chaos build the clock
// fault's hook.
func (h *harness) handle(mux *http.ServeMux, el *election.Elector) {
	if h == nil {
		return
	}
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /status", func(w http.ResponseWriter, _ *http.Request) {
		s := el.Status()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": h.id, "role": s.Role, "token": s.Token,
			"leader": s.Leader, "cursor": h.cursor.Load(), "commits": h.commits.Load(), "rejected": h.rejected.Load()})
	})
	h.hooks.handle(mux)
}

// announce writes the control address to FENCELINE_ADDR_FILE, atomically: a reader never
// sees half an address.
func (h *harness) announce(addr string) error {
	if h == nil || h.addrFile == "" {
		return nil
	}
	if err := os.WriteFile(h.addrFile+".tmp", []byte(addr+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(h.addrFile+".tmp", h.addrFile)
}

// err is the history's first write error (a run whose history is incomplete cannot be
// judged), and closes it.
func (h *harness) err() error {
	if h == nil {
		return nil
	}
	err := h.rec.Err()
	h.file.Close()
	return err
}

// electionRecorder writes the elector's steps as history lines.
type electionRecorder struct{ h *harness }

func (r electionRecorder) nextID() string {
	return r.h.id + "/" + r.h.boot + "/e" + strconv.FormatInt(r.h.seq.Add(1), 10)
}

func (r electionRecorder) Invoke(op election.Op, token int64) func(election.Result) {
	id, kind := r.nextID(), history.Kind(op)
	r.h.rec.Record(history.Event{ID: id, Type: history.Invoke, Kind: kind, Node: r.h.id, Token: token})
	return func(res election.Result) {
		ev := history.Event{ID: id, Type: history.Info, Kind: kind, Node: r.h.id, Token: res.Token}
		switch res.Outcome {
		case election.OK:
			ev.Type = history.OK
			if res.TookOver != "" {
				ev.Reason = history.ReasonTakeover + " " + res.TookOver
			}
		case election.Fail:
			ev.Type, ev.Error = history.Fail, history.ErrNotHeld
		default:
			if res.Err != nil {
				ev.Error = res.Err.Error()
			}
		}
		r.h.rec.Record(ev)
	}
}

func (r electionRecorder) StepDown(token int64, reason election.Reason) {
	r.h.rec.Record(history.Event{ID: r.nextID(), Type: history.Info, Kind: history.KindStepDown,
		Node: r.h.id, Token: token, Reason: string(reason)})
}

// storeRecorder writes the store's loads and commits as history lines, and counts them
// for /status.
type storeRecorder struct{ h *harness }

func (r storeRecorder) Invoke(op listener.Op) func(listener.Result) {
	ev := history.Event{ID: op.ID, Type: history.Invoke, Kind: history.Kind(op.Kind), Node: r.h.id}
	if op.Kind == listener.OpCommit {
		ev.Token, ev.From, ev.To, ev.Events = op.Token, op.From, op.To, op.Events
	}
	r.h.rec.Record(ev)
	return func(res listener.Result) {
		switch res.Outcome {
		case listener.OutcomeOK:
			ev.Type = history.OK
			if op.Kind == listener.OpLoad {
				ev.Cursor, ev.Token = res.Cursor, res.Token
				r.h.cursor.Store(res.Cursor)
			} else {
				r.h.cursor.Store(op.To)
				r.h.commits.Add(1)
			}
		case listener.OutcomeUnknown:
			ev.Type = history.Info
			if res.Err != nil {
				ev.Error = res.Err.Error()
			}
		default:
			ev.Type, ev.Error = history.Fail, string(res.Outcome)
			r.h.rejected.Add(1)
		}
		r.h.rec.Record(ev)
	}
}
