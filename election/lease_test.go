package election

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Default timings with LeaseTTL 2s: renew every 666.67ms, deadline 1.9s after send,
// request timeout 333ms, retry 500ms.
const (
	ttl        = DefaultLeaseTTL
	renewEvery = ttl / 3
	margin     = ttl / 20
	localLease = ttl - margin // 1.9s
	retry      = ttl / 4
	reqTimeout = renewEvery / 2
)

func TestRenewsBeforeDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		e, rec := newTestElector(t, fs, Config{InstanceID: "a"})
		tr := newTracker()
		stop := start(t, e, tr.lead)

		time.Sleep(10 * time.Second)
		if st := e.Status(); st.Role != RoleLeader || st.Token != 1 || st.Leader != "a" {
			t.Errorf("Status = %+v, want leader a with token 1", st)
		}
		renews := rec.find("invoke", OpRenew)
		if len(renews) != 15 { // 10s / 666.67ms
			t.Errorf("%d renewals in 10s, want 15", len(renews))
		}
		for i, r := range renews {
			if want := time.Duration(i+1) * renewEvery; r.At != want || r.Token != 1 {
				t.Errorf("renewal %d sent at %v with token %d, want %v with token 1", i, r.At, r.Token, want)
			}
		}
		if n := len(rec.find("ok", OpRenew)); n != len(renews) {
			t.Errorf("%d renewals ok, want %d", n, len(renews))
		}
		stop()

		terms := tr.all()
		if len(terms) != 1 || terms[0].Start != 0 || terms[0].End != 10*time.Second {
			t.Fatalf("terms = %+v, want one from 0s to 10s", terms)
		}
		if !errors.Is(terms[0].Cause, context.Canceled) {
			t.Errorf("cause = %v, want context.Canceled", terms[0].Cause)
		}
		sd := rec.find("step-down", "")
		if len(sd) != 1 || sd[0].Reason != ReasonShutdown || sd[0].Token != 1 {
			t.Errorf("step-downs = %+v, want one shutdown of token 1", sd)
		}
		if rel := rec.find("ok", OpRelease); len(rel) != 1 || rel[0].Token != 1 {
			t.Errorf("releases = %+v, want one ok of token 1", rel)
		}
		if h := fs.holder(); h != "" {
			t.Errorf("lock holds %q after shutdown, want released", h)
		}
		if st := e.Status(); st.Role != RoleFollower || st.Token != 0 {
			t.Errorf("Status after Run = %+v, want follower", st)
		}
	})
}

// A leader steps down at exactly Start + LeaseTTL - DriftMargin when no renewal succeeds,
// however the renewals fail, even when they hang. (The lock of the ended term is then
// released and a new term may start: see TestLostRenewReplyReleased.)
func TestStepDownWhenRenewalsFail(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault fault
	}{
		{"error", fault{err: errConnReset}},
		{"timeout", fault{hang: true}},
		{"blackhole", fault{blackhole: true}},
		{"slow", fault{delay: time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := newFakeStore()
				fs.setFault(OpRenew, func(int) fault { return tc.fault })
				e, rec := newTestElector(t, fs, Config{InstanceID: "a"})
				tr := newTracker()
				stop := start(t, e, tr.lead)

				time.Sleep(localLease - time.Millisecond)
				if st := e.Status(); st.Role != RoleLeader {
					t.Fatalf("not leader just before the deadline: %+v", st)
				}
				time.Sleep(time.Millisecond)
				synctest.Wait()
				if st := e.Status(); st.Role == RoleLeader && st.Token == 1 {
					t.Fatalf("still leading token 1 at the deadline: %+v", st)
				}
				terms := tr.all()
				if len(terms) < 1 || terms[0].End != localLease || !errors.Is(terms[0].Cause, ErrLeaseExpired) {
					t.Fatalf("terms = %+v, want the first ended at %v by ErrLeaseExpired", terms, localLease)
				}
				sd := rec.find("step-down", "")
				if len(sd) < 1 || sd[0].Reason != ReasonLeaseExpired || sd[0].At != localLease || sd[0].Token != 1 || sd[0].Lease != localLease {
					t.Errorf("step-downs = %+v, want token 1 lease-expired at %v, having counted %v", sd, localLease, localLease)
				}
				if tc.fault.blackhole {
					fs.unblockAll()
				}
				time.Sleep(2 * time.Minute)
				stop()
				// Renewals that got no answer are unknown, never retried in place, and
				// nothing else was sent while one was open.
				for _, s := range rec.find("unknown", OpRenew) {
					if s.Err == nil {
						t.Errorf("unknown renewal without error: %+v", s)
					}
				}
				if rec.maxOp != 1 {
					t.Errorf("%d requests open at once, want 1", rec.maxOp)
				}
				if ok := rec.find("ok", OpRenew); len(ok) != 0 {
					t.Errorf("renewals ok despite the fault: %+v", ok)
				}
			})
		})
	}
}

// The deadline is measured from before the request was sent, not from the reply; a slow
// but successful renewal extends it from its own send time.
func TestDriftMarginFromSendTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		fs.setFault(OpAcquire, func(int) fault { return fault{delay: 300 * time.Millisecond} })
		fs.setFault(OpRenew, func(call int) fault {
			if call == 1 {
				return fault{delay: 400 * time.Millisecond} // sent at 0.667s, answered at 1.067s
			}
			return fault{blackhole: true}
		})
		e, rec := newTestElector(t, fs, Config{InstanceID: "a"})
		tr := newTracker()
		stop := start(t, e, tr.lead)
		time.Sleep(5 * time.Second)
		fs.unblockAll()
		stop()

		terms := tr.all()
		want := renewEvery + localLease // the first renewal's send time + 1.9s
		if len(terms) == 0 || terms[0].Start != 300*time.Millisecond || terms[0].End != want {
			t.Fatalf("terms = %+v, want the first from 300ms to %v", terms, want)
		}
		if r := rec.find("ok", OpRenew); len(r) != 1 || r[0].At != renewEvery+400*time.Millisecond {
			t.Errorf("ok renewals = %+v, want one at %v", r, renewEvery+400*time.Millisecond)
		}
	})
}

func TestDriftMarginRespected(t *testing.T) {
	for _, m := range []time.Duration{time.Millisecond, 100 * time.Millisecond, 500 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			fs := newFakeStore()
			fs.setFault(OpRenew, func(int) fault { return fault{err: errConnReset} })
			e, _ := newTestElector(t, fs, Config{InstanceID: "a", DriftMargin: m})
			tr := newTracker()
			stop := start(t, e, tr.lead)
			time.Sleep(3 * time.Second)
			stop()
			if terms := tr.all(); len(terms) == 0 || terms[0].End != ttl-m {
				t.Errorf("margin %v: terms = %+v, want the first to end at %v", m, terms, ttl-m)
			}
		})
	}
}

// A renewal that Redis rejects ends the term at once, without a release.
func TestRenewRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		e, rec := newTestElector(t, fs, Config{InstanceID: "a"})
		tr := newTracker()
		tr.linger = 3 * time.Second // lead is slow to stop
		stop := start(t, e, tr.lead)

		time.Sleep(time.Second)
		fs.set("b:99", time.Minute) // someone else holds the lock now
		time.Sleep(10 * time.Second)
		stop()

		terms := tr.all()
		if len(terms) != 1 || !errors.Is(terms[0].Cause, ErrNotHeld) {
			t.Fatalf("terms = %+v, want one ended by ErrNotHeld", terms)
		}
		sd := rec.find("step-down", "")
		if len(sd) != 1 || sd[0].Reason != ReasonRenewRejected || sd[0].At != 2*renewEvery {
			t.Errorf("step-downs = %+v, want renew-rejected at %v", sd, 2*renewEvery)
		}
		if r := rec.find("fail", OpRenew); len(r) != 1 || !errors.Is(r[0].Err, ErrNotHeld) {
			t.Errorf("failed renewals = %+v, want one with ErrNotHeld", r)
		}
		if r := rec.find("invoke", OpRelease); len(r) != 0 {
			t.Errorf("release sent after a rejected renewal: %+v", r)
		}
		// No campaigning while lead still ran.
		for _, s := range rec.find("invoke", OpAcquire)[1:] {
			if s.At < 2*renewEvery+tr.linger {
				t.Errorf("acquire at %v, before lead returned at %v", s.At, 2*renewEvery+tr.linger)
			}
		}
		if st := e.Status(); st.Leader != "b" || st.LeaderToken != 99 {
			t.Errorf("Status = %+v, want observed leader b/99", st)
		}
		if h := fs.holder(); h != "b:99" {
			t.Errorf("lock = %q, want b:99 untouched", h)
		}
	})
}

// A standby waits for the holder's PTTL when it is shorter than RetryInterval, and for
// RetryInterval otherwise.
func TestStandbyWaitsForPTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		fs.counter = 5
		fs.set("b:5", 1200*time.Millisecond)
		e, rec := newTestElector(t, fs, Config{InstanceID: "a"})
		tr := newTracker()
		stop := start(t, e, tr.lead)
		time.Sleep(3 * time.Second)
		stop()

		var at []time.Duration
		for _, s := range rec.find("invoke", OpAcquire) {
			at = append(at, s.At)
		}
		// PTTL 1200 > 500: retry at 500, 1000; then PTTL 200: at 1200+2ms.
		want := []time.Duration{0, retry, 2 * retry, 1200*time.Millisecond + pttlMargin}
		if len(at) != len(want) {
			t.Fatalf("acquires at %v, want %v", at, want)
		}
		for i := range want {
			if at[i] != want[i] {
				t.Fatalf("acquires at %v, want %v", at, want)
			}
		}
		if terms := tr.all(); len(terms) != 1 || terms[0].Term.Token != 6 || terms[0].Start != want[3] {
			t.Errorf("terms = %+v, want token 6 from %v", terms, want[3])
		}
	})
}

// A graceful release wakes a standby at once, and tokens increase across terms.
func TestReleaseNoticeHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		a, _ := newTestElector(t, fs, Config{InstanceID: "a", RetryInterval: ttl}) // retry cannot explain a fast takeover
		b, _ := newTestElector(t, fs, Config{InstanceID: "b", RetryInterval: ttl})
		ta, tb := newTracker(), newTracker()
		stopA := start(t, a, ta.lead)
		synctest.Wait()
		stopB := start(t, b, tb.lead)
		time.Sleep(time.Second)
		if a.Status().Role != RoleLeader || b.Status().Role != RoleFollower {
			t.Fatalf("a %+v, b %+v: want a leading", a.Status(), b.Status())
		}
		stopA()
		synctest.Wait()
		terms := tb.all()
		if len(terms) != 1 || terms[0].Start != time.Second || terms[0].Term.Token != 2 {
			t.Fatalf("b's terms = %+v, want token 2 from 1s (no time lost)", terms)
		}
		if st := b.Status(); st.Role != RoleLeader || st.Token != 2 {
			t.Errorf("b = %+v, want leader with token 2", st)
		}
		stopB()
	})
}

// After a failed acquire the elector does not re-send it: the outcome is unknown and the
// next attempt is a new one, RetryInterval later.
func TestUnknownAcquireNotResent(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fault    fault
		answered time.Duration
	}{
		{"error", fault{err: errConnReset}, 0},
		{"timeout", fault{hang: true}, reqTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := newFakeStore()
				fs.setFault(OpAcquire, func(call int) fault {
					if call == 1 {
						return tc.fault
					}
					return fault{}
				})
				e, rec := newTestElector(t, fs, Config{InstanceID: "a"})
				tr := newTracker()
				stop := start(t, e, tr.lead)
				time.Sleep(2 * time.Second)
				stop()
				inv := rec.find("invoke", OpAcquire)
				unk := rec.find("unknown", OpAcquire)
				ok := rec.find("ok", OpAcquire)
				if len(inv) != 2 || len(unk) != 1 || len(ok) != 1 {
					t.Fatalf("steps = %+v, want one unknown acquire then one ok", rec.all())
				}
				if unk[0].At != tc.answered || inv[1].At != tc.answered+retry || ok[0].Token != 1 {
					t.Errorf("unknown at %v, retried at %v with token %d; want %v, %v, 1",
						unk[0].At, inv[1].At, ok[0].Token, tc.answered, tc.answered+retry)
				}
			})
		})
	}
}

// A win whose reply arrives after the local deadline is not led.
func TestLateAcquireReplyIsNotLed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		fs.setFault(OpAcquire, func(call int) fault {
			if call == 1 {
				return fault{delay: localLease}
			}
			return fault{}
		})
		e, rec := newTestElector(t, fs, Config{InstanceID: "a", RequestTimeout: 300 * time.Millisecond})
		tr := newTracker()
		stop := start(t, e, tr.lead)
		time.Sleep(5 * time.Second)
		stop()
		sd := rec.find("step-down", "")
		if len(sd) < 1 || sd[0].Token != 1 || sd[0].Reason != ReasonLeaseExpired || sd[0].At != localLease {
			t.Fatalf("step-downs = %+v, want token 1 lease-expired at %v", sd, localLease)
		}
		terms := tr.all()
		if len(terms) == 0 || terms[0].Term.Token == 1 {
			t.Fatalf("terms = %+v, want token 1 never led", terms)
		}
		// The lock of token 1 is this instance's and no term uses it: the next attempt
		// releases it at once (no waiting for it to expire), and token 2 starts then.
		if terms[0].Term.Token != 2 || terms[0].Start != localLease {
			t.Errorf("terms = %+v, want token 2 from %v", terms, localLease)
		}
		if r := rec.find("ok", OpRelease); len(r) == 0 || r[0].Token != 1 || r[0].At != localLease {
			t.Errorf("releases = %+v, want token 1's at %v", r, localLease)
		}
	})
}

// When lead returns on its own, the lease is released and the elector backs off, so a
// standby takes over.
func TestLeadReturned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		a, rec := newTestElector(t, fs, Config{InstanceID: "a"})
		b, _ := newTestElector(t, fs, Config{InstanceID: "b"})
		ta, tb := newTracker(), newTracker()
		ta.returnAfter = time.Second
		stopA := start(t, a, ta.lead)
		synctest.Wait()
		stopB := start(t, b, tb.lead)
		time.Sleep(3 * time.Second)
		stopB()
		stopA()
		if sd := rec.find("step-down", ""); len(sd) == 0 || sd[0].Reason != ReasonLeadReturned {
			t.Errorf("a's step-downs = %+v, want lead-returned first", sd)
		}
		if terms := tb.all(); len(terms) != 1 || terms[0].Start != time.Second || terms[0].Term.Token != 2 {
			t.Errorf("b's terms = %+v, want token 2 from 1s", terms)
		}
		if terms := ta.all(); len(terms) == 0 || terms[0].End != time.Second || terms[0].Term.Token != 1 {
			t.Errorf("a's terms = %+v, want token 1 returned at 1s", terms)
		}
	})
}

func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, _ := newTestElector(t, newFakeStore(), Config{InstanceID: "a"})
		stop := start(t, e, newTracker().lead)
		synctest.Wait()
		if err := e.Run(context.Background(), newTracker().lead); !errors.Is(err, ErrRunning) {
			t.Errorf("second Run = %v, want ErrRunning", err)
		}
		stop()
	})
}

// A term that renewed counts its lease from the last confirmed renewal's send, as it did
// from the acquire's: LeaseTTL - DriftMargin, which the step-down tells a LeaseRecorder.
// The deadline moves with it: the step-down comes that long after the renewal was sent.
func TestStepDownCountsItsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := newFakeStore()
		fs.setFault(OpRenew, func(call int) fault {
			if call <= 2 {
				return fault{}
			}
			return fault{err: errConnReset}
		})
		e, rec := newTestElector(t, fs, Config{InstanceID: "a"})
		tr := newTracker()
		stop := start(t, e, tr.lead)
		time.Sleep(2*renewEvery + localLease)
		synctest.Wait()
		stop()
		sd := rec.find("step-down", "")
		// The second renewal, sent at 2*renewEvery, set the deadline.
		if len(sd) < 1 || sd[0].Reason != ReasonLeaseExpired || sd[0].At != 2*renewEvery+localLease || sd[0].Lease != localLease {
			t.Fatalf("step-downs = %+v, want the first lease-expired at %v, having counted %v", sd, 2*renewEvery+localLease, localLease)
		}
	})
}

// Without LeaseRecorder, a Recorder is told the step-down by StepDown.
func TestStepDownPlainRecorder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &plainRecorder{}
		cfg := Config{InstanceID: "a", Recorder: rec}.WithDefaults()
		e := newElector(newFakeStore(), cfg)
		stop := start(t, e, func(ctx context.Context, _ Term) { <-ctx.Done() })
		time.Sleep(renewEvery)
		stop()
		if rec.stepDowns.Load() != 1 {
			t.Fatalf("%d step-downs recorded, want 1", rec.stepDowns.Load())
		}
	})
}

// plainRecorder is a Recorder that is not a LeaseRecorder.
type plainRecorder struct{ stepDowns atomic.Int32 }

func (*plainRecorder) Invoke(Op, int64) func(Result)         { return func(Result) {} }
func (r *plainRecorder) StepDown(token int64, reason Reason) { r.stepDowns.Add(1) }
