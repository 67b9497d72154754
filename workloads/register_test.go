//go:build chaos

package workloads

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/source"
	"github.com/fenceline/fenceline/workloads/ledger"
)

// tokenLog records the register clients' token acquisitions.
type tokenLog struct {
	mu     sync.Mutex
	tokens map[int64]string // token -> client
	dup    bool
}

type clientRecorder struct {
	log *tokenLog
	id  string
}

func (r clientRecorder) Invoke(op election.Op, _ int64) func(election.Result) {
	return func(res election.Result) {
		if op != election.OpAcquire || res.Outcome != election.OK {
			return
		}
		r.log.mu.Lock()
		defer r.log.mu.Unlock()
		if _, ok := r.log.tokens[res.Token]; ok {
			r.log.dup = true
		}
		r.log.tokens[res.Token] = r.id
	}
}

func (clientRecorder) StepDown(int64, election.Reason) {}

// Register clients take their tokens from the election's counter, each token once, and
// commit and write through the fenced store concurrently: the cursor moves, the sink
// holds exactly the events up to it, and the writes are audited.
func TestRunRegister(t *testing.T) {
	srv := redisserver.New(t)
	client := election.NewClient(srv.Addr())
	defer client.Close()
	log := &tokenLog{tokens: map[int64]string{}}
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	err := RunRegister(ctx, RegisterConfig{
		Node: "n1", Clients: 3, Election: "reg", Client: client,
		Store: func(id string) (listener.Store[source.Event], error) {
			return listener.NewRedisStore(client, listener.RedisConfig[source.Event]{Name: "reg", Node: id, Effects: ledger.RedisEffects})
		},
		Recorder: func(id string) election.Recorder { return clientRecorder{log: log, id: id} },
		Fence: func(s listener.Store[source.Event]) FencedWriter {
			return s.(*listener.RedisStore[source.Event]).Fence()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The writes that move no cursor went through the same fence: counted in the hash
	// by the closed writes and the bodies, and audited, the failing bodies as "error".
	counts, err := client.HGetAll(context.Background(), listener.KeysFor("reg").Key(RegisterWritesKey)).Result()
	if err != nil || len(counts) == 0 {
		t.Errorf("no write counted: %v %v", counts, err)
	}
	audit, err := client.XRange(context.Background(), listener.KeysFor("reg").Audit, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	failed, writes := 0, 0
	for _, a := range audit {
		if _, ok := a.Values["from"]; !ok {
			writes++
		}
		if a.Values["result"] == "error" {
			failed++
		}
	}
	if writes == 0 || failed == 0 {
		t.Errorf("%d audit entries: %d of writes, %d of failed bodies; want some of each", len(audit), writes, failed)
	}
	st, err := listener.NewRedisStore(client, listener.RedisConfig[source.Event]{Name: "reg", Node: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	cursor, _, err := st.Load(context.Background())
	if err != nil || cursor == 0 {
		t.Fatalf("cursor %d, %v: the clients committed nothing", cursor, err)
	}
	sink, err := client.LRange(context.Background(), listener.KeysFor("reg").Key(ledger.SinkKey), 0, -1).Result()
	if err != nil || int64(len(sink)) != cursor {
		t.Errorf("sink has %d events for cursor %d (%v)", len(sink), cursor, err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	clients := map[string]bool{}
	for _, c := range log.tokens {
		clients[c] = true
	}
	if log.dup || len(clients) != 3 {
		t.Errorf("tokens %v: duplicate %v, %d clients took tokens, want 3", log.tokens, log.dup, len(clients))
	}
	if err := RunRegister(context.Background(), RegisterConfig{}); err == nil {
		t.Error("an empty RegisterConfig was accepted")
	}
}
