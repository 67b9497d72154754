package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fenceline/fenceline/listener"
)

// Work is the suite's work that is not a feed's: credit amount to account (the credits
// that State reads), fenced by token, through a store's fenced-write primitive
// (listener.RedisFence, pgstore.Fence). It returns what the primitive returns.
type Work func(ctx context.Context, token int64, account string, amount int64) error

// RunWork runs the contract of fenced work that moves no cursor against backends made by
// newBackend, one per subtest; their NewWork is required. Run runs it too when NewWork
// is set.
func RunWork(t *testing.T, newBackend func(t *testing.T) Backend) {
	t.Run("WorkRoundTrip", func(t *testing.T) { workRoundTrip(t, newBackend(t)) })
	t.Run("WorkStaleTokenRejected", func(t *testing.T) { workStaleToken(t, newBackend(t)) })
	t.Run("WorkUnknownOutcomeResolvedByAudit", func(t *testing.T) { workUnknownOutcome(t, newBackend(t)) })
	t.Run("WorkRacingWriters", func(t *testing.T) { workRacing(t, newBackend(t)) })
}

func newWork(t *testing.T, b Backend, node string, timeout time.Duration, rec listener.Recorder) Work {
	t.Helper()
	if b.NewWork == nil {
		t.Fatal("Backend.NewWork is nil")
	}
	return b.NewWork(t, node, timeout, rec)
}

func workRoundTrip(t *testing.T, b Backend) {
	ctx := context.Background()
	rec := &Recording{}
	w := newWork(t, b, "n1", 0, rec)
	big := int64(1) << 52
	must(t, w(ctx, 1, "a", 5))
	must(t, w(ctx, 1, "a", 2))
	must(t, w(ctx, big, "b", 3))
	st := b.State(t)
	if !mapsEqual(st.Credits, map[string]int64{"a": 7, "b": 3}) || st.Token != big || st.Cursor != 0 || len(st.Applied) != 0 {
		t.Fatalf("state %+v, want credits a 7, b 3, token %d, cursor 0", st, big)
	}
	ops := rec.Ops()
	if len(st.Audit) != 3 || len(ops) != 3 {
		t.Fatalf("audit %+v, recorded %+v: want 3 each", st.Audit, ops)
	}
	for i, a := range st.Audit {
		o := ops[i]
		if a.Result != "ok" || a.Node != "n1" || a.From != 0 || a.To != 0 || a.Op == "" || a.Op != o.Op.ID ||
			o.Op.Kind != listener.OpWrite || o.Result.Outcome != listener.OutcomeOK || o.Op.Token != a.Token {
			t.Errorf("write %d: audit %+v, recorded %+v", i, a, o)
		}
	}
}

// workStaleToken: a stale write applies nothing and is a typed rejection; work and a
// feed's commits share one fence, so each fences the other out.
func workStaleToken(t *testing.T, b Backend) {
	ctx := context.Background()
	w := newWork(t, b, "n1", 0, nil)
	old := newWork(t, b, "old", 0, nil)
	must(t, w(ctx, 5, "a", 1))
	err := old(ctx, 4, "a", 100)
	var rej *listener.RejectedError
	if !errors.Is(err, listener.ErrStaleToken) || !errors.As(err, &rej) || rej.StoredToken != 5 || rej.Token != 4 {
		t.Fatalf("stale write: %v, want a RejectedError with ErrStaleToken and the stored 5", err)
	}
	s := b.NewStore(t, "feed", 0, nil)
	if err := s.Commit(ctx, 4, 0, Events(0, 1)); !errors.Is(err, listener.ErrStaleToken) {
		t.Errorf("a commit below a write's token: %v, want ErrStaleToken", err)
	}
	must(t, s.Commit(ctx, 9, 0, Events(0, 1)))
	if err := w(ctx, 8, "a", 100); !errors.Is(err, listener.ErrStaleToken) {
		t.Errorf("a write below a commit's token: %v, want ErrStaleToken", err)
	}
	// Tokens compare as numbers ("10" < "9" as strings).
	must(t, w(ctx, 10, "a", 1))
	if err := old(ctx, 9, "a", 100); !errors.Is(err, listener.ErrStaleToken) {
		t.Errorf("token 9 after 10: %v, want ErrStaleToken", err)
	}
	st := b.State(t)
	if !mapsEqual(st.Credits, map[string]int64{"a": 2, "a1": 1}) || st.Token != 10 || st.Cursor != 1 {
		t.Errorf("state %+v, want a credited 2 by the writes, a1 1 by the commit, token 10, cursor 1", st)
	}
	var results []string
	for _, a := range st.Audit {
		results = append(results, fmt.Sprintf("%s:%d:%s", a.Node, a.Token, a.Result))
	}
	want := []string{"n1:5:ok", "old:4:stale-token", "feed:4:stale-token", "feed:9:ok", "n1:8:stale-token", "n1:10:ok", "old:9:stale-token"}
	if !slices.Equal(results, want) {
		t.Errorf("audit %v, want %v", results, want)
	}
}

// workUnknownOutcome: a write whose answer does not come in time is unknown, recorded
// so, sent once; the audit then tells whether it was applied, and the credits agree.
func workUnknownOutcome(t *testing.T, b Backend) {
	ctx := context.Background()
	must(t, newWork(t, b, "n1", 0, nil)(ctx, 1, "a", 1))
	rec := &Recording{}
	hasty := newWork(t, b, "n2", 300*time.Millisecond, rec)
	resume := b.Stall(t)
	err := hasty(ctx, 2, "a", 10)
	resume()
	if !errors.Is(err, listener.ErrOutcomeUnknown) || errors.Is(err, listener.ErrStaleToken) {
		t.Fatalf("write to a stalled store: %v, want ErrOutcomeUnknown", err)
	}
	ops := rec.Ops()
	if len(ops) != 1 || ops[0].Result.Outcome != listener.OutcomeUnknown || ops[0].Op.Kind != listener.OpWrite {
		t.Fatalf("recorded %+v, want one unknown write", ops)
	}
	op := ops[0].Op.ID
	st := settled(t, b, op)
	applied := false
	if a := auditOf(st, op); a != nil && a.Result == "ok" {
		applied = true
	}
	if want := map[bool]int64{true: 11, false: 1}[applied]; st.Credits["a"] != want {
		t.Errorf("the audit says %s applied=%v, but a holds %d", op, applied, st.Credits["a"])
	}
	t.Logf("unknown write %s resolved by the audit: applied=%v", op, applied)
}

// workRacing: writers with rising tokens race; the accepted writes' tokens never go
// down in the audit, every rejection is stale, and the credits are exactly those of
// the accepted writes.
func workRacing(t *testing.T, b Backend) {
	ctx := context.Background()
	const writers, rounds = 4, 25
	var wg sync.WaitGroup
	for i := range writers {
		w := newWork(t, b, fmt.Sprintf("w%d", i), 0, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				token := int64(r*writers + i + 1)
				if err := w(ctx, token, "a", token); err != nil && !errors.Is(err, listener.ErrStaleToken) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st := b.State(t)
	var maxTok, sum int64
	ok := 0
	for _, a := range st.Audit {
		switch {
		case a.Result == "ok" && a.Token >= maxTok:
			maxTok, sum, ok = a.Token, sum+a.Token, ok+1
		case a.Result == "stale-token" && a.Token < maxTok:
		default:
			t.Fatalf("audit entry %+v after an accepted token %d", a, maxTok)
		}
	}
	if st.Credits["a"] != sum || st.Token != maxTok || ok == 0 {
		t.Errorf("credits %d, token %d; the accepted writes sum to %d, up to token %d", st.Credits["a"], st.Token, sum, maxTok)
	}
	t.Logf("%d attempts, %d accepted", len(st.Audit), ok)
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
