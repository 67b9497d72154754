package listener

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Config configures a Listener of events of type E.
type Config[E Event] struct {
	// Store holds the cursor and takes the fenced commits. Required.
	Store Store[E]
	// Source is the event feed. Required.
	Source Source[E]
	// BatchSize is how many events are fetched and committed at once, 1..MaxBatchSize.
	// Default 100.
	BatchSize int
	// PollInterval is how long Run waits when the source has nothing new, after a failed
	// fetch or load, and after a commit of unknown outcome. Default 100ms.
	PollInterval time.Duration
	// Logger receives the listener's logs (fencing-token-rejected, cursor-conflict,
	// commit-outcome-unknown, fetch-failed, load-failed). Default: discard.
	Logger *slog.Logger
	// Metrics receives commit measurements. Default NopMetrics.
	Metrics Metrics
}

// Defaults of Config.
const (
	DefaultBatchSize    = 100
	DefaultPollInterval = 100 * time.Millisecond
	// MaxBatchSize bounds Config.BatchSize: a batch is one request to the store.
	MaxBatchSize = 1000
)

// Listener ingests events from a Source into a Store during a leader's term.
// It holds no state between calls of Run and is safe for concurrent use (though two Runs
// at once only fence each other out).
type Listener[E Event] struct {
	store   Store[E]
	src     Source[E]
	batch   int
	poll    time.Duration
	log     *slog.Logger
	metrics Metrics
}

// New validates cfg, fills in its defaults and returns a Listener.
func New[E Event](cfg Config[E]) (*Listener[E], error) {
	if cfg.Store == nil {
		return nil, configErr("Config.Store is required")
	}
	if cfg.Source == nil {
		return nil, configErr("Config.Source is required")
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	if cfg.BatchSize < 1 || cfg.BatchSize > MaxBatchSize {
		return nil, configErr("Config.BatchSize %d must be 1..%d", cfg.BatchSize, MaxBatchSize)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.PollInterval < 0 {
		return nil, configErr("Config.PollInterval %v must be > 0", cfg.PollInterval)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NopMetrics{}
	}
	return &Listener[E]{store: cfg.Store, src: cfg.Source, batch: cfg.BatchSize,
		poll: cfg.PollInterval, log: cfg.Logger, metrics: cfg.Metrics}, nil
}

// Run ingests events under token until ctx is done or the store rejects token as stale.
// It blocks. Call it with the context of a leader's term and that term's token (> 0).
//
// Each round fetches the page after the cursor and commits it with token. It loads the
// cursor at the start and after a cursor conflict or an unknown outcome, and otherwise
// follows its own commits: the store's from-check makes that safe even if the cursor moved
// behind its back. While a commit is in flight it already fetches the next page (the page
// is used only if the commit succeeds).
//
// Run returns nil when ctx is done (the term ended); an error wrapping ErrStaleToken
// when a commit is rejected as stale: a newer term has written, so this one must stop;
// and an error wrapping ErrInvalidBatch when the store cannot apply a batch (its effects
// are malformed): the same batch would fail again. Other fetch and store errors are
// logged and retried after PollInterval; they never end Run. A page whose positions are
// not strictly increasing after the cursor is never committed (logged as fetch-failed).
func (l *Listener[E]) Run(ctx context.Context, token int64) error {
	if token < 1 {
		return fmt.Errorf("listener: Run: token %d must be > 0", token)
	}
	log := l.log.With(slog.Int64("token", token))
	var (
		cursor int64
		loaded bool
		next   *prefetch[E] // the page after cursor, if already requested
	)
	defer func() { next.stop() }()

	for ctx.Err() == nil {
		if !loaded {
			c, stored, err := l.store.Load(ctx)
			if err == nil {
				err = hit("listener/after-load") // a newer leader may commit meanwhile
			}
			if err != nil {
				if ctx.Err() != nil {
					break
				}
				log.Warn("load-failed", slog.String("error", err.Error()))
				l.sleep(ctx)
				continue
			}
			log.Debug("cursor-loaded", slog.Int64("cursor", c), slog.Int64("stored_token", stored))
			cursor, loaded = c, true
		}

		var events []E
		var err error
		if next != nil && next.cursor == cursor {
			events, err = next.wait()
		} else {
			next.stop()
			events, err = l.src.Fetch(ctx, cursor, l.batch)
		}
		next = nil
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			log.Warn("fetch-failed", slog.Int64("cursor", cursor), slog.String("error", err.Error()))
			l.sleep(ctx)
			continue
		}
		if len(events) == 0 {
			l.sleep(ctx)
			continue
		}
		if err := ValidateBatch(cursor, events); err != nil {
			// A source that breaks its contract: never commit what it gave.
			log.Warn("fetch-failed", slog.Int64("cursor", cursor), slog.String("error", err.Error()))
			l.sleep(ctx)
			continue
		}
		to := events[len(events)-1].Position()
		next = l.fetchAhead(ctx, to)

		start := time.Now()
		// A stall here is the stale leader that wakes up with a batch in hand.
		if err = hit("listener/before-commit"); err == nil {
			err = l.store.Commit(ctx, token, cursor, events)
		}
		latency := time.Since(start)
		attrs := []any{slog.Int64("from", cursor), slog.Int64("to", to), slog.Int("events", len(events))}
		switch {
		case err == nil:
			l.metrics.ObserveCommit(OutcomeOK, len(events), latency)
			cursor = to
		case errors.Is(err, ErrStaleToken):
			l.metrics.ObserveCommit(OutcomeStaleToken, len(events), latency)
			attrs = append(attrs, rejectionAttrs(err)...)
			log.Warn("fencing-token-rejected", attrs...)
			return err
		case errors.Is(err, ErrInvalidBatch):
			// The store refused the batch's effects: a bug of the caller's Effects, not
			// something a retry fixes. Stop rather than spin.
			l.metrics.ObserveCommit(OutcomeBadArgument, len(events), latency)
			log.Error("batch-refused", append(attrs, slog.String("error", err.Error()))...)
			return err
		case errors.Is(err, ErrCursorConflict):
			l.metrics.ObserveCommit(OutcomeCursorConflict, len(events), latency)
			attrs = append(attrs, rejectionAttrs(err)...)
			log.Warn("cursor-conflict", attrs...)
			loaded = false
		case ctx.Err() != nil && errors.Is(err, ctx.Err()) && !errors.Is(err, ErrOutcomeUnknown):
			// Not sent: the term ended first.
		default:
			// Unknown outcome: the batch may be applied. Reload; the from-check makes
			// a re-apply impossible either way.
			l.metrics.ObserveCommit(OutcomeUnknown, len(events), latency)
			log.Warn("commit-outcome-unknown", append(attrs, slog.String("error", err.Error()))...)
			loaded = false
			l.sleep(ctx)
		}
	}
	return nil
}

func rejectionAttrs(err error) []any {
	var rej *RejectedError
	if !errors.As(err, &rej) {
		return []any{slog.String("error", err.Error())}
	}
	return []any{slog.String("op", rej.Op), slog.Int64("stored_token", rej.StoredToken),
		slog.Int64("stored_cursor", rej.StoredCursor)}
}

// sleep waits PollInterval or until ctx is done.
func (l *Listener[E]) sleep(ctx context.Context) {
	t := time.NewTimer(l.poll)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// prefetch is one fetch running in its own goroutine. Its owner calls exactly one of wait
// or stop, which both wait for the goroutine.
type prefetch[E Event] struct {
	cursor int64
	done   chan struct{} // closed by the goroutine when events and err are set
	cancel context.CancelFunc
	events []E
	err    error
}

func (l *Listener[E]) fetchAhead(ctx context.Context, cursor int64) *prefetch[E] {
	fctx, cancel := context.WithCancel(ctx)
	p := &prefetch[E]{cursor: cursor, done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(p.done)
		p.events, p.err = l.src.Fetch(fctx, cursor, l.batch)
	}()
	return p
}

// wait returns the fetch's result.
func (p *prefetch[E]) wait() ([]E, error) {
	<-p.done
	p.cancel()
	return p.events, p.err
}

// stop abandons the fetch and waits for its goroutine. It is a no-op on nil.
func (p *prefetch[E]) stop() {
	if p == nil {
		return
	}
	p.cancel()
	<-p.done
}
