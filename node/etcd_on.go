//go:build chaos

package node

import (
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/targets/etcdelect"
)

// addEtcdFlag adds --etcd, a comma-separated list (repeatable).
func addEtcdFlag(fs *flag.FlagSet, c *Config) {
	fs.Func("etcd", "etcd's client addresses, host:port[,host:port...], for --target etcd and etcd-fenced (required there, refused otherwise; Redis still holds the cursor)", func(v string) error {
		for ep := range strings.SplitSeq(v, ",") {
			if ep = strings.TrimSpace(ep); ep != "" {
				c.Etcd = append(c.Etcd, ep)
			}
		}
		return nil
	})
}

// checkEtcd checks the --etcd endpoints of target, which elects through etcd.
func checkEtcd(target string, endpoints []string) error {
	if len(endpoints) == 0 {
		return fmt.Errorf("--target %s elects through etcd and needs --etcd host:port[,host:port...]", target)
	}
	if err := etcdelect.CheckEndpoints(endpoints); err != nil {
		return fmt.Errorf("--etcd: %w", err)
	}
	return nil
}

// newEtcdElector returns the elector of an etcd target on a client of cfg.Etcd (not yet
// connected), and the func that closes the client once the elector's Run has returned.
//
// health, if not nil, hears whether etcd answers a standby (see etcdelect.Config.Health).
func newEtcdElector(cfg Config, clock election.Clock, logger *slog.Logger, rec election.Recorder, health *health) (electorRunner, func(), error) {
	if logger != nil {
		logger = logger.With(slog.String("target", cfg.Target))
	}
	client, err := etcdelect.NewClient(cfg.Etcd, logger)
	if err != nil {
		return nil, nil, usage(err)
	}
	el, err := etcdelect.New(client, etcdelect.Config{InstanceID: cfg.ID, Name: cfg.Election, LeaseTTL: cfg.Lease,
		RenewInterval: cfg.Renew, RetryInterval: cfg.Retry, Clock: clock, Logger: logger, Recorder: rec,
		Health: func(err error) {
			if err != nil {
				health.failed(err)
			} else {
				health.answered()
			}
		}})
	if err != nil {
		client.Close()
		return nil, nil, err
	}
	return el, func() { client.Close() }, nil
}
