package listener

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync/atomic"
)

// Event is what a Listener ingests: any type with a position in its feed.
type Event interface {
	// Position is the event's place in its feed, > 0 and strictly increasing along the
	// feed. After an event is applied, the cursor is its position. Positions need not
	// be contiguous.
	Position() int64
}

// Source is the feed a Listener ingests.
type Source[E Event] interface {
	// Fetch returns up to limit events after cursor, in increasing position; none when
	// there is nothing new yet. It must return promptly once ctx is done.
	Fetch(ctx context.Context, cursor int64, limit int) ([]E, error)
}

// Store is where a Listener keeps its cursor and commits its batches, fenced by a token.
// RedisStore and pgstore.Store implement it.
//
// Implementations must be safe for concurrent use, and every method must return promptly
// once ctx is done.
type Store[E Event] interface {
	// Load returns the cursor (the position of the last applied event, 0 before the
	// first) and the highest fencing token the store has accepted (0 if none).
	Load(ctx context.Context) (cursor, token int64, err error)
	// Commit applies batch, whose positions are strictly increasing and above from, and
	// moves the cursor from from to the last event's position, all at once and only if
	// token is not below the highest accepted token and the cursor is still from. A
	// rejection returns a *RejectedError wrapping ErrStaleToken or ErrCursorConflict and
	// changes nothing but the audit. Any other error leaves the outcome unknown, unless
	// it wraps ErrInvalidBatch or is ctx's error: then nothing was sent.
	Commit(ctx context.Context, token, from int64, batch []E) error
}

// ValidateBatch checks that batch is not empty and that its positions strictly increase
// after from, as Store.Commit requires. Its error wraps ErrInvalidBatch.
func ValidateBatch[E Event](from int64, batch []E) error {
	if len(batch) == 0 {
		return fmt.Errorf("%w: empty", ErrInvalidBatch)
	}
	prev := from
	for _, e := range batch {
		p := e.Position()
		if p <= prev {
			return fmt.Errorf("%w: position %d after %d (from %d)", ErrInvalidBatch, p, prev, from)
		}
		prev = p
	}
	return nil
}

// OpIDs hands out a store's operation ids, "<node>/<boot>/<seq>". boot is random per
// OpIDs, so ids stay unique across restarts of a node. Stores write the id into their
// audit, so that a commit of unknown outcome can be looked up there. It is safe for
// concurrent use.
type OpIDs struct {
	prefix string
	seq    atomic.Int64
}

// NewOpIDs returns the ids of node.
func NewOpIDs(node string) (*OpIDs, error) {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("listener: boot id: %w", err)
	}
	return &OpIDs{prefix: node + "/" + hex.EncodeToString(b[:]) + "/"}, nil
}

// Next returns a new id.
func (g *OpIDs) Next() string { return g.prefix + strconv.FormatInt(g.seq.Add(1), 10) }
