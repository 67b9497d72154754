package storetest

import (
	"context"
	"time"

	"github.com/fenceline/fenceline/listener"
)

// Feed is a listener.Source serving a fixed list of events, in position order: the feed
// of an example or a test.
type Feed[E listener.Event] []E

// Fetch returns up to limit events of f after cursor. It does not block.
func (f Feed[E]) Fetch(_ context.Context, cursor int64, limit int) ([]E, error) {
	var out []E
	for _, e := range f {
		if e.Position() > cursor && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

// Until returns a term for listener.Listener.Run that ends once store's cursor reaches
// cursor: a context derived from ctx, cancelled then. end cancels it at once and waits
// for the goroutine that watches the store; call it when Run has returned.
func Until[E listener.Event](ctx context.Context, store listener.Store[E], cursor int64) (term context.Context, end func()) {
	term, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer cancel()
		for c, _, _ := store.Load(term); c < cursor && term.Err() == nil; c, _, _ = store.Load(term) {
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return term, func() {
		cancel()
		<-done
	}
}
