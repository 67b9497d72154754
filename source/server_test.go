package source

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock for rate tests.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTestServer(t *testing.T, cfg Config) *httptest.Server {
	t.Helper()
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts
}

func getPage(t *testing.T, rawURL string) Page {
	t.Helper()
	resp, err := http.Get(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", rawURL, resp.StatusCode)
	}
	var p Page
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	return p
}

func TestNewServerValidates(t *testing.T) {
	for _, cfg := range []Config{{Rate: -1}, {Backlog: -1}, {Total: -1}} {
		if _, err := NewServer(cfg); err == nil {
			t.Errorf("NewServer(%+v) accepted a bad config", cfg)
		}
	}
}

// TestPagination walks the feed by following next links and gets every event once, in
// order, each equal to At(i).
func TestPagination(t *testing.T) {
	ts := newTestServer(t, Config{Total: 100})
	next := ts.URL + "/events?limit=7"
	var got []Event
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("pagination does not end")
		}
		p := getPage(t, next)
		if len(p.Embedded.Records) == 0 {
			u, err := url.Parse(p.Links.Next.Href)
			if err != nil || u.Query().Get("cursor") != "100" {
				t.Errorf("empty page's next link %q, want cursor=100", p.Links.Next.Href)
			}
			break
		}
		if len(p.Embedded.Records) > 7 {
			t.Fatalf("page has %d records, limit 7", len(p.Embedded.Records))
		}
		for _, r := range p.Embedded.Records {
			e, err := r.Event()
			if err != nil {
				t.Fatal(err)
			}
			if r != NewRecord(At(e.ID)) {
				t.Fatalf("record %+v, want %+v", r, NewRecord(At(e.ID)))
			}
			got = append(got, e)
		}
		next = p.Links.Next.Href
	}
	if len(got) != 100 {
		t.Fatalf("got %d events, want 100", len(got))
	}
	for k, e := range got {
		if e != At(int64(k+1)) {
			t.Fatalf("event %d = %+v, want %+v", k, e, At(int64(k+1)))
		}
	}
}

func TestDefaultAndMaxLimit(t *testing.T) {
	ts := newTestServer(t, Config{})
	if n := len(getPage(t, ts.URL+"/events").Embedded.Records); n != DefaultLimit {
		t.Errorf("default page has %d records, want %d", n, DefaultLimit)
	}
	p := getPage(t, ts.URL+"/events?cursor=5000&limit=1000")
	if n := len(p.Embedded.Records); n != MaxLimit {
		t.Fatalf("max page has %d records, want %d", n, MaxLimit)
	}
	if first := p.Embedded.Records[0].ID; first != "5001" {
		t.Errorf("first record after cursor 5000 is %s", first)
	}
}

// TestRateLimit checks availability against an injected clock: nothing is served before
// its time.
func TestRateLimit(t *testing.T) {
	clk := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	s, err := NewServer(Config{Rate: 10, Backlog: 5, Total: 40, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	count := func(cursor int64) int {
		return len(getPage(t, ts.URL+"/events?limit=1000&cursor="+strconv.FormatInt(cursor, 10)).Embedded.Records)
	}
	if got := count(0); got != 5 {
		t.Errorf("at start: %d events, want the backlog of 5", got)
	}
	clk.Advance(999 * time.Millisecond)
	if got := s.Available(); got != 14 {
		t.Errorf("after 0.999s: Available() = %d, want 14", got)
	}
	clk.Advance(time.Millisecond)
	if got := count(0); got != 15 {
		t.Errorf("after 1s: %d events, want 15", got)
	}
	if got := count(15); got != 0 {
		t.Errorf("after 1s from cursor 15: %d events, want 0", got)
	}
	clk.Advance(time.Hour)
	if got := count(0); got != 40 {
		t.Errorf("after an hour: %d events, want Total 40", got)
	}
	clk.now = clk.now.Add(-2 * time.Hour) // a clock before Start serves the backlog only
	if got := s.Available(); got != 5 {
		t.Errorf("before start: Available() = %d, want 5", got)
	}
}

func TestBadParams(t *testing.T) {
	ts := newTestServer(t, Config{})
	for _, q := range []string{"cursor=-1", "cursor=x", "limit=0", "limit=1001", "limit=a", "order=desc"} {
		resp, err := http.Get(ts.URL + "/events?" + q)
		if err != nil {
			t.Fatal(err)
		}
		var p Problem
		err = json.NewDecoder(resp.Body).Decode(&p)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || err != nil || p.Status != 400 || p.Extras == nil || p.Extras.InvalidField == "" {
			t.Errorf("GET ?%s: status %d, problem %+v, decode error %v", q, resp.StatusCode, p, err)
		}
	}
	resp, err := http.Post(ts.URL+"/events", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /events: status %d, want 405", resp.StatusCode)
	}
}

func TestHealth(t *testing.T) {
	ts := newTestServer(t, Config{Total: 12})
	resp, err := http.Get(ts.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Status    string `json:"status"`
		Available int64  `json:"available"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != 200 || h.Status != "ok" || h.Available != 12 {
		t.Errorf("health: %d %+v %v", resp.StatusCode, h, err)
	}
}

// TestAppendPageMatchesJSON: the hand-written encoder produces what encoding/json would.
func TestAppendPageMatchesJSON(t *testing.T) {
	links := Links{Self: Link{Href: "http://h/events?cursor=3"}, Next: Link{Href: "http://h/events?cursor=9"}}
	lb, _ := json.Marshal(links)
	var got Page
	if err := json.Unmarshal(appendPage(nil, 3, 9, lb), &got); err != nil {
		t.Fatal(err)
	}
	want := Page{Links: links}
	for i := int64(4); i <= 9; i++ {
		want.Embedded.Records = append(want.Embedded.Records, NewRecord(At(i)))
	}
	wb, _ := json.Marshal(want)
	gb, _ := json.Marshal(got)
	if string(wb) != string(gb) {
		t.Errorf("appendPage:\n got %s\nwant %s", gb, wb)
	}
	var empty Page
	if err := json.Unmarshal(appendPage(nil, 9, 9, lb), &empty); err != nil || len(empty.Embedded.Records) != 0 {
		t.Fatalf("empty page: %+v, %v", empty, err)
	}
}

func TestRecordEventRejectsMalformed(t *testing.T) {
	good := NewRecord(At(7))
	for name, mut := range map[string]func(*Record){
		"type":    func(r *Record) { r.Type = "trade" },
		"id":      func(r *Record) { r.ID, r.PagingToken = "x", "x" },
		"zero id": func(r *Record) { r.ID, r.PagingToken = "0", "0" },
		"token":   func(r *Record) { r.PagingToken = "8" },
		"amount":  func(r *Record) { r.Amount = "1.5" },
		"self":    func(r *Record) { r.To = r.From },
	} {
		r := good
		mut(&r)
		if _, err := r.Event(); err == nil {
			t.Errorf("%s: malformed record %+v accepted", name, r)
		}
	}
	if e, err := good.Event(); err != nil || e != At(7) {
		t.Errorf("good record: %+v, %v", e, err)
	}
}

// TestServeShutsDownOnContext: Serve answers on a real socket and returns nil once ctx
// is cancelled.
func TestServeShutsDownOnContext(t *testing.T) {
	s, err := NewServer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	p := getPage(t, "http://"+ln.Addr().String()+"/events?limit=3")
	if len(p.Embedded.Records) != 3 {
		t.Errorf("got %d records, want 3", len(p.Embedded.Records))
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve returned %v after cancel, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
}

func TestListenAndServeBadAddr(t *testing.T) {
	s, _ := NewServer(Config{})
	if err := s.ListenAndServe(context.Background(), "256.0.0.1:-5"); err == nil {
		t.Fatal("ListenAndServe on a bad address returned nil")
	}
}

func BenchmarkEventsPage1000(b *testing.B) {
	s, _ := NewServer(Config{})
	h := s.Handler()
	req := httptest.NewRequest("GET", "/events?cursor=1000&limit=1000", nil)
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/event")
}
