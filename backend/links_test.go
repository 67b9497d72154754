package backend_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	toxiproxyserver "github.com/Shopify/toxiproxy/v2"
	toxiproxy "github.com/Shopify/toxiproxy/v2/client"
	"github.com/rs/zerolog"

	"github.com/fenceline/fenceline/backend"
)

// toxiAPI runs an in-process toxiproxy API for a test and returns its base URL.
func toxiAPI(t *testing.T) string {
	t.Helper()
	srv := toxiproxyserver.NewServer(toxiproxyserver.NewMetricsContainer(nil), zerolog.Nop())
	h := httptest.NewServer(srv.Routes())
	t.Cleanup(func() {
		_ = srv.Collection.Clear()
		h.Close()
	})
	return h.URL
}

// TestLinks drives a real toxiproxy through Links and reads the result back with
// toxiproxy's own client: the toxics land on the node's Redis proxy and go away again.
func TestLinks(t *testing.T) {
	api := toxiAPI(t)
	var l backend.Links
	l.SetAPI(api)
	ctx := context.Background()
	up, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	listen, err := l.CreateProxy(ctx, backend.RedisProxyName("n1"), "127.0.0.1:0", up.Addr().String())
	if err != nil || !strings.HasPrefix(listen, "127.0.0.1:") || strings.HasSuffix(listen, ":0") {
		t.Fatalf("create: %q, %v", listen, err)
	}
	if err := l.AddRedisToxic(ctx, "n1", backend.Toxic{Name: "slow", Type: "latency", Stream: "upstream",
		Attributes: map[string]any{"latency": 1500}}); err != nil {
		t.Fatal(err)
	}
	px, err := toxiproxy.NewClient(api).Proxy("n1-redis")
	if err != nil {
		t.Fatal(err)
	}
	toxics, err := px.Toxics()
	if err != nil || len(toxics) != 1 || toxics[0].Name != "slow" || toxics[0].Toxicity != 1 ||
		toxics[0].Attributes["latency"] != float64(1500) || toxics[0].Stream != "upstream" {
		t.Fatalf("toxics %+v, %v", toxics, err)
	}
	// Removing twice: the second time there is nothing to remove, which is no error.
	for range 2 {
		if err := l.RemoveRedisToxics(ctx, "n1", "slow"); err != nil {
			t.Fatal(err)
		}
	}
	if toxics, _ := px.Toxics(); len(toxics) != 0 {
		t.Fatalf("left: %+v", toxics)
	}
	// A node without a proxy is an error, not a silent success.
	if err := l.RemoveRedisToxics(ctx, "n9", "slow"); err == nil {
		t.Fatal("removing a toxic from a proxy that does not exist succeeded")
	}
	if err := l.AddRedisToxic(ctx, "n1", backend.Toxic{Name: "x", Type: "no-such-type", Stream: "upstream"}); err == nil {
		t.Fatal("a toxic of an unknown type was accepted")
	}
	_ = l.AddRedisToxic(ctx, "n1", backend.Toxic{Name: "cut", Type: "timeout", Stream: "downstream"})
	if err := l.ResetLinks(ctx); err != nil {
		t.Fatal(err)
	}
	if toxics, _ := px.Toxics(); len(toxics) != 0 {
		t.Fatalf("after reset: %+v", toxics)
	}
}

// TestLinksHonourContext: an API that never answers does not hold a fault past its
// context (toxiproxy's own client takes none and would wait for its HTTP timeout).
func TestLinksHonourContext(t *testing.T) {
	block := make(chan struct{})
	h := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}))
	defer h.Close()
	defer close(block)
	var l backend.Links
	l.SetAPI(h.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	err := l.AddRedisToxic(ctx, "n1", backend.Toxic{Name: "x", Type: "latency", Stream: "upstream"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the context's deadline", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Fatalf("returned after %v", d)
	}
	var none backend.Links
	if err := none.ResetLinks(context.Background()); err == nil {
		t.Fatal("Links without an API succeeded")
	}
}

func TestSpecDefaults(t *testing.T) {
	s, err := backend.Spec{Dir: "d"}.WithDefaults()
	if err != nil || s.Nodes != backend.DefaultNodes {
		t.Fatalf("%+v, %v", s, err)
	}
	for _, bad := range []backend.Spec{{}, {Dir: "d", Nodes: -1}, {Dir: "d", SourceRate: -1}, {Dir: "d", RedlockServers: -1},
		{Dir: "d", RedlockServers: 2, Redis: backend.RedisSpec{Topology: backend.TopologySentinel}}} {
		if _, err := bad.WithDefaults(); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: err %v, want one line", bad, err)
		}
	}
}

func TestWaitReady(t *testing.T) {
	ctx := context.Background()
	n := 0
	if err := backend.WaitReady(ctx, "x", 5*time.Second, nil, func(context.Context) error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	}); err != nil || n != 3 {
		t.Fatalf("ready after %d probes: %v", n, err)
	}
	exited := make(chan struct{})
	close(exited)
	never := func(context.Context) error { return errors.New("no") }
	if err := backend.WaitReady(ctx, "x", 5*time.Second, exited, never); !errors.Is(err, backend.ErrExited) {
		t.Fatalf("exited: %v", err)
	}
	if err := backend.WaitReady(ctx, "x", 100*time.Millisecond, nil, never); err == nil || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("timeout: %v", err)
	}
}
