package node

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/listener"
)

// The store's requests become history events as docs/history.md says: an invoke, then
// ok (a load with what it read), fail with the rejection as the error, or info (marked
// malformed-reply for an answer outside the fence's protocol).
func TestStoreRecorder(t *testing.T) {
	var buf bytes.Buffer
	r := storeRecorder{rec: history.NewRecorder(&buf), node: "n1"}
	r.Invoke(listener.Op{ID: "n1/b/1", Kind: listener.OpLoad})(listener.Result{Outcome: listener.OutcomeOK, Cursor: 4, Token: 2})
	commit := listener.Op{ID: "n1/b/2", Kind: listener.OpCommit, Token: 3, From: 4, To: 6, Events: 2}
	r.Invoke(commit)(listener.Result{Outcome: listener.OutcomeStaleToken})
	commit.ID = "n1/b/3"
	r.Invoke(commit)(listener.Result{Outcome: listener.OutcomeUnknown, Err: errors.New("i/o timeout")})
	commit.ID = "n1/b/4"
	r.Invoke(commit)(listener.Result{Outcome: listener.OutcomeOK})
	write := listener.Op{ID: "n1/b/5", Kind: listener.OpWrite, Token: 5}
	r.Invoke(write)(listener.Result{Outcome: listener.OutcomeOK})
	write.ID = "n1/b/6"
	r.Invoke(write)(listener.Result{Outcome: listener.OutcomeBodyError})
	write.ID = "n1/b/7"
	r.Invoke(write)(listener.Result{Outcome: listener.OutcomeStaleToken})
	commit.ID = "n1/b/8"
	malformed := fmt.Errorf("%w: %w: [ok 6 3 x]", listener.ErrOutcomeUnknown, listener.ErrUnexpectedReply)
	r.Invoke(commit)(listener.Result{Outcome: listener.OutcomeUnknown, Err: malformed})
	evs, err := history.Read(&buf, "history")
	if err != nil {
		t.Fatal(err)
	}
	want := []history.Event{
		{ID: "n1/b/1", Type: history.Invoke, Kind: history.KindLoad, Node: "n1"},
		{ID: "n1/b/1", Type: history.OK, Kind: history.KindLoad, Node: "n1", Cursor: 4, Token: 2},
		{ID: "n1/b/2", Type: history.Invoke, Kind: history.KindCommit, Node: "n1", Token: 3, From: 4, To: 6, Events: 2},
		{ID: "n1/b/2", Type: history.Fail, Kind: history.KindCommit, Node: "n1", Token: 3, From: 4, To: 6, Events: 2, Error: history.ErrStaleToken},
		{ID: "n1/b/3", Type: history.Invoke, Kind: history.KindCommit, Node: "n1", Token: 3, From: 4, To: 6, Events: 2},
		{ID: "n1/b/3", Type: history.Info, Kind: history.KindCommit, Node: "n1", Token: 3, From: 4, To: 6, Events: 2, Error: "i/o timeout"},
		{ID: "n1/b/4", Type: history.Invoke, Kind: history.KindCommit, Node: "n1", Token: 3, From: 4, To: 6, Events: 2},
		{ID: "n1/b/4", Type: history.OK, Kind: history.KindCommit, Node: "n1", Token: 3, From: 4, To: 6, Events: 2},
		// A write records its token; a body that failed after the check is an ok write.
		{ID: "n1/b/5", Type: history.Invoke, Kind: history.KindWrite, Node: "n1", Token: 5},
		{ID: "n1/b/5", Type: history.OK, Kind: history.KindWrite, Node: "n1", Token: 5},
		{ID: "n1/b/6", Type: history.Invoke, Kind: history.KindWrite, Node: "n1", Token: 5},
		{ID: "n1/b/6", Type: history.OK, Kind: history.KindWrite, Node: "n1", Token: 5, Error: history.ErrBodyFailed},
		{ID: "n1/b/7", Type: history.Invoke, Kind: history.KindWrite, Node: "n1", Token: 5},
		{ID: "n1/b/7", Type: history.Fail, Kind: history.KindWrite, Node: "n1", Token: 5, Error: history.ErrStaleToken},
		// A reply outside the fence's protocol is marked, for audit-consistency.
		{ID: "n1/b/8", Type: history.Invoke, Kind: history.KindCommit, Node: "n1", Token: 3, From: 4, To: 6, Events: 2},
		{ID: "n1/b/8", Type: history.Info, Kind: history.KindCommit, Node: "n1", Token: 3, From: 4, To: 6, Events: 2,
			Error: history.ErrMalformedReply + ": " + malformed.Error()},
	}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for i, w := range want {
		w.Time = evs[i].Time
		if evs[i] != w || w.Time == 0 {
			t.Errorf("event %d = %+v, want %+v", i, evs[i], w)
		}
	}
}

// An election step that Redis answered outside its protocol is marked malformed-reply
// (the unique-tokens check rejects such an acquire); a lost reply is not.
func TestElectionRecorderMalformedReply(t *testing.T) {
	var buf bytes.Buffer
	r := newElectionRecorder(history.NewRecorder(&buf), "n1", nil)
	bad := fmt.Errorf("%w: acquire: [1 :00 0]", election.ErrUnexpectedReply)
	r.Invoke(election.OpAcquire, 0)(election.Result{Outcome: election.Unknown, Err: bad})
	r.Invoke(election.OpAcquire, 0)(election.Result{Outcome: election.Unknown, Err: errors.New("i/o timeout")})
	evs, err := history.Read(&buf, "history")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 4 {
		t.Fatalf("%d events, want 4: %+v", len(evs), evs)
	}
	if want := history.ErrMalformedReply + ": " + bad.Error(); evs[1].Type != history.Info || evs[1].Error != want {
		t.Errorf("malformed reply recorded as %s %q, want info %q", evs[1].Type, evs[1].Error, want)
	}
	if evs[3].Error != "i/o timeout" {
		t.Errorf("lost reply recorded with error %q", evs[3].Error)
	}
}

// A refused election step is recorded fail with not-held, and an acquire refused for
// want of the node's own presence with not-present: the checker holds that refusal to
// runs with takeover on disconnect, the only ones that ask for it.
func TestElectionRecorderRefusals(t *testing.T) {
	var buf bytes.Buffer
	r := newElectionRecorder(history.NewRecorder(&buf), "n1", nil)
	r.Invoke(election.OpAcquire, 0)(election.Result{Outcome: election.Fail, Err: election.ErrLeaseHeld})
	r.Invoke(election.OpAcquire, 0)(election.Result{Outcome: election.Fail, Err: election.ErrNotPresent})
	r.Invoke(election.OpRenew, 3)(election.Result{Outcome: election.Fail, Token: 3, Err: election.ErrNotHeld})
	evs, err := history.Read(&buf, "history")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		if e.Type == history.Fail {
			got = append(got, e.Error)
		}
	}
	if want := []string{history.ErrNotHeld, history.ErrNotPresent, history.ErrNotHeld}; !slices.Equal(got, want) {
		t.Errorf("refusals recorded as %q, want %q", got, want)
	}
}

// The node's recorder is an election.LeaseRecorder: a step-down carries the lease its
// term counted on, which the step-down check holds to the TTL less the drift margin.
func TestElectionRecorderStepDownLease(t *testing.T) {
	var buf bytes.Buffer
	var r election.Recorder = newElectionRecorder(history.NewRecorder(&buf), "n1", nil)
	lr, ok := r.(election.LeaseRecorder)
	if !ok {
		t.Fatal("the node's election recorder is not a LeaseRecorder")
	}
	lr.StepDownCounted(4, election.ReasonLeaseExpired, 1900*time.Millisecond)
	r.StepDown(5, election.ReasonShutdown)
	evs, err := history.Read(&buf, "history")
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].Kind != history.KindStepDown || evs[0].Lease != int64(1900*time.Millisecond) || evs[0].Token != 4 ||
		evs[0].Reason != string(election.ReasonLeaseExpired) || evs[1].Lease != 0 || evs[1].Reason != string(election.ReasonShutdown) {
		t.Errorf("step-downs recorded as %+v", evs)
	}
}
