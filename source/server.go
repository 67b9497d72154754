package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"
)

// Config configures a Server. The zero value is a fast source: every event available at
// once, no end.
type Config struct {
	// Rate is how many events become available per second after Start: event Backlog+k
	// is available from Start + k/Rate. 0 means unlimited: every event (up to Total) is
	// available at once — the "fast source". Default 0. Must be >= 0 and finite.
	Rate float64
	// Backlog is how many events are available already at Start. Default 0.
	// Ignored when Rate is 0.
	Backlog int64
	// Total, when > 0, is the last event the source will ever serve: the feed ends there.
	// Default 0: no end.
	Total int64
	// Start is the moment the feed starts producing. Default: when NewServer is called.
	Start time.Time
	// Now is the clock deciding which events are available. Default time.Now. Tests inject
	// a fake clock here.
	Now func() time.Time
	// Logger receives request errors. Default: discard.
	Logger *slog.Logger
}

// Server serves the deterministic feed over HTTP. It keeps no per-client state and is safe
// for concurrent use.
type Server struct {
	cfg Config
	log *slog.Logger
}

// NewServer validates cfg, fills in its defaults and returns a Server.
func NewServer(cfg Config) (*Server, error) {
	if math.IsNaN(cfg.Rate) || math.IsInf(cfg.Rate, 0) || cfg.Rate < 0 {
		return nil, fmt.Errorf("source: Rate %v must be a finite number >= 0", cfg.Rate)
	}
	if cfg.Backlog < 0 {
		return nil, fmt.Errorf("source: Backlog %d must be >= 0", cfg.Backlog)
	}
	if cfg.Total < 0 {
		return nil, fmt.Errorf("source: Total %d must be >= 0", cfg.Total)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Start.IsZero() {
		cfg.Start = cfg.Now()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, log: log}, nil
}

// Available returns the id of the last event available now (0 when none is): every event
// 1..Available() may be served. It is math.MaxInt64 for an endless fast source.
func (s *Server) Available() int64 {
	end := int64(math.MaxInt64)
	if s.cfg.Total > 0 {
		end = s.cfg.Total
	}
	if s.cfg.Rate == 0 {
		return end
	}
	elapsed := s.cfg.Now().Sub(s.cfg.Start).Seconds()
	if elapsed < 0 {
		elapsed = 0
	}
	n := float64(s.cfg.Backlog) + math.Floor(elapsed*s.cfg.Rate)
	if n >= float64(end) { // also keeps the conversion below in range
		return end
	}
	return int64(n)
}

// Handler returns the HTTP handler: GET /events and GET /health.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /events", s.events)
	mux.HandleFunc("GET /health", s.health)
	return mux
}

// ListenAndServe listens on addr and serves until ctx is done, then shuts down gracefully
// (in-flight requests get up to 5 seconds). It blocks; it returns nil after a shutdown
// caused by ctx, or the error that stopped the server.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("source: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve is ListenAndServe on a listener the caller opened (useful to learn a port chosen
// by the kernel). Serve closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("source: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("source: shutdown: %w", err)
	}
	return nil
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	b := []byte(`{"status":"ok","available":`)
	b = strconv.AppendInt(b, s.Available(), 10)
	b = append(b, "}\n"...)
	_, _ = w.Write(b)
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	cursor, limit, err := parseQuery(r.URL.Query())
	if err != nil {
		var qe *queryError
		errors.As(err, &qe)
		writeProblem(w, Problem{
			Type:   "https://stellar.org/horizon-errors/bad_request",
			Title:  "Bad Request",
			Status: http.StatusBadRequest,
			Detail: "The request you sent was invalid in some way.",
			Extras: &ProblemExtras{InvalidField: qe.field, Reason: qe.reason},
		})
		return
	}
	last := cursor
	if avail := s.Available(); cursor < avail {
		last = avail
		if avail-cursor > int64(limit) {
			last = cursor + int64(limit)
		}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	base := scheme + "://" + r.Host + "/events?order=asc&limit=" + strconv.Itoa(limit) + "&cursor="
	links, err := json.Marshal(Links{
		Self: Link{Href: base + strconv.FormatInt(cursor, 10)},
		Next: Link{Href: base + strconv.FormatInt(last, 10)},
	})
	if err != nil {
		panic(err) // strings only
	}
	buf := make([]byte, 0, 64+len(links)+int(last-cursor)*150)
	buf = appendPage(buf, cursor, last, links)
	w.Header().Set("Content-Type", "application/hal+json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(buf)))
	if _, err := w.Write(buf); err != nil {
		s.log.Debug("write-failed", slog.String("error", err.Error()))
	}
}

// appendPage writes the page of events cursor+1..last by hand: it is the source's hot path,
// and every string in a record (digits, account names, "payment") needs no JSON escaping.
// The result decodes into Page (tested).
func appendPage(b []byte, cursor, last int64, links []byte) []byte {
	b = append(b, `{"_embedded":{"records":[`...)
	for i := cursor + 1; i <= last; i++ {
		if i > cursor+1 {
			b = append(b, ',')
		}
		e := At(i)
		b = append(b, `{"id":"`...)
		b = strconv.AppendInt(b, e.ID, 10)
		b = append(b, `","paging_token":"`...)
		b = strconv.AppendInt(b, e.ID, 10)
		b = append(b, `","type":"payment","ledger":`...)
		b = strconv.AppendInt(b, e.Ledger, 10)
		b = append(b, `,"from":"`...)
		b = append(b, e.From...)
		b = append(b, `","to":"`...)
		b = append(b, e.To...)
		b = append(b, `","amount":"`...)
		b = strconv.AppendInt(b, e.Amount, 10)
		b = append(b, `"}`...)
	}
	b = append(b, `]},"_links":`...)
	b = append(b, links...)
	return append(b, "}\n"...)
}

func writeProblem(w http.ResponseWriter, p Problem) {
	b, err := json.Marshal(p)
	if err != nil {
		panic(err) // strings and ints only
	}
	w.Header().Set("Content-Type", "application/problem+json; charset=utf-8")
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(b, '\n'))
}
