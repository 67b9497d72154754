//go:build chaos

package variants

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/faults"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
)

func TestCatalogue(t *testing.T) {
	srv := redisserver.New(t)
	client := election.NewClient(srv.Addr())
	defer client.Close()
	all := All()
	if all[0].Name != Reference || all[0].Unsafe {
		t.Fatalf("first variant %+v, want the reference, not unsafe", all[0])
	}
	seen := map[string]bool{}
	for _, v := range all {
		if seen[v.Name] {
			t.Errorf("variant %s listed twice", v.Name)
		}
		seen[v.Name] = true
		if got, err := ByName(v.Name); err != nil || got.Name != v.Name {
			t.Errorf("ByName(%s): %+v, %v", v.Name, got, err)
		}
		if v.Description == "" || len(v.Faults) == 0 {
			t.Errorf("%s: needs a description and the faults that expose it", v.Name)
		}
		parsed, err := faults.ParseList(strings.Join(v.Faults, ","))
		if err != nil || len(parsed) != len(v.Faults) {
			t.Errorf("%s: faults %q: %v (parsed %q)", v.Name, v.Faults, err, parsed)
		}
		ref := v.ReferenceFaults()
		if len(ref) != len(v.Faults) || slices.Contains(ref, faults.RedisRestartVolatile) {
			t.Errorf("%s: reference faults %q: the reference keeps its persistent Redis", v.Name, ref)
		}
		if v.Name != Reference {
			if _, err := Store(v.Name, client, listener.RedisConfig[source.Event]{Node: "n1"}); err != nil {
				t.Errorf("Store(%s): %v", v.Name, err)
			}
		}
	}
	if _, err := ByName("nonsense"); !errors.Is(err, ErrUnknown) {
		t.Errorf("ByName(nonsense): %v", err)
	}
	if _, err := Store("nonsense", client, listener.RedisConfig[source.Event]{Node: "n1"}); !errors.Is(err, ErrUnknown) {
		t.Errorf("Store(nonsense): %v", err)
	}
	v, _ := ByName(VolatileRedis)
	if got := v.ReferenceFaults(); !slices.Equal(got, []string{faults.RedisRestart}) {
		t.Errorf("volatile-redis reference faults %q", got)
	}
}

// The broken scripts differ from the reference's in their check only: if the reference
// script's check changed, the replacement would silently not happen and the "broken"
// variants would be the reference.
func TestBrokenScriptsReplaceTheCheck(t *testing.T) {
	if !strings.Contains(listener.CommitScriptForChaos, referenceCheck) {
		t.Fatal("listener.CommitScriptForChaos no longer contains the check the broken variants replace")
	}
	for name, s := range map[string]string{"unfenced": unfencedScript, "string-compare": stringCompareScript,
		"no-token-check": noTokenCheckScript, "no-cursor-check": noCursorCheckScript} {
		if s == listener.CommitScriptForChaos || strings.Contains(s, referenceCheck) {
			t.Errorf("%s script still holds the reference check", name)
		}
	}
}

func events(from, n int64) []source.Event {
	out := make([]source.Event, n)
	for i := range out {
		out[i] = source.Event{ID: from + int64(i) + 1, From: "a", To: "b", Amount: 1}
	}
	return out
}

// no-cursor-check keeps the token check and drops the cursor's: a newer leader's commit
// from a cursor that has moved since its load is accepted, and applies events again.
func TestNoCursorCheckStore(t *testing.T) {
	srv := redisserver.New(t)
	ctx := context.Background()
	client := election.NewClient(srv.Addr())
	defer client.Close()
	for _, c := range []struct {
		variant string
		want    error // of the newer leader's commit from the cursor it loaded
	}{{Reference, listener.ErrCursorConflict}, {NoCursorCheck, nil}} {
		st, err := Store(c.variant, client, listener.RedisConfig[source.Event]{Name: "ncc-" + c.variant, Node: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Commit(ctx, 1, 0, events(0, 10)); err != nil {
			t.Fatal(err)
		}
		// The new leader (token 2) loads cursor 10; the old one (token 1, still the
		// highest accepted) commits 10→20; then the new leader commits from 10.
		if err := st.Commit(ctx, 1, 10, events(10, 10)); err != nil {
			t.Fatal(err)
		}
		if err := st.Commit(ctx, 2, 10, events(10, 10)); !errors.Is(err, c.want) && (c.want != nil || err != nil) {
			t.Errorf("%s: the new leader's commit from a moved cursor: %v, want %v", c.variant, err, c.want)
		}
	}
}

// Each variant's store, against a real Redis: what it does with a commit under an
// older token once a newer one was accepted, and string-compare's wrong order.
func TestStores(t *testing.T) {
	srv := redisserver.New(t)
	ctx := context.Background()
	for i, c := range []struct {
		variant    string
		first      int64 // token of the accepted commit 0→10
		second     int64 // token of the commit 10→20 that follows
		wantStale  bool  // the second is rejected as stale
		wantLanded bool
	}{
		{Reference, 2, 1, true, false},
		{NonAtomicRelease, 2, 1, true, false},
		{VolatileRedis, 2, 1, true, false},
		{NoFence, 2, 1, false, true},
		{LeaseOnly, 2, 1, false, true},
		// The client checks the stored token itself: with nothing in between, it refuses.
		{ClientCheck, 2, 1, true, false},
		// Tokens compared as strings: 9 after 10 passes, 10 after 9 does not.
		{StringCompare, 10, 9, false, true},
		{StringCompare, 9, 10, true, false},
		{StringCompare, 2, 1, true, false},
		// The cursor is checked, the token is not: a superseded writer at the cursor passes.
		{NoTokenCheck, 2, 1, false, true},
		{NoCursorCheck, 2, 1, true, false},
		// Two zoo bugs write to a resource without a fence; the others keep the fence.
		{WorkAfterDeadline, 2, 1, false, true},
		{LeaseNotRechecked, 2, 1, false, true},
		{NeverTold, 2, 1, true, false},
		{StaleObservedRecord, 2, 1, true, false},
		{WallClockLease, 2, 1, true, false},
		{LateToken, 2, 1, true, false},
		{SplitBrainLock, 2, 1, true, false},
	} {
		client := election.NewClient(srv.Addr())
		defer client.Close()
		name := c.variant + "-" + string(rune('a'+i))
		st, err := Store(c.variant, client, listener.RedisConfig[source.Event]{Name: name, Node: "n1"})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Commit(ctx, c.first, 0, events(0, 10)); err != nil {
			t.Fatalf("%s: first commit: %v", c.variant, err)
		}
		err = st.Commit(ctx, c.second, 10, events(10, 10))
		if stale := errors.Is(err, listener.ErrStaleToken); stale != c.wantStale || (!stale && err != nil) {
			t.Errorf("%s: token %d after %d: %v, want stale=%v", c.variant, c.second, c.first, err, c.wantStale)
		}
		cursor, _, err := st.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if landed := cursor == 20; landed != c.wantLanded {
			t.Errorf("%s: token %d after %d: cursor %d, want landed=%v", c.variant, c.second, c.first, cursor, c.wantLanded)
		}
	}
}

// cmdLog records the names of the commands a client sends.
type cmdLog struct {
	mu    sync.Mutex
	names []string
}

func (l *cmdLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *cmdLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (l *cmdLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		// A connection's handshake (HELLO, CLIENT SETINFO) is no step of the election's:
		// with the pool handing connections out in turn, it comes between any two.
		if n := strings.ToLower(cmd.Name()); n != "hello" && n != "client" {
			l.mu.Lock()
			l.names = append(l.names, n)
			l.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (l *cmdLog) seen() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.names)
}

// NonAtomicRelease must turn the elector's real release into GET, DEL, PUBLISH, through
// the election's chaos seam: if the seam were not used, the variant would quietly be the
// reference.
func TestNonAtomicReleaseReplacesTheElectorsRelease(t *testing.T) {
	srv := redisserver.New(t)
	client := election.NewClient(srv.Addr())
	defer client.Close()
	var log cmdLog
	client.AddHook(&log) // it sees what reaches the wire

	el, err := election.New(client, election.Config{InstanceID: "n1", Name: "nar", LeaseTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := Elector(NonAtomicRelease, el, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	led := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- el.Run(ctx, func(tctx context.Context, _ election.Term) {
			close(led)
			<-tctx.Done()
		})
	}()
	select {
	case <-led:
	case <-time.After(10 * time.Second):
		t.Fatal("never became leader")
	}
	cancel() // shutdown: the elector releases its lease
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	got := log.seen()
	i := slices.Index(got, "get")
	if i < 0 || i+2 >= len(got) || got[i+1] != "del" || got[i+2] != "publish" {
		t.Fatalf("release on the wire: %q, want get, del, publish", got)
	}
	if n, err := client.Exists(context.Background(), election.LockKey("nar")).Result(); err != nil || n != 0 {
		t.Errorf("lock still there after release: %d %v", n, err)
	}

	// The comparison happens in the client: a lock that is not ours is left alone.
	bg := context.Background()
	lock, channel := election.LockKey("x"), election.ReleaseChannel("x")
	client.Set(bg, lock, "someone-else", 0)
	if ok, err := nonAtomicRelease(bg, client, lock, "n1:1", channel); err != nil || ok {
		t.Errorf("release of someone else's lock: %v %v", ok, err)
	}
	if v, _ := client.Get(bg, lock).Result(); v != "someone-else" {
		t.Errorf("someone else's lock was deleted: %q", v)
	}
	// The reference and the other variants leave the elector alone.
	ref, _ := election.New(client, election.Config{InstanceID: "n2", Name: "ref"})
	for _, v := range All() {
		if v.Name != NonAtomicRelease && v.Name != RedlockMajority { // the latter: TestRedlockRestartGrantsTwice
			if err := Elector(v.Name, ref, nil); err != nil {
				t.Errorf("Elector(%s): %v", v.Name, err)
			}
		}
	}
}

// ClientCheck's check is made ahead of its write: a newer leader's commit in between
// goes unseen, and the stale write lands. The first write of a term is checked at once.
func TestClientCheckRace(t *testing.T) {
	srv := redisserver.New(t)
	ctx := context.Background()
	client := election.NewClient(srv.Addr())
	defer client.Close()
	old, err := Store(ClientCheck, client, listener.RedisConfig[source.Event]{Name: "cc", Node: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	newer, err := Store(Reference, client, listener.RedisConfig[source.Event]{Name: "cc", Node: "n2"})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Commit(ctx, 1, 0, events(0, 10)); err != nil {
		t.Fatal(err)
	}
	// Between n1's check (made after its commit) and its next write, n2 takes over.
	if err := newer.Commit(ctx, 2, 10, events(10, 10)); err != nil {
		t.Fatal(err)
	}
	if err := old.Commit(ctx, 1, 10, events(10, 5)); err != nil {
		t.Fatalf("the stale write was refused (%v): the check is not ahead of the write", err)
	}
	cursor, stored, err := old.Load(ctx)
	if err != nil || cursor != 15 || stored != 1 {
		t.Errorf("after the stale write: cursor %d token %d (%v), want 15 and 1", cursor, stored, err)
	}
	// A new term's first write is checked just before it is sent.
	fresh, err := Store(ClientCheck, client, listener.RedisConfig[source.Event]{Name: "cc", Node: "n3"})
	if err != nil {
		t.Fatal(err)
	}
	if err := newer.Commit(ctx, 3, 15, events(15, 5)); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Commit(ctx, 2, 20, events(20, 5)); !errors.Is(err, listener.ErrStaleToken) {
		t.Errorf("first write of a term under an old token: %v, want %v", err, listener.ErrStaleToken)
	}
}

// No variant gets help to show its bug: none moves the token counter (StringCompare's
// used to start it at 8; every run now starts near a boundary chosen by its seed,
// harness.BoundaryStart).
func TestNoVariantMovesTheCounter(t *testing.T) {
	srv := redisserver.New(t)
	ctx := context.Background()
	client := election.NewClient(srv.Addr())
	defer client.Close()
	for _, v := range All() {
		if _, err := Store(v.Name, client, listener.RedisConfig[source.Event]{Name: v.Name, Node: "n1"}); err != nil {
			t.Fatal(err)
		}
		if n, _ := client.Exists(ctx, election.TokenKey(v.Name)).Result(); n != 0 {
			t.Errorf("%s's store created the token counter", v.Name)
		}
	}
}
