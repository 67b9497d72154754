//go:build !chaos

package node

import (
	"flag"
	"fmt"
	"log/slog"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/cli"
)

// addEtcdFlag hides --etcd, as addChaosFlags hides the chaos build's flags.
func addEtcdFlag(fs *flag.FlagSet, _ *Config) {
	cli.Hide(fs, "etcd", "", "is for the etcd targets, which exist only in a chaos build; "+ChaosBuildHint)
}

// checkEtcd refuses the etcd targets: their etcd client (gRPC) is built into the chaos
// build only.
func checkEtcd(target string, _ []string) error {
	return fmt.Errorf("target %q elects through etcd, whose client %w (this build has none): %s", target, errNeedsChaos, ChaosBuildHint)
}

func newEtcdElector(cfg Config, _ election.Clock, _ *slog.Logger, _ election.Recorder, _ *health) (electorRunner, func(), error) {
	return nil, nil, usage(checkEtcd(cfg.Target, nil))
}
