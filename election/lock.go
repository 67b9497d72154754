package election

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Lock is a held lease, as Acquire and TryAcquire return it: one term of the election,
// renewed in the background until Release or until the lease is lost. Its methods are
// safe for concurrent use.
type Lock struct {
	term     Term
	ctx      context.Context         // the term's context
	stop     context.CancelCauseFunc // ends the campaign that leads the term
	done     chan struct{}           // closed when that campaign has returned
	released atomic.Bool
}

// Token returns the lease's fencing token: greater than every token issued before it.
// Pass it with every write to the fenced store.
func (l *Lock) Token() int64 { return l.term.Token }

// Context returns a context that is done when the lease ends, whatever ended it, as
// Run's term context is: context.Cause gives ErrLeaseExpired (the local deadline passed
// without a successful renewal, whether or not Redis answers), ErrNotHeld (Redis
// rejected a renewal) or ErrReleased (Release). Work done under the lock must stop
// when it is done. It carries the values of Acquire's ctx, not its cancellation.
func (l *Lock) Context() context.Context { return l.ctx }

// Release ends the lease: it cancels Context with ErrReleased, waits for the renewal in
// flight, and deletes the lock in Redis if it still holds this term's value, publishing
// the release notice so that a waiting Acquire or Run elsewhere takes over at once. The
// release request has its own deadline of RequestTimeout, even if ctx is done; its
// outcome is logged and told to the Recorder, not returned (a release that got no answer
// leaves a lease that expires within LeaseTTL).
//
// Release blocks until the release request is answered or ctx is done; in the latter
// case it returns ctx's cause and the release still completes in the background (within
// about twice RequestTimeout), after which the Elector may acquire again.
//
// It returns nil if the lease was held until Release, and an error wrapping the cause
// (ErrLeaseExpired, ErrNotHeld) if the lease had ended before: the work done under it
// may not have been exclusive to the end. A second Release returns an error wrapping
// ErrReleased.
func (l *Lock) Release(ctx context.Context) error {
	if !l.released.CompareAndSwap(false, true) {
		return fmt.Errorf("election: Release called twice: %w", ErrReleased)
	}
	l.stop(ErrReleased)
	select {
	case <-l.done:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	if cause := context.Cause(l.ctx); !errors.Is(cause, ErrReleased) {
		return fmt.Errorf("election: lease ended before Release: %w", cause)
	}
	return nil
}

// Acquire campaigns until it holds the lease or ctx is done, and returns the held Lock.
// It blocks. ctx bounds the wait only: once held, the lease lasts until Release or until
// it is lost (see Lock.Context), and the caller must call Release when done.
//
// Acquire is Run for one term: the same acquire attempts, release notices, adoption of
// a lost reply, takeover on disconnect, renewals, local lease deadline, Recorder,
// Metrics, Logger and OnNewLeader. An Elector campaigns once at a time: while a Lock's
// lease lasts (until it is lost, or its release has finished) or Run runs, Acquire and
// TryAcquire return ErrRunning. If ctx ends first, Acquire returns its cause (a lease taken at that moment
// is released first). If the client is closed, Acquire returns an error wrapping
// redis.ErrClosed instead of retrying.
func (e *Elector) Acquire(ctx context.Context) (*Lock, error) {
	return e.acquire(ctx, func(p pause) bool { return errors.Is(p.err, redis.ErrClosed) })
}

// TryAcquire makes one acquire attempt and returns the held Lock if it won, and otherwise
// an error: wrapping ErrLeaseHeld if another instance holds the lease, or the request's
// error (whose outcome is unknown: a later attempt adopts a lease it took; see Run). It
// blocks for a few round trips (the release channel's subscription, the attempt, and a
// release first if the lock holds a stale value of this instance; Redis waits for
// nothing), and is otherwise Acquire.
func (e *Elector) TryAcquire(ctx context.Context) (*Lock, error) {
	return e.acquire(ctx, func(p pause) bool { return p.wait > 0 })
}

// acquire runs Run's loop for one term on a goroutine that the returned Lock owns. The
// loop stops when until says so of a pause (the attempt's error is returned), when the
// term ends, or when ctx ends before a term starts.
func (e *Elector) acquire(ctx context.Context, until func(pause) bool) (*Lock, error) {
	if !e.running.CompareAndSwap(false, true) {
		return nil, ErrRunning
	}
	runCtx, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	held := make(chan *Lock)
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		defer e.running.Store(false)
		defer stop(nil)
		err = e.loop(runCtx, func(termCtx context.Context, t Term) {
			select {
			case held <- &Lock{term: t, ctx: termCtx, stop: stop, done: done}:
			case <-termCtx.Done():
			}
			<-termCtx.Done()
			stop(context.Cause(termCtx)) // one term only: the loop stops once it ends
		}, until)
	}()
	select {
	case l := <-held:
		return l, nil
	case <-ctx.Done():
		stop(context.Cause(ctx))
		<-done
		return nil, context.Cause(ctx)
	case <-done:
		if err == nil {
			// The term ended before Acquire could hand it over.
			err = context.Cause(runCtx)
		}
		return nil, fmt.Errorf("election: acquire: %w", err)
	}
}
