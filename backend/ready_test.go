package backend

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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
