//go:build !chaos

package node

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/internal/cli"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/listener/pgstore"
	"github.com/fenceline/fenceline/source"
)

// ChaosBuild is false in a default build: no variant, no fault hook, no register
// workload is compiled in.
const ChaosBuild = false

// errNeedsChaos is what a default build answers to anything chaos-only.
var errNeedsChaos = errors.New("needs a chaos build")

func chaosAvailable() error {
	return fmt.Errorf("--chaos %w (this build has no fault hooks and runs the reference only): %s", errNeedsChaos, ChaosBuildHint)
}

func checkVariant(name string) error {
	if name == Reference {
		return nil
	}
	return fmt.Errorf("variant %q %w (the broken variants exist only there; this build runs the reference only): %s", name, errNeedsChaos, ChaosBuildHint)
}

func newStore(variant string, client redis.UniversalClient, cfg listener.RedisConfig[source.Event]) (listener.Store[source.Event], error) {
	if err := checkVariant(variant); err != nil {
		return nil, err
	}
	return listener.NewRedisStore(client, cfg)
}

func plainStore(target string, _ redis.UniversalClient, _ listener.RedisConfig[source.Event]) (listener.Store[source.Event], error) {
	return nil, fmt.Errorf("target %q writes the cursor without a fence and %w: %s", target, errNeedsChaos, ChaosBuildHint)
}

func clientGoElector(cfg Config, _ redis.UniversalClient, _ *slog.Logger, _ election.Recorder, _ *health) (electorRunner, error) {
	return nil, chaosTarget(cfg.Target)
}

// chaosTarget refuses the targets that only a chaos build contains.
func chaosTarget(name string) error {
	return fmt.Errorf("target %q %w (its lock is a stand-in for the Kubernetes API server's Lease, and this build does not contain it): %s", name, errNeedsChaos, ChaosBuildHint)
}

func newPgStore(variant string, pool *pgxpool.Pool, cfg pgstore.Config[source.Event]) (listener.Store[source.Event], error) {
	if err := checkVariant(variant); err != nil {
		return nil, err
	}
	return pgstore.NewStore(pool, cfg)
}

func changeElector(Config, *election.Elector) error { return nil }

func checkRedlock(string, []string) error { return nil }

func faultHooks(bool, *http.ServeMux) election.Clock { return election.SystemClock() }

func runRegister(context.Context, Config, redis.UniversalClient, storeMaker, *history.Recorder, *state) error {
	return fmt.Errorf("the register workload %w: %s", errNeedsChaos, ChaosBuildHint)
}

const workloadHelp = "listener: elect, then ingest"

// addChaosFlags hides the flags of a chaos build (see AddFlags): any value but their
// default is refused in one line.
func addChaosFlags(fs *flag.FlagSet, _ *Config) {
	for name, accept := range map[string]string{"chaos": "false", "chaos-allow-remote-control": "false", "failpoint": "",
		"variant": Reference, "redlock-servers": "", "start-token": "0", "start-cursor": "0", "clients": "3"} {
		cli.Hide(fs, name, accept, "exists only in a chaos build; "+ChaosBuildHint)
	}
}

// VariantHelp describes --variant, for -h.
func VariantHelp() string {
	return "the design to run: reference (the broken variants for self-validation exist only in a chaos build: bin/fenceline-chaos)"
}

func checkFailpoints(specs []string) error {
	if len(specs) == 0 {
		return nil
	}
	return fmt.Errorf("--failpoint %w: %s", errNeedsChaos, ChaosBuildHint)
}

func armFailpoints([]string) error { return nil }
