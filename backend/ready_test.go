package backend

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A server that answers, but not 200, is told apart from one that does not answer, through
// WaitReady's timeout: the mutation pipeline kills a mutant whose node is up and unhealthy
// for the whole start, where one that never answers leaves it undecided.
func TestWaitReadyUnhealthy(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	err := WaitReady(context.Background(), "node", 300*time.Millisecond, nil, func(ctx context.Context) error {
		return ProbeHTTP(ctx, srv.URL+"/health")
	})
	var u *UnhealthyError
	if !errors.As(err, &u) || u.Status != "503 Service Unavailable" {
		t.Errorf("WaitReady on a 503: %v, want an UnhealthyError", err)
	}

	srv.Close()
	err = WaitReady(context.Background(), "node", 300*time.Millisecond, nil, func(ctx context.Context) error {
		return ProbeHTTP(ctx, srv.URL+"/health")
	})
	if err == nil || errors.As(err, &u) {
		t.Errorf("WaitReady on nothing listening: %v, want an error that is not an UnhealthyError", err)
	}
}

// A probe that the timeout cuts short does not hide what the probes before it were
// answered: a node that answered 503 throughout, but whose last answer was slow (a loaded
// machine), is still unhealthy. A mutant's run was left undecided so: "did not answer
// within 15s: context deadline exceeded", its node's log full of refused acquires.
func TestWaitReadyUnhealthyLastProbeCut(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 1 {
			select { // slower than the rest of the wait
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	err := WaitReady(context.Background(), "node", 300*time.Millisecond, nil, func(ctx context.Context) error {
		return ProbeHTTP(ctx, srv.URL+"/health")
	})
	var u *UnhealthyError
	if !errors.As(err, &u) {
		t.Errorf("WaitReady whose last probe was cut short: %v, want the UnhealthyError before it", err)
	}
}
