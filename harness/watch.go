package harness

import (
	"context"
	"errors"
	"time"
)

// errStopped ends the chaos phase when the watcher found a violation.
var errStopped = errors.New("stopped at a violation")

// watchEvery is how often the watcher asks Config.StopAtViolation besides after each
// heal: a violation in a long quiet stretch is found within it.
const watchEvery = 2 * time.Second

// watcher asks Config.StopAtViolation in the background, one call at a time, and
// keeps the first violation it reports. A nil watcher (no StopAtViolation) never finds
// one and sleeps as sleepUntil does.
type watcher struct {
	ask    func(context.Context) string
	ctx    context.Context
	cancel context.CancelFunc
	pokes  chan struct{}
	found  chan string // receives the first finding, then is never written again
	done   chan struct{}
	first  string // the finding that ended the chaos phase
}

func newWatcher(ctx context.Context, ask func(context.Context) string) *watcher {
	w := &watcher{ask: ask, pokes: make(chan struct{}, 1), found: make(chan string, 1), done: make(chan struct{})}
	w.ctx, w.cancel = context.WithCancel(ctx)
	go w.loop()
	return w
}

// loop asks after every poke and every watchEvery until it finds something or is closed.
func (w *watcher) loop() {
	defer close(w.done)
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-t.C:
		case <-w.pokes:
		}
		if f := w.ask(w.ctx); f != "" && w.ctx.Err() == nil {
			w.found <- f
			return
		}
	}
}

// poke asks for a check now (after a heal): at once if none is running, else when the
// running one ends.
func (w *watcher) poke() {
	if w == nil {
		return
	}
	select {
	case w.pokes <- struct{}{}:
	default: // one is already pending
	}
}

// sleepUntil sleeps until t, returning ctx's error if it ends first and errStopped if
// the watcher finds a violation first.
func (w *watcher) sleepUntil(ctx context.Context, t time.Time) error {
	if w == nil {
		return sleepUntil(ctx, t)
	}
	if w.first != "" {
		return errStopped
	}
	f, err := sleepOr(ctx, t, w.found)
	if f != "" {
		w.first = f
		return errStopped
	}
	return err
}

// close stops the watcher, waits for its running call, and returns the finding that
// ended the chaos phase ("" if it ran its course: a later finding stopped nothing, and
// the complete check judges the run as any other).
func (w *watcher) close() string {
	if w == nil {
		return ""
	}
	w.cancel()
	<-w.done
	return w.first
}
