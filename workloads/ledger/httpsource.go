package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
)

// HTTPSourceConfig configures an HTTPSource.
type HTTPSourceConfig struct {
	// BaseURL is the source server's root, e.g. "http://127.0.0.1:8000". Required.
	BaseURL string
	// Timeout bounds each request, body included. Default 5s.
	Timeout time.Duration
	// Client sends the requests. Default: a client with its own keep-alive transport
	// that ignores proxy environment variables.
	Client *http.Client
}

// DefaultFetchTimeout is HTTPSourceConfig.Timeout's default.
const DefaultFetchTimeout = 5 * time.Second

// maxBody bounds a page's body: 1000 records are about 150 KB.
const maxBody = 16 << 20

// HTTPSource is the listener.Source of the demo ledger: it reads a source.Server (GET /events) over HTTP. It is safe for
// concurrent use.
type HTTPSource struct {
	events  string // BaseURL + "/events?order=asc"
	timeout time.Duration
	client  *http.Client
}

var _ listener.Source[source.Event] = (*HTTPSource)(nil)

// NewHTTPSource validates cfg and returns a source. It does not contact the server.
func NewHTTPSource(cfg HTTPSourceConfig) (*HTTPSource, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, configErr("HTTPSourceConfig.BaseURL %q must be an http(s) URL", cfg.BaseURL)
	}
	if cfg.Timeout < 0 {
		return nil, configErr("HTTPSourceConfig.Timeout %v must be >= 0", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultFetchTimeout
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 2 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:        16,
			MaxIdleConnsPerHost: 16, // the listener prefetches: two requests may be in flight
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	return &HTTPSource{
		events:  strings.TrimRight(cfg.BaseURL, "/") + "/events?order=asc",
		timeout: cfg.Timeout,
		client:  cfg.Client,
	}, nil
}

// Fetch sends GET /events?cursor=cursor&limit=limit and returns the page's events. It
// checks that they are well formed, no more than limit, in increasing order and after
// cursor; a bad status or body gives an error wrapping ErrSource. It blocks for at most
// the configured timeout.
func (s *HTTPSource) Fetch(ctx context.Context, cursor int64, limit int) ([]source.Event, error) {
	u := s.events + "&cursor=" + strconv.FormatInt(cursor, 10) + "&limit=" + strconv.Itoa(limit)
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("listener: source: %w", err)
	}
	req.Header.Set("Accept", "application/hal+json")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("listener: source: %w", err)
	}
	defer func() {
		// Read what is left so the connection goes back to the pool.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
	}()
	body := io.LimitReader(resp.Body, maxBody)
	if resp.StatusCode != http.StatusOK {
		var p source.Problem
		detail := ""
		if json.NewDecoder(body).Decode(&p) == nil {
			detail = ": " + p.Detail
			if p.Extras != nil {
				detail = fmt.Sprintf(": invalid %s: %s", p.Extras.InvalidField, p.Extras.Reason)
			}
		}
		return nil, fmt.Errorf("%w: GET %s: %s%s", ErrSource, u, resp.Status, detail)
	}
	events, err := decodePage(body, cursor, limit)
	if err != nil {
		return nil, fmt.Errorf("%w: GET %s: %v", ErrSource, u, err)
	}
	return events, nil
}

// decodePage parses a GET /events body and checks that its events are well formed, no
// more than limit, in increasing id order and after cursor.
func decodePage(r io.Reader, cursor int64, limit int) ([]source.Event, error) {
	var page source.Page
	if err := json.NewDecoder(r).Decode(&page); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	recs := page.Embedded.Records
	if len(recs) > limit {
		return nil, fmt.Errorf("%d records, limit %d", len(recs), limit)
	}
	events := make([]source.Event, len(recs))
	prev := cursor
	for i, r := range recs {
		e, err := r.Event()
		if err != nil {
			return nil, err
		}
		if e.ID <= prev {
			return nil, fmt.Errorf("event %d after %d", e.ID, prev)
		}
		events[i], prev = e, e.ID
	}
	return events, nil
}
