package fenced_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/pgserver"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/fenced"
	"github.com/fenceline/fenceline/listener/pgstore"
	"github.com/fenceline/fenceline/source"
)

var pgURL string

func TestMain(m *testing.M) { pgserver.Main(m, &pgURL) }

// lead runs el until one term has called work with its token, and returns the token.
func lead(t *testing.T, el *election.Elector, work func(ctx context.Context, token int64) error) int64 {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var token int64
	var werr error
	err := el.Run(ctx, func(tctx context.Context, term election.Term) {
		token, werr = term.Token, work(tctx, term.Token)
		cancel()
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	if werr != nil {
		t.Fatal(werr)
	}
	return token
}

// The names are typed once: the fence's keys share the election's hash tag, and its
// audit names the election's instance; a write below the term's token is stale.
func TestRedisNamesTypedOnce(t *testing.T) {
	srv := redisserver.New(t)
	client := listener.NewRedisClient(srv.Addr())
	t.Cleanup(func() { client.Close() })
	ctx := context.Background()
	el, fence, err := fenced.Redis(client, election.Config{Name: "pay", InstanceID: "n1"}, listener.FenceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fence.Keys().Cursor, election.KeyPrefix("pay")+"cursor"; got != want {
		t.Errorf("fence record %q, want %q (the election's hash tag)", got, want)
	}
	token := lead(t, el, func(ctx context.Context, token int64) error {
		return fence.Write(ctx, token, listener.Set("done", "yes"))
	})
	if err := fence.Write(ctx, token-1, listener.Set("done", "stale")); !errors.Is(err, listener.ErrStaleToken) {
		t.Errorf("a write below the term's token: %v, want ErrStaleToken", err)
	}
	msgs, err := client.XRange(ctx, fence.Keys().Audit, "-", "+").Result()
	if err != nil || len(msgs) != 2 || msgs[0].Values["node"] != "n1" || msgs[0].Values["result"] != "ok" {
		t.Fatalf("audit %v, %v; want n1's write, then the stale one", msgs, err)
	}
	if v, _ := client.Get(ctx, fence.Keys().Key("done")).Result(); v != "yes" {
		t.Errorf("done = %q", v)
	}

	_, store, err := fenced.RedisStore(client, election.Config{InstanceID: "n2"}, listener.RedisConfig[source.Event]{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := store.Keys().Cursor, listener.KeysFor(election.DefaultName).Cursor; got != want {
		t.Errorf("default election: store record %q, want %q", got, want)
	}
}

func TestPostgresNamesTypedOnce(t *testing.T) {
	srv := redisserver.New(t)
	client := listener.NewRedisClient(srv.Addr())
	t.Cleanup(func() { client.Close() })
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	el, fence, err := fenced.Postgres(client, pool, election.Config{Name: "pgpay", InstanceID: "n1"}, pgstore.FenceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fence.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	token := lead(t, el, func(ctx context.Context, token int64) error {
		return fence.Do(ctx, token, func(ctx context.Context, tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `CREATE TABLE fenced_done (v text)`)
			return err
		})
	})
	var name, node string
	var tok int64
	if err := pool.QueryRow(ctx, `SELECT name, node, token FROM fenceline_audit ORDER BY seq DESC LIMIT 1`).Scan(&name, &node, &tok); err != nil {
		t.Fatal(err)
	}
	if name != "pgpay" || node != "n1" || tok != token {
		t.Errorf("audit row %s/%s/%d, want pgpay/n1/%d", name, node, tok, token)
	}
	if _, _, err := fenced.PostgresStore(client, pool, election.Config{Name: "pgpay", InstanceID: "n1"},
		pgstore.Config[source.Event]{Name: "pgpay", Node: "n1"}); err != nil {
		t.Errorf("the election's own names spelled out: %v", err)
	}
}

// A store name or node other than the election's is refused.
func TestNamesMustAgree(t *testing.T) {
	client := listener.NewRedisClient("127.0.0.1:1") // nothing listens: the names are refused before any request
	t.Cleanup(func() { client.Close() })
	cfg := election.Config{Name: "pay", InstanceID: "n1"}
	for name, err := range map[string]error{
		"fence name": func() error { _, _, err := fenced.Redis(client, cfg, listener.FenceConfig{Name: "other"}); return err }(),
		"fence node": func() error { _, _, err := fenced.Redis(client, cfg, listener.FenceConfig{Node: "n2"}); return err }(),
		"store name": func() error {
			_, _, err := fenced.RedisStore(client, election.Config{InstanceID: "n1"}, listener.RedisConfig[source.Event]{Name: "pay"})
			return err
		}(),
		"pg node": func() error {
			_, _, err := fenced.PostgresStore(client, &pgxpool.Pool{}, cfg, pgstore.Config[source.Event]{Node: "n2"})
			return err
		}(),
	} {
		if !errors.Is(err, listener.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
}
