package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Toxic is a toxiproxy toxic on a link: latency, a reset, a blackhole...
type Toxic struct {
	// Name identifies it on its link, so that a heal removes exactly what was added.
	Name string `json:"name"`
	// Type is a toxiproxy toxic type: "latency", "reset_peer", "timeout"...
	Type string `json:"type"`
	// Stream is "upstream" (node → Redis) or "downstream".
	Stream string `json:"stream"`
	// Toxicity is the probability that the toxic applies to a connection; toxiproxy
	// reads 0 as never, so a Toxic with 0 is sent as 1.
	Toxicity float64 `json:"toxicity"`
	// Attributes are the type's settings ("latency" in ms, "timeout" in ms...).
	Attributes map[string]any `json:"attributes"`
}

// RedisProxyName and SourceProxyName name node id's proxies, in every backend.
func RedisProxyName(id string) string  { return id + "-redis" }
func SourceProxyName(id string) string { return id + "-source" }

// RedlockProxyName names node id's proxy to Redlock server i (1-based, Spec.RedlockServers).
func RedlockProxyName(id string, i int) string { return fmt.Sprintf("%s-redlock%d", id, i) }

// Links controls the nodes' links to Redis through toxiproxy's HTTP API, with ctx on
// every call (toxiproxy's Go client takes none). Both backends embed one; its methods are
// safe for concurrent use. The zero value has no API: every call fails until SetAPI.
type Links struct {
	api string // base URL of the API, "http://host:port"
	hc  http.Client
}

// SetAPI points l at the toxiproxy API at base ("http://127.0.0.1:8474"). Call it once,
// before any other method.
func (l *Links) SetAPI(base string) {
	l.api = base
	l.hc.Timeout = 10 * time.Second
}

// CreateProxy creates proxy name listening on listen (port 0: toxiproxy picks one) to
// upstream, and returns the address it listens on.
func (l *Links) CreateProxy(ctx context.Context, name, listen, upstream string) (string, error) {
	var p struct {
		Listen string `json:"listen"`
	}
	body := map[string]any{"name": name, "listen": listen, "upstream": upstream, "enabled": true}
	if err := l.do(ctx, http.MethodPost, "/proxies", body, &p, http.StatusCreated); err != nil {
		return "", fmt.Errorf("cluster: proxy %s: %w", name, err)
	}
	return p.Listen, nil
}

// AddRedisToxic adds t to node id's link to Redis.
func (l *Links) AddRedisToxic(ctx context.Context, id string, t Toxic) error {
	return l.AddToxic(ctx, RedisProxyName(id), t)
}

// AddToxic adds t to proxy p.
func (l *Links) AddToxic(ctx context.Context, p string, t Toxic) error {
	if t.Toxicity == 0 {
		t.Toxicity = 1
	}
	if t.Attributes == nil {
		t.Attributes = map[string]any{}
	}
	if err := l.do(ctx, http.MethodPost, "/proxies/"+url.PathEscape(p)+"/toxics", t, nil, http.StatusOK); err != nil {
		return fmt.Errorf("cluster: add toxic %s to %s: %w", t.Name, p, err)
	}
	return nil
}

// RemoveRedisToxics removes the named toxics from node id's link to Redis; a toxic that
// is not there is not an error.
func (l *Links) RemoveRedisToxics(ctx context.Context, id string, names ...string) error {
	return l.RemoveToxics(ctx, RedisProxyName(id), names...)
}

// RemoveToxics removes the named toxics from proxy p; a toxic that is not there is not
// an error.
func (l *Links) RemoveToxics(ctx context.Context, p string, names ...string) error {
	var errs []error
	for _, n := range names {
		err := l.do(ctx, http.MethodDelete, "/proxies/"+url.PathEscape(p)+"/toxics/"+url.PathEscape(n), nil, nil, http.StatusNoContent)
		if err != nil && !(errors.Is(err, errNotFound) && strings.Contains(err.Error(), "toxic not found")) {
			errs = append(errs, fmt.Errorf("cluster: remove toxic %s from %s: %w", n, p, err))
		}
	}
	return errors.Join(errs...)
}

// ResetLinks removes every toxic of every link and enables every proxy.
func (l *Links) ResetLinks(ctx context.Context) error {
	if err := l.do(ctx, http.MethodPost, "/reset", nil, nil, http.StatusNoContent); err != nil {
		return fmt.Errorf("cluster: toxiproxy reset: %w", err)
	}
	return nil
}

var errNotFound = errors.New("not found")

// do sends one request; want is the success status. A reply of 404 is errNotFound.
func (l *Links) do(ctx context.Context, method, path string, body, out any, want int) error {
	if l.api == "" {
		return errors.New("no toxiproxy API")
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, l.api+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s", errNotFound, bytes.TrimSpace(b))
	case resp.StatusCode != want && !(want == http.StatusNoContent && resp.StatusCode == http.StatusOK):
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return nil
}

// StorePostgres is NodeOptions.Store of a cluster whose nodes keep the cursor in
// PostgreSQL.
const StorePostgres = "postgres"

// PostgresProxyName names node id's proxy to PostgreSQL.
func PostgresProxyName(id string) string { return id + "-postgres" }
