package clientgo

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rl "k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
)

func newClient(tb testing.TB, srv *redisserver.Server) *redis.Client {
	tb.Helper()
	c := redis.NewClient(election.ClientOptions(srv.Addr()))
	tb.Cleanup(func() { c.Close() })
	return c
}

func newLock(tb testing.TB, c redis.UniversalClient, name, id string) *Lock {
	tb.Helper()
	l, err := NewLock(c, name, id, 5*time.Second, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// record is a record held by id since acquired, renewed at renewed.
func record(id string, acquired, renewed time.Time, transitions int) rl.LeaderElectionRecord {
	return rl.LeaderElectionRecord{HolderIdentity: id, LeaseDurationSeconds: 2, AcquireTime: metav1.NewTime(acquired),
		RenewTime: metav1.NewTime(renewed), LeaderTransitions: transitions}
}

// TestUpdateFromStaleGet: an Update whose Get saw an older version is refused with an API
// Conflict, as the API server refuses a stale resourceVersion; of candidates that all
// read the same version and then write at once, exactly one wins.
func TestUpdateFromStaleGet(t *testing.T) {
	srv := redisserver.New(t)
	ctx := context.Background()
	c := newClient(t, srv)
	a, b := newLock(t, c, "stale", "a"), newLock(t, c, "stale", "b")
	if _, _, err := a.Get(ctx); !apierrors.IsNotFound(err) {
		t.Fatalf("Get of no record: %v, want NotFound", err)
	}
	now := time.Now()
	if err := a.Create(ctx, record("a", now, now, 0)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx); err != nil {
		t.Fatal(err)
	}
	// a renews on the version its Create returned; b's read is now stale.
	if err := a.Update(ctx, record("a", now, now.Add(time.Second), 0)); err != nil {
		t.Fatalf("renewal: %v", err)
	}
	if err := b.Update(ctx, record("b", now, now, 1)); !apierrors.IsConflict(err) {
		t.Fatalf("Update after a stale Get: %v, want Conflict", err)
	}
	if err := b.Create(ctx, record("b", now, now, 0)); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("Create over a record: %v, want AlreadyExists", err)
	}

	const n = 8
	locks := make([]*Lock, n)
	for i := range locks {
		locks[i] = newLock(t, c, "stale", "c"+string(rune('0'+i)))
		if _, _, err := locks[i].Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, l := range locks {
		wg.Go(func() { errs[i] = l.Update(ctx, record(l.Identity(), now, now, 2)) })
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !apierrors.IsConflict(err):
			t.Errorf("candidate %d: %v, want nil or Conflict", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d of %d concurrent updates from one version won, want 1", won, n)
	}
}

// TestTokenPerTerm: the script mints a token when a term starts (a create, a new holder,
// the same holder with a new AcquireTime), never on a renewal or a release.
func TestTokenPerTerm(t *testing.T) {
	srv := redisserver.New(t)
	ctx := context.Background()
	c := newClient(t, srv)
	a, b := newLock(t, c, "tok", "a"), newLock(t, c, "tok", "b")
	t0 := time.Now().Truncate(time.Second)
	token := func(l *Lock) int64 {
		t.Helper()
		_, tok, _ := l.Observed()
		return tok
	}
	counter := func() int64 {
		t.Helper()
		n, err := c.Get(ctx, election.TokenKey("tok")).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	steps := []struct {
		what  string
		l     *Lock
		write func(*Lock) error
		token int64
	}{
		{"a creates", a, func(l *Lock) error { return l.Create(ctx, record("a", t0, t0, 0)) }, 1},
		{"a renews", a, func(l *Lock) error { return l.Update(ctx, record("a", t0, t0.Add(time.Second), 0)) }, 1},
		{"a renews again", a, func(l *Lock) error { return l.Update(ctx, record("a", t0, t0.Add(2*time.Second), 0)) }, 1},
		{"b takes over", b, func(l *Lock) error {
			return l.Update(ctx, record("b", t0.Add(5*time.Second), t0.Add(5*time.Second), 1))
		}, 2},
		{"b releases", b, func(l *Lock) error {
			return l.Update(ctx, rl.LeaderElectionRecord{LeaderTransitions: 1, LeaseDurationSeconds: 1,
				AcquireTime: metav1.NewTime(t0.Add(6 * time.Second)), RenewTime: metav1.NewTime(t0.Add(6 * time.Second))})
		}, 2},
		{"b takes the released record", b, func(l *Lock) error {
			return l.Update(ctx, record("b", t0.Add(7*time.Second), t0.Add(7*time.Second), 2))
		}, 3},
		{"b acquires its record anew", b, func(l *Lock) error {
			return l.Update(ctx, record("b", t0.Add(9*time.Second), t0.Add(9*time.Second), 2))
		}, 4},
	}
	for _, s := range steps {
		if _, _, err := s.l.Get(ctx); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("%s: Get: %v", s.what, err)
		}
		if err := s.write(s.l); err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got := token(s.l); got != s.token || counter() != s.token {
			t.Fatalf("%s: token %d, counter %d; want %d", s.what, got, counter(), s.token)
		}
		// A reader sees the same token beside the record.
		other := newLock(t, c, "tok", "reader")
		if _, _, err := other.Get(ctx); err != nil || token(other) != s.token {
			t.Fatalf("%s: a reader sees token %d (%v), want %d", s.what, token(other), err, s.token)
		}
	}
}

// TestTokenAbove2to53: a token past 2^53, where a Lua number would round it, is minted and
// read exactly.
func TestTokenAbove2to53(t *testing.T) {
	srv := redisserver.New(t)
	ctx := context.Background()
	c := newClient(t, srv)
	const start = 1<<53 + 1
	if err := c.Set(ctx, election.TokenKey("big"), start, 0).Err(); err != nil {
		t.Fatal(err)
	}
	a := newLock(t, c, "big", "a")
	now := time.Now()
	if err := a.Create(ctx, record("a", now, now, 0)); err != nil {
		t.Fatal(err)
	}
	if _, tok, _ := a.Observed(); tok != start+1 {
		t.Fatalf("token %d, want %d", tok, int64(start+1))
	}
}

// TestLockBadInput: what the lock cannot work with is an error, never a guess.
func TestLockBadInput(t *testing.T) {
	srv := redisserver.New(t)
	ctx := context.Background()
	c := newClient(t, srv)
	for _, tc := range []struct {
		client   redis.UniversalClient
		identity string
		timeout  time.Duration
	}{{nil, "a", time.Second}, {c, "", time.Second}, {c, "a", 0}} {
		if _, err := NewLock(tc.client, "x", tc.identity, tc.timeout, nil); err == nil {
			t.Errorf("NewLock(%v, %q, %v): no error", tc.client != nil, tc.identity, tc.timeout)
		}
	}
	a := newLock(t, c, "bad", "a")
	now := time.Now()
	if err := a.Update(ctx, record("a", now, now, 0)); err == nil || !strings.Contains(err.Error(), "Get or Create first") {
		t.Errorf("Update before any Get: %v, want an error asking for a Get", err)
	}
	if err := a.Create(ctx, record("a", now, now, 0)); err != nil {
		t.Fatal(err)
	}
	// The record vanishes (an operator deleted it): an Update finds none.
	if err := c.Del(ctx, RecordKey("bad")).Err(); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx, record("a", now, now, 0)); !apierrors.IsNotFound(err) {
		t.Errorf("Update of a deleted record: %v, want NotFound", err)
	}
	for field, value := range map[string]string{"rec": "{not json", "ver": "x", "token": "-1"} {
		good := map[string]any{"rec": `{"holderIdentity":"a"}`, "ver": "3", "token": "7"}
		good[field] = value
		if err := c.HSet(ctx, RecordKey("bad"), good).Err(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := a.Get(ctx); err == nil || !strings.Contains(err.Error(), "malformed") {
			t.Errorf("Get of a record with %s=%q: %v, want a malformed-record error", field, value, err)
		}
	}
}

// TestRecreatedRecord: a record deleted and created again (kubectl delete lease, on a real
// cluster) starts LeaderTransitions from 0 again, while the minted token goes on from the
// counter: a fence on LeaderTransitions would go back, the minted one does not.
func TestRecreatedRecord(t *testing.T) {
	srv := redisserver.New(t)
	ctx := context.Background()
	c := newClient(t, srv)
	a := newLock(t, c, "again", "a")
	now := time.Now()
	if err := a.Create(ctx, record("a", now, now, 0)); err != nil {
		t.Fatal(err)
	}
	if err := a.Update(ctx, record("b", now, now, 5)); err != nil {
		t.Fatal(err)
	}
	_, before, transitions := a.Observed()
	if err := c.Del(ctx, RecordKey("again")).Err(); err != nil {
		t.Fatal(err)
	}
	// client-go creates a missing record with LeaderTransitions 0.
	if err := a.Create(ctx, record("c", now, now, 0)); err != nil {
		t.Fatal(err)
	}
	_, after, transitionsAfter := a.Observed()
	if after <= before || transitionsAfter >= transitions {
		t.Fatalf("token %d -> %d, LeaderTransitions %d -> %d: want the token up and LeaderTransitions back to 0",
			before, after, transitions, transitionsAfter)
	}
}
