//go:build !chaos

package node

import (
	"errors"
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
