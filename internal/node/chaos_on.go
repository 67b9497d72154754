//go:build chaos

package node

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/skewclock"
	"github.com/fenceline/fenceline/listener"
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

func newStore(variant string, client redis.UniversalClient, cfg listener.StoreConfig) (listener.CursorStore, error) {
	return variants.Store(variant, client, cfg)
}

func changeElector(variant string, e *election.Elector) error { return variants.Elector(variant, e) }

// faultHooks adds the fault hooks to the control endpoint of a chaos node and returns
// the clock its elector runs on: a skewable clock that POST /fault/clock?offset=&rate=
// sets. A node without chaos gets no hook and the system clock.
func faultHooks(chaos bool, mux *http.ServeMux) election.Clock {
	if !chaos {
		return election.SystemClock()
	}
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

// runRegister runs the register workload's clients of this node, with the node's store
// (its variant), history and health.
func runRegister(ctx context.Context, cfg Config, client redis.UniversalClient, rec *history.Recorder, st *state) error {
	return workloads.RunRegister(ctx, workloads.RegisterConfig{
		Node: cfg.ID, Clients: cfg.Clients, Election: cfg.Election, Client: client,
		Store: func(id string) (listener.CursorStore, error) {
			s, err := newStore(cfg.Variant, client, listener.StoreConfig{Name: cfg.Election, Node: id, Recorder: rec})
			if err != nil {
				return nil, err
			}
			return &trackingStore{CursorStore: s, st: st}, nil
		},
		Recorder: func(id string) election.Recorder { return newElectionRecorder(rec, id, st.health) },
	})
}

// VariantHelp lists the variants, for -h.
func VariantHelp() string {
	var b strings.Builder
	b.WriteString("the design to run: reference, or one broken ON PURPOSE for self-validation (needs --chaos):")
	for _, v := range variants.All()[1:] {
		fmt.Fprintf(&b, "\n    %s: %s", v.Name, v.Description)
	}
	return b.String()
}
