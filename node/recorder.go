package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/listener"
)

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
			if res.TookOver != "" {
				ev.Reason = history.ReasonTakeover + " " + res.TookOver
			}
			r.health.answered()
		case election.Fail:
			ev.Type, ev.Error = history.Fail, history.ErrNotHeld
			if errors.Is(res.Err, election.ErrNotPresent) {
				ev.Error = history.ErrNotPresent
			}
			r.health.answered()
		default:
			ev.Type = history.Info
			if res.Err != nil {
				ev.Error = res.Err.Error()
				if errors.Is(res.Err, election.ErrUnexpectedReply) {
					ev.Error = history.ErrMalformedReply + ": " + ev.Error
				}
				if !errors.Is(res.Err, context.Canceled) {
					r.health.failed(res.Err)
				}
			}
		}
		r.rec.Record(ev)
	}
}

func (r electionRecorder) StepDown(token int64, reason election.Reason) {
	r.StepDownCounted(token, reason, 0)
}

// StepDownCounted makes electionRecorder an election.LeaseRecorder: the history's
// step-down carries the lease the term counted on (history.Event.Lease).
func (r electionRecorder) StepDownCounted(token int64, reason election.Reason, lease time.Duration) {
	r.rec.Record(history.Event{ID: r.nextID(), Type: history.Info, Kind: history.KindStepDown,
		Node: r.node, Token: token, Reason: string(reason), Lease: int64(lease)})
}

// newBoot returns a random id for this process, so that operation ids stay unique across
// restarts of a node.
func newBoot() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// storeRecorder writes the cursor store's requests to the node's history
// (docs/history.md): an invoke before, then ok, fail (a rejection, with its reason as
// the error) or info (unknown).
type storeRecorder struct {
	rec  *history.Recorder
	node string
}

func (r storeRecorder) Invoke(op listener.Op) func(listener.Result) {
	ev := history.Event{ID: op.ID, Kind: history.Kind(op.Kind), Node: r.node}
	switch op.Kind {
	case listener.OpCommit:
		ev.Token, ev.From, ev.To, ev.Events = op.Token, op.From, op.To, op.Events
	case listener.OpWrite:
		ev.Token = op.Token
	}
	ev.Type = history.Invoke
	r.rec.Record(ev)
	return func(res listener.Result) {
		switch res.Outcome {
		case listener.OutcomeOK:
			ev.Type = history.OK
			if op.Kind == listener.OpLoad {
				ev.Cursor, ev.Token = res.Cursor, res.Token
			}
		case listener.OutcomeBodyError:
			// The body failed after the token check: the token was recorded.
			ev.Type, ev.Error = history.OK, history.ErrBodyFailed
		case listener.OutcomeUnknown:
			ev.Type = history.Info
			if res.Err != nil {
				ev.Error = res.Err.Error()
				if errors.Is(res.Err, listener.ErrUnexpectedReply) {
					ev.Error = history.ErrMalformedReply + ": " + ev.Error
				}
			}
		default:
			ev.Type, ev.Error = history.Fail, string(res.Outcome)
		}
		r.rec.Record(ev)
	}
}
