package ledger

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
)

func TestNewHTTPSourceValidates(t *testing.T) {
	for _, cfg := range []HTTPSourceConfig{{}, {BaseURL: "127.0.0.1:80"}, {BaseURL: "ftp://x"}, {BaseURL: "http://x", Timeout: -1}} {
		if _, err := NewHTTPSource(cfg); !errors.Is(err, listener.ErrInvalidConfig) {
			t.Errorf("NewHTTPSource(%+v): err %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

func TestHTTPSourceFetch(t *testing.T) {
	src := startSource(t, source.Config{Total: 25})
	ctx := context.Background()
	evs, err := src.Fetch(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 10 || evs[0] != source.At(1) || evs[9] != source.At(10) {
		t.Fatalf("Fetch(0, 10) = %+v", evs)
	}
	evs, err = src.Fetch(ctx, 20, 10)
	if err != nil || len(evs) != 5 || evs[4] != source.At(25) {
		t.Fatalf("Fetch(20, 10) = %+v, %v", evs, err)
	}
	if evs, err := src.Fetch(ctx, 25, 10); err != nil || len(evs) != 0 {
		t.Fatalf("Fetch at the end = %+v, %v", evs, err)
	}
	_, err = src.Fetch(ctx, 0, source.MaxLimit+1)
	if !errors.Is(err, ErrSource) || !strings.Contains(err.Error(), "invalid limit") {
		t.Errorf("Fetch with a too large limit: err %v, want ErrSource naming the limit", err)
	}
}

func serveBody(t *testing.T, status int, body string) *HTTPSource {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(ts.Close)
	s, err := NewHTTPSource(HTTPSourceConfig{BaseURL: ts.URL + "/", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestHTTPSourceRejectsBadAnswers(t *testing.T) {
	rec := func(id, amount string) string {
		return `{"id":"` + id + `","paging_token":"` + id + `","type":"payment","ledger":1,"from":"acct-01","to":"acct-02","amount":"` + amount + `"}`
	}
	page := func(recs ...string) string {
		return `{"_embedded":{"records":[` + strings.Join(recs, ",") + `]},"_links":{}}`
	}
	for name, tc := range map[string]struct {
		status int
		body   string
	}{
		"500":          {500, "oops"},
		"not json":     {200, "<html>"},
		"bad record":   {200, page(rec("6", "x"))},
		"out of order": {200, page(rec("7", "1"), rec("6", "1"))},
		"at cursor":    {200, page(rec("5", "1"))},
		"too many":     {200, page(rec("6", "1"), rec("7", "1"), rec("8", "1"))},
	} {
		_, err := serveBody(t, tc.status, tc.body).Fetch(context.Background(), 5, 2)
		if !errors.Is(err, ErrSource) {
			t.Errorf("%s: err %v, want ErrSource", name, err)
		}
	}
	if evs, err := serveBody(t, 200, page(rec("6", "3"), rec("9", "1"))).Fetch(context.Background(), 5, 2); err != nil || len(evs) != 2 {
		t.Errorf("a good page with a gap (allowed here): %+v, %v", evs, err)
	}
}

func TestHTTPSourceTimeoutAndCancel(t *testing.T) {
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer ts.Close()
	defer close(release)
	s, err := NewHTTPSource(HTTPSourceConfig{BaseURL: ts.URL, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = s.Fetch(context.Background(), 0, 10)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrSource) {
		t.Errorf("hanging server: err %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Fetch took %v with a 100ms timeout", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Fetch(ctx, 0, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled ctx: err %v", err)
	}
}

func TestHTTPSourceConnectionRefused(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	s, err := NewHTTPSource(HTTPSourceConfig{BaseURL: url})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fetch(context.Background(), 0, 1); err == nil || errors.Is(err, ErrSource) {
		t.Errorf("closed server: err %v, want a transport error", err)
	}
}

// FuzzDecodePage: the page parser never panics, and what it accepts is a valid batch for
// the cursor: at most limit events, ids strictly increasing after the cursor.
func FuzzDecodePage(f *testing.F) {
	good := `{"_embedded":{"records":[{"id":"6","paging_token":"6","type":"payment","ledger":1,"from":"acct-01","to":"acct-02","amount":"5"}]},"_links":{}}`
	for _, s := range []string{good, "", "{}", `{"_embedded":{"records":null}}`, `{"_embedded":{"records":[{}]}}`, "[1,2]"} {
		f.Add(s, int64(5), 2)
	}
	f.Fuzz(func(t *testing.T, body string, cursor int64, limit int) {
		evs, err := decodePage(strings.NewReader(body), cursor, limit)
		if err != nil {
			return
		}
		if len(evs) > max(limit, 0) {
			t.Fatalf("%d events accepted with limit %d", len(evs), limit)
		}
		if len(evs) > 0 {
			if err := listener.ValidateBatch(cursor, evs); err != nil {
				t.Fatalf("accepted an invalid batch: %v", err)
			}
		}
	})
}

// startSource serves a source.Server on loopback and returns an HTTPSource for it.
func startSource(tb testing.TB, cfg source.Config) *HTTPSource {
	tb.Helper()
	s, err := source.NewServer(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	tb.Cleanup(ts.Close)
	hs, err := NewHTTPSource(HTTPSourceConfig{BaseURL: ts.URL})
	if err != nil {
		tb.Fatal(err)
	}
	return hs
}
