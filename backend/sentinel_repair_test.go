package backend

import (
	"context"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	toxiproxyserver "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// A replica chained behind another replica (which Sentinel, learning replicas only from
// the primary's INFO, may never see) is left alone by a plain check and pointed at the
// primary by a repairing one; the topology then settles.
func TestSettleRepointsChainedReplica(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := toxiproxyserver.NewServer(toxiproxyserver.NewMetricsContainer(nil), zerolog.Nop())
	h := httptest.NewServer(srv.Routes())
	defer h.Close()
	var links Links
	links.SetAPI(h.URL)
	s, err := StartSentinelSet(ctx, t.TempDir(), &links, RedisSpec{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := s.current()
	var via, stray *dataNode
	for _, d := range s.data {
		if d == p {
			continue
		}
		if via == nil {
			via = d
		} else {
			stray = d
		}
	}
	host, port, _ := net.SplitHostPort(via.Peer)
	if _, err := redisCall(ctx, stray.Proc.Addr(), "REPLICAOF", host, port); err != nil {
		t.Fatal(err)
	}
	if _, err := s.settled(ctx, false); err == nil || !strings.Contains(err.Error(), "not a connected replica") {
		t.Fatalf("plain check of a chain: %v", err)
	}
	if _, err := s.settled(ctx, true); err == nil || !strings.Contains(err.Error(), "pointed it at "+p.Name) {
		t.Fatalf("repairing check of a chain: %v", err)
	}
	if _, m, _, err := role(ctx, stray); err != nil || m != p.Peer {
		t.Fatalf("%s follows %s (%v), want %s", stray.Name, m, err, p.Peer)
	}
	if err := s.waitSettled(ctx, SettleTimeout); err != nil {
		t.Fatal(err)
	}
}
