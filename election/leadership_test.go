package election

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// scriptedLease answers renewals from a script (true: extended; false: not held; a
// blocked renewal waits for its context) and counts releases.
type scriptedLease struct {
	renews   []bool // answers in order; past the end, renewals block until ctx is done
	calls    int
	releases int
}

func (l *scriptedLease) Renew(ctx context.Context) (bool, error) {
	l.calls++
	if l.calls > len(l.renews) {
		<-ctx.Done()
		return false, ctx.Err()
	}
	return l.renews[l.calls-1], nil
}

func (l *scriptedLease) Release(context.Context) (bool, error) {
	l.releases++
	return true, nil
}

// TestLeadershipLead: a Leadership leads a term on a Lease it did not acquire: the local
// deadline counts from Term.Start, the renewals from renewFrom, and each way a term ends
// gives its reason, its context's cause, its recorded step-down and (only for a lead that
// returns) a release.
func TestLeadershipLead(t *testing.T) {
	cases := []struct {
		name    string
		renews  []bool
		lead    func(ctx context.Context)
		reason  Reason
		cause   error
		ended   time.Duration // when lead returns, from renewFrom
		renewed int           // renewals sent
		release int
	}{
		{"renew rejected", []bool{true, false}, nil, ReasonRenewRejected, ErrNotHeld, 2 * renewEvery, 2, 0},
		// Renewals from renewFrom (666ms, 1333ms) never answer: the deadline of the term's
		// start (1.9s - 300ms) ends it, a lease-expired step-down.
		{"no answer", nil, nil, ReasonLeaseExpired, ErrLeaseExpired, localLease - 300*time.Millisecond, 2, 0},
		{"lead returned", []bool{true}, func(context.Context) { time.Sleep(time.Second) }, ReasonLeadReturned, ErrLeadReturned, time.Second, 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := newTestRecorder()
				l, err := NewLeadership(Config{InstanceID: "a", Recorder: rec})
				if err != nil {
					t.Fatal(err)
				}
				lease := &scriptedLease{renews: c.renews}
				from := time.Now()
				term := Term{Token: 7, Instance: "a", Name: DefaultName, Start: from.Add(-300 * time.Millisecond)}
				var ended time.Duration
				var termCtx context.Context
				got := l.Lead(context.Background(), term, lease, from, func(ctx context.Context, tm Term) {
					if st := l.Status(); st.Role != RoleLeader || st.Token != 7 || tm != term {
						t.Errorf("Status %+v, term %+v while leading, want leader with token 7 and %+v", st, tm, term)
					}
					if c.lead != nil {
						c.lead(ctx)
					} else {
						<-ctx.Done()
					}
					ended, termCtx = time.Since(from), ctx
				})
				cause := context.Cause(termCtx)
				if got != c.reason || !errors.Is(cause, c.cause) || ended != c.ended {
					t.Errorf("Lead = %s, cause %v at %v; want %s, %v at %v", got, cause, ended, c.reason, c.cause, c.ended)
				}
				if renews := rec.find("invoke", OpRenew); len(renews) != c.renewed || renews[0].At != renewEvery {
					t.Errorf("renewals %+v, want %d, the first %v after renewFrom", renews, c.renewed, renewEvery)
				}
				if downs := rec.find("step-down", ""); len(downs) != 1 || downs[0].Reason != c.reason || downs[0].Token != 7 {
					t.Errorf("step-downs %+v, want one of token 7 for %s", downs, c.reason)
				}
				if lease.releases != c.release || len(rec.find("ok", OpRelease)) != c.release {
					t.Errorf("%d releases (%d recorded), want %d", lease.releases, len(rec.find("ok", OpRelease)), c.release)
				}
				if st := l.Status(); st.Role != RoleFollower || st.Token != 0 || l.Check(0) != nil {
					t.Errorf("after the term: Status %+v, Check %v; want a healthy follower", st, l.Check(0))
				}
			})
		})
	}
}

// lostLease is a scriptedLease that is lost (its Lost channel closed) at a given time.
type lostLease struct {
	scriptedLease
	lost chan struct{}
}

func (l *lostLease) Lost() <-chan struct{} { return l.lost }

// TestLeadershipLostLease: a LostLease that says it is lost ends the term before its
// deadline, a lease-lost step-down, with no release; Release then releases it outside
// the term, recorded.
func TestLeadershipLostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := newTestRecorder()
		l, err := NewLeadership(Config{InstanceID: "a", Recorder: rec})
		if err != nil {
			t.Fatal(err)
		}
		lease := &lostLease{scriptedLease: scriptedLease{renews: []bool{true, true, true}}, lost: make(chan struct{})}
		from := time.Now()
		time.AfterFunc(time.Second, func() { close(lease.lost) })
		var cause error
		var ended time.Duration
		got := l.Lead(context.Background(), Term{Token: 7, Instance: "a", Start: from}, lease, from, func(ctx context.Context, _ Term) {
			<-ctx.Done()
			cause, ended = context.Cause(ctx), time.Since(from)
		})
		if got != ReasonLeaseLost || !errors.Is(cause, ErrLeaseLost) || ended != time.Second {
			t.Errorf("Lead = %s, cause %v at %v; want %s, %v at 1s", got, cause, ended, ReasonLeaseLost, ErrLeaseLost)
		}
		if downs := rec.find("step-down", ""); len(downs) != 1 || downs[0].Reason != ReasonLeaseLost || lease.releases != 0 {
			t.Errorf("step-downs %+v, %d releases; want one lease-lost step-down and no release", downs, lease.releases)
		}
		if !l.Release(context.Background(), 7, lease, "lost") || lease.releases != 1 || len(rec.find("ok", OpRelease)) != 1 {
			t.Errorf("Release: %d releases, %d recorded; want 1 and 1", lease.releases, len(rec.find("ok", OpRelease)))
		}
	})
}

func TestNewLeadershipValidates(t *testing.T) {
	_, err := NewLeadership(Config{InstanceID: "a", RenewInterval: time.Second, RequestTimeout: time.Second})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "RequestTimeout" || !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewLeadership with RequestTimeout = RenewInterval: %v, want a *ConfigError on RequestTimeout", err)
	}
}
