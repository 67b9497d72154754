package node

import (
	"errors"
	"strings"
	"testing"
)

// A -fenced target runs like the reference; an unfenced one only with --chaos; a target
// does not mix with a variant or the register workload; an unknown one is refused.
func TestValidateTarget(t *testing.T) {
	c := validConfig()
	c.Target = "redislock-fenced"
	if err := c.Validate(); err != nil {
		t.Fatalf("redislock-fenced: %v", err)
	}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Target = "redsync" }, "without a fence"},
		{func(c *Config) { c.Target = "zookeeper" }, "unknown target"},
		{func(c *Config) { c.Target = "client-go-fenced" }, "stand-in"},
		{func(c *Config) { c.Target = "redsync-fenced"; c.Variant = "no-fence"; c.Chaos = true }, "variant"},
		{func(c *Config) { c.Target = "redsync-fenced"; c.Workload = WorkloadRegister; c.Chaos = true }, "listener workload only"},
	} {
		c := validConfig()
		tc.change(&c)
		err := c.Validate()
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a usage error saying %q", c, err, tc.want)
		}
	}
}

// --etcd belongs to the etcd targets: refused for any other, in every build.
func TestEtcdFlag(t *testing.T) {
	for _, target := range []string{"", "reference", "redsync-fenced"} {
		c := validConfig()
		c.Target, c.Etcd = target, []string{"127.0.0.1:2379"}
		err := c.Validate()
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--etcd is for the targets that elect through etcd") {
			t.Errorf("--target %q with --etcd: %v, want a usage error", target, err)
		}
	}
}
