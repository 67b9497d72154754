//go:build !chaos

package node

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

// A default build runs the reference only: anything chaos-only is a usage error that
// names the chaos build.
func TestDefaultBuildRefusesChaos(t *testing.T) {
	if ChaosBuild {
		t.Fatal("ChaosBuild in a default build")
	}
	for _, change := range []func(*Config){
		func(c *Config) { c.Variant = "no-fence" },
		func(c *Config) { c.Variant = "no-fence"; c.Chaos = true },
		func(c *Config) { c.Chaos = true },
		func(c *Config) { c.Chaos = true; c.Workload = WorkloadRegister },
		func(c *Config) { c.Target = "redsync"; c.Chaos = true },
		func(c *Config) { c.Target = "etcd-fenced"; c.Etcd = []string{"127.0.0.1:2379"} },
		func(c *Config) { c.Target = "etcd"; c.Etcd = []string{"127.0.0.1:2379"}; c.Chaos = true },
		func(c *Config) { c.Target = "client-go-fenced" },
		func(c *Config) { c.Target = "client-go-transitions"; c.Chaos = true },
	} {
		c := validConfig()
		change(&c)
		err := c.Validate()
		if !errors.Is(err, ErrUsage) || !errors.Is(err, errNeedsChaos) || !strings.Contains(err.Error(), "chaos build") {
			t.Errorf("%+v: %v, want a usage error naming the chaos build", c, err)
		}
	}
}

// A default build does not list --etcd and refuses it in one line.
func TestDefaultBuildHidesEtcd(t *testing.T) {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	AddFlags(fs)
	err := fs.Parse([]string{"--etcd", "127.0.0.1:2379"})
	if err == nil || !strings.Contains(err.Error(), "chaos build") {
		t.Errorf("--etcd in a default build: %v, want a refusal naming the chaos build", err)
	}
}
