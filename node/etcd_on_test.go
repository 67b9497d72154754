//go:build chaos

package node

import (
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
)

// A chaos build runs the etcd targets: --etcd is required and checked, and the unfenced
// one needs --chaos like every unfenced target.
func TestValidateEtcdTargets(t *testing.T) {
	c := validConfig()
	c.Target, c.Etcd = "etcd-fenced", []string{"127.0.0.1:2379", "localhost:2380"}
	if err := c.Validate(); err != nil {
		t.Fatalf("etcd-fenced: %v", err)
	}
	c.Target, c.Chaos = "etcd", true
	if err := c.Validate(); err != nil {
		t.Fatalf("etcd with --chaos: %v", err)
	}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { c.Target = "etcd-fenced" }, "needs --etcd host:port"},
		{func(c *Config) { c.Target = "etcd"; c.Chaos = true }, "needs --etcd host:port"},
		{func(c *Config) { c.Target = "etcd-fenced"; c.Etcd = []string{"127.0.0.1"} }, `--etcd: etcd endpoint "127.0.0.1": want host:port`},
		{func(c *Config) { c.Target = "etcd-fenced"; c.Etcd = []string{"http://127.0.0.1:2379"} }, "want host:port"},
		{func(c *Config) { c.Target = "etcd-fenced"; c.Etcd = []string{"127.0.0.1:99999"} }, "port from 1 to 65535"},
		{func(c *Config) { c.Target = "etcd"; c.Etcd = []string{"127.0.0.1:2379"} }, "without a fence"},
	} {
		c := validConfig()
		tc.change(&c)
		err := c.Validate()
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a usage error saying %q", c, err, tc.want)
		}
	}
}

// --etcd takes a comma-separated list, and may be repeated.
func TestEtcdFlagList(t *testing.T) {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	c, _ := AddFlags(fs)
	if err := fs.Parse([]string{"--etcd", "127.0.0.1:1, 127.0.0.1:2", "--etcd", "127.0.0.1:3"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}; !slices.Equal(c.Etcd, want) {
		t.Errorf("--etcd parsed as %q, want %q", c.Etcd, want)
	}
}
