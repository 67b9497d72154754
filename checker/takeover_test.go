package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/history"
)

// TestTakeoverWindow: with takeover on disconnect, a kill of the leader is taken over
// within half a lease; an election whose takeover never happens (the takeover branch's
// GET test flipped, a mutant) waits out the lease. Measured on this machine: the
// reference's kill windows with takeover were 24-552 ms, such mutants' 1.46-1.84 s.
func TestTakeoverWindow(t *testing.T) {
	kill := func(to time.Duration) Window {
		return Window{Fault: "kill", FaultNode: "n1", OldNode: "n1", OldToken: 9, NewNode: "n2", NewToken: 10,
			Injected: int64(time.Second), FirstNew: int64(time.Second + to), ToNewToken: to}
	}
	standby := kill(1500 * time.Millisecond)
	standby.FaultNode = "n3"
	pause := kill(1500 * time.Millisecond)
	pause.Fault = "pause"
	for _, c := range []struct {
		name     string
		takeover bool
		target   string
		windows  []Window
		want     Verdict
	}{
		{"taken over at once", true, "", []Window{kill(40 * time.Millisecond), kill(550 * time.Millisecond)}, Valid},
		{"the lease waited out", true, "", []Window{kill(40 * time.Millisecond), kill(1500 * time.Millisecond)}, Invalid},
		{"a standby killed, another fault", true, "", []Window{standby, pause}, Valid},
		{"no takeover", false, "", []Window{kill(1500 * time.Millisecond)}, NotApplicable},
		{"a target", true, "redsync", []Window{kill(1500 * time.Millisecond)}, NotApplicable},
	} {
		p := &parsed{run: &history.Run{Info: history.RunInfo{Workload: "listener", LeaseTTL: 2 * time.Second,
			TakeoverOnDisconnect: c.takeover, Target: c.target}}, nodes: []string{"n1", "n2", "n3"}}
		cr := takeoverWindow(p, c.windows)
		if cr.Verdict != c.want {
			t.Errorf("%s: %s, want %s: %s", c.name, cr.Verdict, c.want, cr.Message)
		}
		if c.want == Invalid && (len(cr.Offending) != 1 || !strings.Contains(cr.Offending[0], "1.5s later")) {
			t.Errorf("%s: offending %q", c.name, cr.Offending)
		}
	}
}

// A window in which a standby's election request went unanswered is not judged: the
// standbys could not reach Redis (two windows of the unmutated elector at load average
// 24, 1.5 s and 3.4 s, each with standbys' acquires timing out). An answered refusal, or
// the old leader's own timeout, does not excuse it.
func TestTakeoverWindowStandbyUnanswered(t *testing.T) {
	slow := Window{Fault: "kill", FaultNode: "n1", OldNode: "n1", OldToken: 9, NewNode: "n2", NewToken: 10,
		Injected: int64(time.Second), FirstNew: int64(time.Second + 3400*time.Millisecond), ToNewToken: 3400 * time.Millisecond}
	for _, c := range []struct {
		name string
		el   []elOp
		want Verdict
	}{
		{"a standby's acquire timed out", []elOp{{node: 1, call: int64(1200 * time.Millisecond), typ: history.Info}}, Valid},
		{"a standby's acquire refused", []elOp{{node: 1, call: int64(1200 * time.Millisecond), typ: history.Fail, notHeld: true}}, Invalid},
		{"the old leader's renewal timed out", []elOp{{node: 0, call: int64(1200 * time.Millisecond), typ: history.Info}}, Invalid},
		{"a standby's timeout before the kill", []elOp{{node: 2, call: int64(900 * time.Millisecond), typ: history.Info}}, Invalid},
	} {
		p := &parsed{run: &history.Run{Info: history.RunInfo{Workload: "listener", LeaseTTL: 2 * time.Second,
			TakeoverOnDisconnect: true}}, nodes: []string{"n1", "n2", "n3"}, el: c.el}
		cr := takeoverWindow(p, []Window{slow})
		if cr.Verdict != c.want {
			t.Errorf("%s: %s, want %s: %s", c.name, cr.Verdict, c.want, cr.Message)
		}
		if c.want == Valid && cr.Stats["standby_unanswered"] != 1 {
			t.Errorf("%s: stats %v", c.name, cr.Stats)
		}
	}
}

// The standby's decision is judged, not the machine's latency after it: a takeover sent
// 0.36 s after the kill whose first commit came 1.08 s after it (twelve chaos runs on two
// cores, 2026-12-07) was taken over in time; a winning acquire sent after half the lease
// was not.
func TestTakeoverWindowJudgesTheSend(t *testing.T) {
	w := Window{Fault: "kill", FaultNode: "n1", OldNode: "n1", OldToken: 9, NewNode: "n2", NewToken: 10,
		Injected: int64(time.Second), FirstNew: int64(time.Second + 1080*time.Millisecond), ToNewToken: 1080 * time.Millisecond}
	for _, c := range []struct {
		name string
		sent time.Duration // after the kill
		want Verdict
	}{
		{"sent at once, committed late", 360 * time.Millisecond, Valid},
		{"sent after half the lease", 1050 * time.Millisecond, Invalid},
	} {
		el := []elOp{
			{node: 2, kind: history.KindAcquire, call: w.Injected + int64(100*time.Millisecond), typ: history.Fail, notHeld: true},
			{node: 1, kind: history.KindAcquire, call: w.Injected + int64(c.sent), typ: history.OK, token: 10},
		}
		p := &parsed{run: &history.Run{Info: history.RunInfo{Workload: "listener", LeaseTTL: 2 * time.Second,
			TakeoverOnDisconnect: true}}, nodes: []string{"n1", "n2", "n3"}, el: el}
		cr := takeoverWindow(p, []Window{w})
		if cr.Verdict != c.want {
			t.Errorf("%s: %s, want %s: %s", c.name, cr.Verdict, c.want, cr.Message)
		}
		if c.want == Invalid && (len(cr.Offending) != 1 || !strings.Contains(cr.Offending[0], "sent 1.05s later")) {
			t.Errorf("%s: offending %q", c.name, cr.Offending)
		}
	}
}
