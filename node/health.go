package node

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// health tracks whether the node can take part in the election: whether Redis answered
// its last request (an election step, a load or a commit; a rejection is an answer), and
// did so within bound. It logs each change of state once. A nil *health does nothing and
// is always healthy.
type health struct {
	bound  time.Duration
	logger *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	last    time.Time // last answer; zero before the first
	lastErr string    // error of the last request, if it got no answer
	logged  bool      // a state has been logged
	wasOK   bool      // the last state logged
}

func newHealth(bound time.Duration, logger *slog.Logger) *health {
	return &health{bound: bound, logger: logger, now: time.Now}
}

// answered notes that Redis answered a request.
func (h *health) answered() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last, h.lastErr = h.now(), ""
	h.logChange()
}

// failed notes a request that got no answer (unreachable, timed out, refused the
// password or the command).
func (h *health) failed(err error) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.lastErr = err.Error()
	h.logChange()
}

// state returns whether the node can take part in the election and, if not, why.
func (h *health) state() (bool, string) {
	if h == nil {
		return true, ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stateLocked()
}

func (h *health) stateLocked() (bool, string) {
	switch {
	case h.lastErr != "":
		return false, "Redis did not answer: " + h.lastErr
	case h.last.IsZero():
		return false, "no answer from Redis yet"
	case h.now().Sub(h.last) > h.bound:
		return false, fmt.Sprintf("no answer from Redis for %v (bound %v)", h.now().Sub(h.last).Round(time.Millisecond), h.bound)
	}
	return true, ""
}

// logChange logs the state if it differs from the last one logged. The first state is
// logged only if it is bad after an answer was expected (see watch).
func (h *health) logChange() {
	ok, reason := h.stateLocked()
	if h.logged && ok == h.wasOK {
		return
	}
	if !h.logged && ok {
		h.logged, h.wasOK = true, true
		return
	}
	h.logged, h.wasOK = true, ok
	if ok {
		h.logger.Info("redis-available")
	} else {
		h.logger.Warn("redis-unavailable", slog.String("reason", reason))
	}
}

// watch re-evaluates the state a few times per bound until ctx is done, so that a node
// that stops hearing from Redis says so even when no request fails.
func (h *health) watch(ctx context.Context) {
	if h == nil {
		return
	}
	t := time.NewTicker(max(h.bound/8, 50*time.Millisecond))
	defer t.Stop()
	start := h.now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		if h.logged || h.now().Sub(start) > h.bound {
			h.logChange()
		}
		h.mu.Unlock()
	}
}
