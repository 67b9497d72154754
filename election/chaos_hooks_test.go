//go:build chaos

package election

import (
	"testing"
	"testing/synctest"
	"time"
)

// SetTrustGrantForChaos: an acquire answered after its lease would have run out by the
// send-time measure starts a term all the same, with its deadline measured from the
// reply; the reference starts none.
func TestTrustGrantForChaos(t *testing.T) {
	for _, trust := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			fs := newFakeStore()
			fs.setFault(OpAcquire, func(call int) fault {
				if call == 1 {
					return fault{delay: ttl + 500*time.Millisecond}
				}
				return fault{blackhole: true}
			})
			fs.setFault(OpRenew, func(int) fault { return fault{blackhole: true} })
			e, _ := newTestElector(t, fs, Config{InstanceID: "a"})
			if trust {
				if err := SetTrustGrantForChaos(e); err != nil {
					t.Fatal(err)
				}
			}
			tr := newTracker()
			stop := start(t, e, tr.lead)
			time.Sleep(3 * ttl)
			fs.unblockAll()
			stop()
			terms := tr.all()
			granted := ttl + 500*time.Millisecond
			switch {
			case !trust && len(terms) != 0:
				t.Errorf("reference: terms %+v after a grant answered past its lease, want none", terms)
			case trust && (len(terms) == 0 || terms[0].Start != granted || terms[0].End != granted+localLease):
				t.Errorf("trusting the grant: terms %+v, want one from %v to %v", terms, granted, granted+localLease)
			}
		})
	}
}

// SetNeverTellForChaos and SetWorkLagForChaos: the elector stops at its deadline, but
// lead's context ends only at shutdown, or a lag later; never told, the step-down is
// recorded only when lead returns.
func TestLeadContextForChaos(t *testing.T) {
	const lag = 3 * time.Second
	for _, c := range []struct {
		name          string
		set           func(*Elector) error
		end, stepDown time.Duration
	}{
		{"reference", func(*Elector) error { return nil }, localLease, localLease},
		{"never-told", SetNeverTellForChaos, 10 * time.Second, 10 * time.Second},
		{"work-lag", func(e *Elector) error { return SetWorkLagForChaos(e, lag) }, localLease + lag, localLease},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := newFakeStore()
				fs.setFault(OpRenew, func(int) fault { return fault{blackhole: true} })
				e, rec := newTestElector(t, fs, Config{InstanceID: "a"})
				if err := c.set(e); err != nil {
					t.Fatal(err)
				}
				tr := newTracker()
				stop := start(t, e, tr.lead)
				time.Sleep(10 * time.Second)
				fs.unblockAll()
				stop()
				terms := tr.all()
				if len(terms) == 0 || terms[0].End != c.end {
					t.Fatalf("terms %+v, want the first to end for lead at %v", terms, c.end)
				}
				if sd := rec.find("step-down", ""); len(sd) == 0 || sd[0].At != c.stepDown {
					t.Errorf("step-downs %+v, want the first at %v", sd, c.stepDown)
				}
				if n := len(rec.find("invoke", OpRenew)); n != 1 {
					t.Errorf("%d renewals, want the one blackholed: none after the deadline", n)
				}
			})
		})
	}
}
