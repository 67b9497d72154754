package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// promotionLog is a replicated topology's promotions, in the order they were seen: one
// log for SentinelSet and ClusterSet alike. It is safe for concurrent use.
type promotionLog struct {
	mu   sync.Mutex
	list []Promotion
}

func (l *promotionLog) add(p Promotion) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.list = append(l.list, p)
}

// all returns a copy of every promotion so far.
func (l *promotionLog) all() []Promotion {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Promotion(nil), l.list...)
}

// since returns the first promotion at or after t away from data node from.
func (l *promotionLog) since(t time.Time, from string) (Promotion, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.list {
		if !p.Time.Before(t) && p.From == from {
			return p, true
		}
	}
	return Promotion{}, false
}

// wait waits until a promotion away from from at or after t is seen, for at most
// SettleTimeout (an error wrapping ErrNoPromotion).
func (l *promotionLog) wait(ctx context.Context, t time.Time, from string) (Promotion, error) {
	var p Promotion
	err := WaitReady(ctx, "a promotion away from "+from, SettleTimeout, nil, func(context.Context) error {
		var ok bool
		if p, ok = l.since(t, from); !ok {
			return errors.New("none announced yet")
		}
		return nil
	})
	if err != nil {
		return Promotion{}, fmt.Errorf("%w: %v", ErrNoPromotion, err)
	}
	return p, nil
}

// find returns the first of xs that match accepts, or nil: how both topologies look up
// their data nodes by name and by peer address.
func find[T any](xs []*T, match func(*T) bool) *T {
	if i := slices.IndexFunc(xs, match); i >= 0 {
		return xs[i]
	}
	return nil
}
