package etcdserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// gateway sends one request to etcd's JSON gateway (no client library: the package must
// not depend on the one under test).
func gateway(t *testing.T, addr, path string, req, resp any) {
	t.Helper()
	body, _ := json.Marshal(req)
	r, err := http.Post("http://"+addr+path, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("%s: %s", path, r.Status)
	}
	if resp != nil {
		if err := json.NewDecoder(r.Body).Decode(resp); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func put(t *testing.T, addr, k, v string) {
	gateway(t, addr, "/v3/kv/put", map[string]string{"key": b64(k), "value": b64(v)}, nil)
}

func get(t *testing.T, addr, k string) string {
	var resp struct {
		Kvs []struct{ Value string } `json:"kvs"`
	}
	gateway(t, addr, "/v3/kv/range", map[string]string{"key": b64(k)}, &resp)
	if len(resp.Kvs) == 0 {
		return ""
	}
	v, _ := base64.StdEncoding.DecodeString(resp.Kvs[0].Value)
	return string(v)
}

func TestSingleMemberKeepsDataAcrossKill(t *testing.T) {
	c := New(t, 1)
	m := c.Members()[0]
	put(t, m.Addr(), "k", "v1")
	m.Kill()
	if m.Running() {
		t.Fatal("running after Kill")
	}
	if err := Health(context.Background(), m.Addr()); err == nil {
		t.Fatal("a killed member answers /health")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := m.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if got := get(t, m.Addr(), "k"); got != "v1" {
		t.Fatalf("after restart k = %q, want v1", got)
	}
	if err := m.Restart(ctx); err == nil {
		t.Fatal("Restart of a running member succeeded")
	}
}

func TestThreeMembersSurviveOneDown(t *testing.T) {
	c := New(t, 3)
	if got := len(c.Endpoints()); got != 3 {
		t.Fatalf("%d endpoints", got)
	}
	ms := c.Members()
	put(t, ms[0].Addr(), "k", "v1")
	if got := get(t, ms[2].Addr(), "k"); got != "v1" {
		t.Fatalf("read from e3 = %q, want v1", got)
	}
	ms[0].Kill()
	if err := ms[1].Pause(); err != nil {
		t.Fatal(err)
	}
	// Two of three down: no quorum, e3 reports itself unhealthy.
	deadline := time.Now().Add(20 * time.Second)
	for Health(context.Background(), ms[2].Addr()) == nil {
		if time.Now().After(deadline) {
			t.Fatal("e3 healthy without a quorum")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := ms[1].Resume(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ms[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	put(t, ms[2].Addr(), "k", "v2")
	if got := get(t, ms[0].Addr(), "k"); got != "v2" {
		t.Fatalf("read from restarted e1 = %q, want v2", got)
	}
}

func TestBadOptions(t *testing.T) {
	if _, err := Start(context.Background(), Options{}); err == nil {
		t.Error("no Dir: no error")
	}
	if _, err := Start(context.Background(), Options{Dir: t.TempDir(), Members: -1}); err == nil {
		t.Error("-1 members: no error")
	}
	if _, err := Start(context.Background(), Options{Dir: t.TempDir(), Binary: "no-such-etcd"}); err != ErrNotInstalled {
		t.Errorf("missing binary: %v, want ErrNotInstalled", err)
	}
}

// Leader names the member that is the raft leader, by the JSON gateway's status; once it
// is killed, another member leads.
func TestLeader(t *testing.T) {
	c := New(t, 3)
	ctx := context.Background()
	i, err := Leader(ctx, c.Endpoints())
	if err != nil {
		t.Fatal(err)
	}
	ms := c.Members()
	ms[i].Kill()
	deadline := time.Now().Add(20 * time.Second)
	for {
		j, err := Leader(ctx, c.Endpoints())
		if err == nil && j != i {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader 20s after the leader %s was killed: %d, %v", ms[i].Name(), j, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
