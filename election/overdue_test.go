package election

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A lead that ignores its term's end is reported exactly LeadGrace after the term ended:
// logged, counted, Check fails, the hook is called once; and no longer once it returns.
// A lead that returns within the grace is not reported.
func TestLeadGrace(t *testing.T) {
	const grace = 3 * time.Second
	for _, tc := range []struct {
		name     string
		returnIn time.Duration // how long after the term's end lead returns
		overdue  bool
	}{
		{"returns within the grace", grace - time.Millisecond, false},
		{"overdue", grace + time.Second, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := newFakeStore()
				fs.setFault(OpRenew, func(int) fault { return fault{err: errConnReset} }) // the term ends at the deadline
				reg := prometheus.NewPedanticRegistry()
				m, err := NewPrometheusMetrics(reg, nil)
				if err != nil {
					t.Fatal(err)
				}
				var mu sync.Mutex
				var hooked []Term
				e, _ := newTestElector(t, fs, Config{InstanceID: "a", LeadGrace: grace, Metrics: m,
					OnLeadOverdue: func(term Term) { mu.Lock(); hooked = append(hooked, term); mu.Unlock() }})
				hooks := func() []Term { mu.Lock(); defer mu.Unlock(); return append([]Term(nil), hooked...) }
				first := true
				stop := start(t, e, func(ctx context.Context, term Term) {
					if !first {
						<-ctx.Done()
						return
					}
					first = false
					<-ctx.Done()
					time.Sleep(tc.returnIn) // ignores the end of its term for this long
				})
				defer stop()

				time.Sleep(localLease + grace - time.Millisecond) // the term ended at localLease
				synctest.Wait()
				if h := hooks(); len(h) != 0 {
					t.Fatalf("hook called %v before the grace ran out", h)
				}
				if err := e.Check(time.Hour); err != nil {
					t.Fatalf("Check before the grace ran out: %v", err)
				}
				time.Sleep(time.Millisecond)
				synctest.Wait()
				h, checked := hooks(), e.Check(time.Hour)
				overdue := gather(t, reg, "fenceline_election_lead_overdue_total", "")
				if !tc.overdue {
					if len(h) != 0 || checked != nil || overdue != 0 {
						t.Fatalf("lead returned in time: hook %v, Check %v, lead_overdue %v; want none", h, checked, overdue)
					}
					return
				}
				if len(h) != 1 || h[0].Token != 1 {
					t.Errorf("hook calls %+v, want one with token 1", h)
				}
				if !errors.Is(checked, ErrLeadOverdue) {
					t.Errorf("Check at the grace: %v, want ErrLeadOverdue", checked)
				}
				if overdue != 1 {
					t.Errorf("lead_overdue_total = %v, want 1", overdue)
				}
				if st := e.Status(); st.Role != RoleFollower {
					t.Errorf("Status %+v while the old lead runs, want follower", st)
				}
				time.Sleep(time.Second) // lead returns
				synctest.Wait()
				if err := e.Check(time.Hour); err != nil {
					t.Errorf("Check after lead returned: %v", err)
				}
				if h := hooks(); len(h) != 1 {
					t.Errorf("hook calls %+v after lead returned, want still one", h)
				}
			})
		})
	}
}
