//go:build chaos

package node

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/failpoint"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/pgstore"
	"github.com/fenceline/fenceline/node/skewclock"
	"github.com/fenceline/fenceline/source"
	"github.com/fenceline/fenceline/targets"
	"github.com/fenceline/fenceline/targets/clientgo"
	"github.com/fenceline/fenceline/variants"
	"github.com/fenceline/fenceline/workloads"
)

// ChaosBuild is true in a chaos build: the variants, the fault hooks and the register
// workload are compiled in.
const ChaosBuild = true

func chaosAvailable() error { return nil }

func checkVariant(name string) error {
	_, err := variants.ByName(name)
	return err
}

func newStore(variant string, client redis.UniversalClient, cfg listener.RedisConfig[source.Event]) (listener.Store[source.Event], error) {
	return variants.Store(variant, client, cfg)
}

// plainStore is the store of an unfenced target: the plain write (variants.Plain).
func plainStore(target string, client redis.UniversalClient, cfg listener.RedisConfig[source.Event]) (listener.Store[source.Event], error) {
	if _, err := targets.ByName(target); err != nil {
		return nil, err
	}
	return variants.Plain(client, cfg)
}

// clientGoElector runs client-go's LeaderElector (package targets/clientgo): --lease-ttl
// is its LeaseDuration, --renew-interval its RenewDeadline, --retry-interval its
// RetryPeriod.
func clientGoElector(cfg Config, client redis.UniversalClient, logger *slog.Logger, rec election.Recorder, h *health) (electorRunner, error) {
	e, err := clientgo.New(client, clientgo.Config{Target: cfg.Target, InstanceID: cfg.ID, Name: cfg.Election,
		LeaseDuration: cfg.Lease, RenewDeadline: cfg.Renew, RetryPeriod: cfg.Retry, Logger: logger, Recorder: rec,
		OnRead: func(err error) {
			if err != nil {
				h.failed(err)
			} else {
				h.answered()
			}
		}})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// chaosTarget accepts every target: a chaos build has them all.
func chaosTarget(string) error { return nil }

func newPgStore(variant string, pool *pgxpool.Pool, cfg pgstore.Config[source.Event]) (listener.Store[source.Event], error) {
	return variants.PostgresStore(variant, pool, cfg)
}

// changeElector installs cfg's variant on e; the redlock-majority variant gets a client
// of each of its servers (closed when the node's run ends, with the process).
func changeElector(cfg Config, e *election.Elector) error {
	var servers []redis.UniversalClient
	for _, addr := range cfg.RedlockServers {
		o := *cfg.Redis
		o.Addr = addr
		servers = append(servers, redis.NewClient(&o))
	}
	return variants.Elector(cfg.Variant, e, servers)
}

// checkRedlock accepts --redlock-servers with the redlock-majority variant only, which
// needs variants.RedlockServers of them.
func checkRedlock(variant string, servers []string) error {
	switch {
	case variant == variants.RedlockMajority && len(servers) != variants.RedlockServers:
		return fmt.Errorf("--variant %s needs --redlock-servers with %d addresses, got %d", variant, variants.RedlockServers, len(servers))
	case variant != variants.RedlockMajority && len(servers) > 0:
		return fmt.Errorf("--redlock-servers is for --variant %s only, not %s", variants.RedlockMajority, variant)
	}
	return nil
}

// faultHooks adds the fault hooks to the control endpoint of a chaos node and returns
// the clock its elector runs on: a skewable clock that POST /fault/clock?offset=&rate=
// sets, and the failpoints (PUT /failpoint/NAME with the action as body, DELETE
// /failpoint/NAME, DELETE /failpoint to disarm all, GET /failpoint). A node without
// chaos gets no hook and the system clock.
func faultHooks(chaos bool, mux *http.ServeMux) election.Clock {
	if !chaos {
		return election.SystemClock()
	}
	failpointHooks(mux)
	skew := skewclock.New()
	mux.HandleFunc("POST /fault/clock", func(w http.ResponseWriter, r *http.Request) {
		offset, err := time.ParseDuration(r.URL.Query().Get("offset"))
		if err != nil {
			http.Error(w, "offset: "+err.Error(), http.StatusBadRequest)
			return
		}
		rate, err := strconv.ParseFloat(r.URL.Query().Get("rate"), 64)
		if err != nil {
			http.Error(w, "rate: "+err.Error(), http.StatusBadRequest)
			return
		}
		if err := skew.SetRate(rate); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		skew.SetOffset(offset)
		fmt.Fprintf(w, "{\"offset\":%q,\"rate\":%g}\n", offset, rate)
	})
	return skew
}

func failpointHooks(mux *http.ServeMux) {
	mux.HandleFunc("PUT /failpoint/{name...}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 256))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		a, err := failpoint.Arm(r.PathValue("name"), string(body))
		switch {
		case errors.Is(err, failpoint.ErrNotCompiled):
			http.Error(w, err.Error(), http.StatusNotImplemented)
		case err != nil:
			http.Error(w, err.Error(), http.StatusBadRequest)
		default:
			fmt.Fprintf(w, "{\"armed\":%q}\n", a)
		}
	})
	mux.HandleFunc("DELETE /failpoint/{name...}", func(w http.ResponseWriter, r *http.Request) {
		if err := failpoint.Disarm(r.PathValue("name")); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	mux.HandleFunc("DELETE /failpoint", func(http.ResponseWriter, *http.Request) { failpoint.DisarmAll() })
	mux.HandleFunc("GET /failpoint", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(failpoint.Status())
	})
}

// checkFailpoints checks the --failpoint settings (NAME=ACTION) without arming them.
func checkFailpoints(specs []string) error {
	for _, s := range specs {
		name, action, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("--failpoint %q: want NAME=ACTION", s)
		}
		if err := failpoint.Check(name); err != nil {
			return fmt.Errorf("--failpoint: %w", err)
		}
		if _, err := failpoint.Parse(action); err != nil {
			return fmt.Errorf("--failpoint: %w", err)
		}
	}
	if len(specs) > 0 && !failpoint.Enabled {
		return fmt.Errorf("--failpoint: %w", failpoint.ErrNotCompiled)
	}
	return nil
}

// armFailpoints arms the --failpoint settings, checked by checkFailpoints.
func armFailpoints(specs []string) error {
	for _, s := range specs {
		name, action, _ := strings.Cut(s, "=")
		if _, err := failpoint.Arm(name, action); err != nil {
			return fmt.Errorf("--failpoint: %w", err)
		}
	}
	return nil
}

// runRegister runs the register workload's clients of this node, with the node's store
// (its variant), history and health.
func runRegister(ctx context.Context, cfg Config, client redis.UniversalClient, stores storeMaker, rec *history.Recorder, st *state) error {
	return workloads.RunRegister(ctx, workloads.RegisterConfig{
		Node: cfg.ID, Clients: cfg.Clients, Election: cfg.Election, Client: client,
		Store: func(id string) (listener.Store[source.Event], error) {
			s, err := stores(id)
			if err != nil {
				return nil, err
			}
			return &trackingStore{Store: s, st: st}, nil
		},
		Recorder: func(id string) election.Recorder { return newElectionRecorder(rec, id, st.health) },
		// The reference's Redis store has a fence that takes writes too; a variant's
		// store or PostgreSQL's is left to its loads and commits.
		Fence: func(s listener.Store[source.Event]) workloads.FencedWriter {
			if t, ok := s.(*trackingStore); ok {
				s = t.Store
			}
			if rs, ok := s.(*listener.RedisStore[source.Event]); ok {
				return rs.Fence()
			}
			return nil
		},
	})
}

const workloadHelp = "listener (elect, then ingest) or register (concurrent fenced clients outside the election: with --chaos only)"

// addChaosFlags adds the flags that exist in a chaos build only (see AddFlags).
func addChaosFlags(fs *flag.FlagSet, c *Config) {
	fs.BoolVar(&c.Chaos, "chaos", false, "enable fault hooks on the control endpoint (POST /fault/clock): for the chaos harness only")
	fs.BoolVar(&c.RemoteControl, "chaos-allow-remote-control", false, "with --chaos, allow a --control address that is not loopback (the fault hooks take no authentication)")
	fs.Func("failpoint", "with --chaos: arm a failpoint at start, NAME=ACTION, the action [N*]sleep(D), block, error or exit[(CODE)] (repeatable; the names are in internal/failpoint)", func(v string) error {
		c.Failpoints = append(c.Failpoints, v)
		return nil
	})
	fs.StringVar(&c.Variant, "variant", Reference, VariantHelp())
	fs.Func("redlock-servers", "with --variant "+variants.RedlockMajority+": the other Redis servers it locks on besides --redis, comma-separated host:port", func(v string) error {
		for _, a := range strings.Split(v, ",") {
			if a = strings.TrimSpace(a); a == "" {
				return errors.New("an empty address")
			}
			c.RedlockServers = append(c.RedlockServers, a)
		}
		return nil
	})
	fs.Int64Var(&c.StartToken, "start-token", 0, "with --chaos: seed an empty store's token counter with this value (the first token is one more)")
	fs.Int64Var(&c.StartCursor, "start-cursor", 0, "with --chaos: seed an empty store's cursor record with this cursor (and token 0)")
	fs.IntVar(&c.Clients, "clients", 3, "register workload: concurrent clients")
}

// VariantHelp lists the variants, for -h.
func VariantHelp() string {
	var b strings.Builder
	b.WriteString("the design to run: reference, or one broken ON PURPOSE for self-validation (needs --chaos):")
	for _, v := range variants.All()[1:] {
		// Without back quotes: the flag package would print a quoted phrase as the
		// flag's argument name.
		fmt.Fprintf(&b, "\n    %s: %s", v.Name, strings.ReplaceAll(v.Description, "`", ""))
	}
	return b.String()
}
