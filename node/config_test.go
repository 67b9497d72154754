package node

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func validConfig() Config {
	return Config{ID: "n1", Election: "fenceline", Control: "127.0.0.1:0", Variant: Reference,
		Workload: WorkloadListener, Lease: 2 * time.Second, Batch: 10, Clients: 1}
}

// Every refusal wraps ErrUsage and is one line; a valid config passes.
func TestValidate(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.ID = "" }, "--id is required"},
		{func(c *Config) { c.Workload = "kv" }, `unknown workload "kv"`},
		{func(c *Config) { c.Workload = WorkloadRegister }, "runs only with --chaos"},
		{func(c *Config) { c.Lease = 0 }, "need --lease-ttl > 0"},
		{func(c *Config) { c.Batch = 0 }, "--batch >= 1"},
		{func(c *Config) { c.Retry = -time.Second }, "no negative interval"},
	} {
		c := validConfig()
		tc.change(&c)
		err := c.Validate()
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want ErrUsage with %q", c, err, tc.want)
		}
	}
	if err := Check(validConfig()); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "Redis") {
		t.Errorf("Check without Redis options: %v", err)
	}
}
