//go:build !chaos

package node

import (
	"fmt"
	"log/slog"

	"github.com/fenceline/fenceline/election"
)

// checkEtcd refuses the etcd targets: their etcd client (gRPC) is built into the chaos
// build only.
func checkEtcd(target string, _ []string) error {
	return fmt.Errorf("target %q elects through etcd, whose client %w (this build has none): %s", target, errNeedsChaos, ChaosBuildHint)
}

func newEtcdElector(cfg Config, _ election.Clock, _ *slog.Logger, _ election.Recorder) (electorRunner, func(), error) {
	return nil, nil, usage(checkEtcd(cfg.Target, nil))
}
