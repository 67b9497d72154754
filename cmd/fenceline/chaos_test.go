//go:build chaos

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/variants"
)

// The harness's commands are in a chaos build; bad input gets exit 2 and a clear error.
func TestChaosUsageErrors(t *testing.T) {
	wantUsage(t, nil, false, []usageCase{
		{[]string{"chaos", "--nemesis", "kill,meteor"}, `unknown fault: "meteor"`},
		{[]string{"chaos", "--workload", "kv"}, `unknown workload "kv"`},
		{[]string{"chaos", "--nodes", "0"}, "need --nodes >= 1"},
		{[]string{"chaos", "--backend", "cloud"}, `unknown backend "cloud"`},
		{[]string{"chaos", "--variant", "nonsense"}, `unknown variant "nonsense"`},
		{[]string{"chaos", "--target", "zookeeper"}, `unknown target "zookeeper" (known: reference, redsync, redsync-fenced, redislock, redislock-fenced, etcd, etcd-fenced, client-go, client-go-fenced, client-go-transitions)`},
		{[]string{"node", "--id", "n1", "--target", "redsync"}, "without a fence and runs only with --chaos"},
		{[]string{"chaos", "--duration", "soon"}, "invalid value"},
		{[]string{"node", "--id", "n1", "--variant", "no-fence"}, "broken on purpose and runs only with --chaos"},
	})
}

// Fault hooks on a non-loopback control address are refused without an explicit flag.
func TestChaosNodeRefusals(t *testing.T) {
	t.Setenv(passwordEnv, "")
	wantUsage(t, []string{"node", "--id", "n1"}, true, []usageCase{
		{[]string{"--chaos", "--control", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"--chaos", "--control", ":9100"}, "not a loopback address"},
		{[]string{"--chaos", "--control", "192.0.2.1:9100"}, "not a loopback address"},
		{[]string{"--chaos", "--control", "example.com:9100"}, "--chaos-allow-remote-control"},
		// Allowed explicitly (or on loopback): the next check, a bad TLS pair, speaks.
		{[]string{"--chaos", "--control", "0.0.0.0:0", "--chaos-allow-remote-control", "--redis-tls-cert", "x"}, "go together"},
		{[]string{"--chaos", "--control", "[::1]:0", "--redis-tls-cert", "x"}, "go together"},
		{[]string{"--chaos", "--control", "localhost:0", "--redis-tls-cert", "x"}, "go together"},
		{[]string{"--chaos", "--workload", "register", "--redis-tls-cert", "x"}, "go together"},
		{[]string{"--failpoint", "election/renew-before-send=block"}, "--failpoint needs --chaos"},
		{[]string{"--chaos", "--failpoint", "election/nope=block"}, "unknown failpoint"},
		{[]string{"--chaos", "--failpoint", "election/renew-before-send=nap"}, "bad action"},
	})
}

// Values that used to become defaults silently, and inputs found bad only once a run had
// started, are usage errors before any run directory exists.
func TestChaosRejectsBadSettings(t *testing.T) {
	out := t.TempDir()
	wantUsage(t, []string{"chaos", "--out", out}, false, []usageCase{
		{[]string{"--duration", "0"}, "need --duration > 0"},
		{[]string{"--lease-ttl", "0"}, "need --lease-ttl >= 100ms"},
		{[]string{"--nemesis", ""}, "--nemesis is empty"},
		{[]string{"--nodes", "1000"}, "at most 32 nodes"},
		{[]string{"--binary", "/nonexistent/fenceline"}, "not an executable file"},
		{[]string{"--binary", t.TempDir()}, "not an executable file"},
		{[]string{"--budget", "kill.p77=1s"}, "--budget: checker: bad budget"},
		// The Redis faults exist only where Redis has replicas, the restart only where it has none.
		{[]string{"--nemesis", "kill,redis-failover"}, "redis-failover needs replicas"},
		{[]string{"--nemesis", "replication-delay", "--redis-topology", "single"}, "replication-delay needs replicas"},
		{[]string{"--nemesis", "redis-restart", "--redis-topology", "sentinel"}, "redis-restart restarts the single Redis"},
		{[]string{"--redis-topology", "ring"}, `unknown Redis topology "ring"`},
		{[]string{"--redis-wait", "1"}, "--redis-wait 1 needs replicas"},
		{[]string{"--min-replicas-to-write", "1"}, "min-replicas-to-write needs replicas"},
		{[]string{"--redis-topology", "sentinel", "--min-replicas-to-write", "3"}, "min-replicas-to-write 3"},
		{[]string{"--redis-topology", "cluster", "--min-replicas-to-write", "2"}, "min-replicas-to-write 2 (0..1 with cluster)"},
		{[]string{"--nemesis", "redis-restart", "--redis-topology", "cluster"}, "redis-restart restarts the single Redis"},
		// -1 is "chosen by the seed"; any other negative start is a mistake.
		{[]string{"--start-token", "-5"}, "--start-token -5, --start-cursor -1: want a value >= 0, or -1"},
		{[]string{"--start-cursor", "-2"}, "want a value >= 0, or -1"},
	})
	if left, _ := os.ReadDir(out); len(left) > 0 {
		t.Errorf("rejected runs left %d entries in --out", len(left))
	}
}

// mutants refuses --sample with --only before it generates anything.
func TestMutantsRejectsBadSettings(t *testing.T) {
	wantUsage(t, []string{"mutants", "--out", t.TempDir()}, true, []usageCase{
		{[]string{"--sample", "3", "--only", "renewScript:2:4:LUA_RELATIONAL_FLIP"}, "not both --sample and --only"},
		{[]string{"--parallel", "0"}, "need --seed >= 1"},
	})
}

// Without redis-server in PATH the local backend cannot run: a usage error that says
// what to install.
func TestChaosWithoutRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCmd("chaos", "--out", t.TempDir(), "--binary", bin, "--backend", "local")
	if code != exitUsage || !strings.Contains(stderr, "apt-get install -y redis-server") {
		t.Fatalf("exit %d, stderr %q; want 2 naming the package", code, stderr)
	}
}

// realRuns starts a test that makes real chaos runs (what, in -short's skip message):
// none under -short, and no Redis password taken from the environment.
func realRuns(t *testing.T, what string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what)
	}
	t.Setenv(passwordEnv, "")
}

// helperBinary is an executable that runs this test binary as fenceline (through
// TestHelperProcess), for --binary.
func helperBinary(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fenceline")
	script := "#!/bin/sh\nFENCELINE_HELPER_PROCESS=1 exec '" + os.Args[0] + "' -test.run='^TestHelperProcess$' -- \"$@\"\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// Settings the nodes would reject at start are found by `fenceline node --check` before
// the run: a usage error with the node's own message, and no run directory.
func TestChaosNodeRejectsSettings(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := runCmd("chaos", "--out", out, "--binary", helperBinary(t), "--lease-ttl", "1000500us")
	if code != exitUsage || !strings.Contains(stderr, "whole number of milliseconds") {
		t.Fatalf("exit %d, stderr %q; want 2 with the node's message", code, stderr)
	}
	if left, _ := os.ReadDir(out); len(left) > 0 {
		t.Errorf("a rejected run left %d entries in --out", len(left))
	}
	code, _, stderr = runCmd("chaos", "--out", out, "--binary", "/bin/false")
	if code != exitUsage || !strings.Contains(stderr, "does not accept the nodes' settings") {
		t.Fatalf("--binary /bin/false: exit %d, stderr %q; want 2", code, stderr)
	}
}

func TestValidateUsage(t *testing.T) {
	for _, args := range [][]string{
		{"--seeds", "0"},
		{"--duration", "0s"},
		{"--variants", "reference"},
		{"--variants", "no-such-variant"},
		{"--variants", ","},
		{"--nodes", "0"},
		{"--lease-ttl", "1ms"},
		{"extra"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(append([]string{"validate", "--out", t.TempDir()}, args...), &stdout, &stderr); code != exitUsage {
			t.Errorf("validate %q: exit %d, want %d; stderr: %s", args, code, exitUsage, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"validate", "-h"}, &stdout, &stderr); code != exitOK || !strings.Contains(stderr.String(), "-seeds") {
		t.Errorf("validate -h: exit %d: %s", code, stderr.String())
	}
}

// A broken variant must never run outside the harness: `fenceline node` refuses it
// without --chaos, before it connects to anything.
func TestNodeRefusesBrokenVariantWithoutChaos(t *testing.T) {
	for _, v := range variants.All()[1:] {
		var stdout, stderr bytes.Buffer
		code := run([]string{"node", "--id", "n1", "--variant", v.Name, "--redis", "127.0.0.1:1", "--control", "127.0.0.1:0"}, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "--chaos") {
			t.Errorf("node --variant %s: exit %d, want %d; stderr: %s", v.Name, code, exitUsage, stderr.String())
		}
	}
}

// A soak runs `BINARY chaos` for every run: a binary without the harness (a default
// build) is refused before anything runs.
func TestSoakRefusesABinaryWithoutChaos(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := runCmd("soak", "--binary", "/bin/false", "--out", out, "--seeds", "1")
	if code != exitUsage || !strings.Contains(stderr, "has no chaos command") || strings.Count(stderr, "\n") != 1 {
		t.Fatalf("exit %d, stderr %q; want 2 and one line", code, stderr)
	}
	if left, _ := os.ReadDir(out); len(left) > 0 {
		t.Errorf("a refused soak left %d entries in --out", len(left))
	}
}

// A --node-cmd that fails the node protocol is refused before the run (exit 2), naming
// the node, what it did not do and what it printed; no run directory is left.
func TestChaosRefusesABrokenNodeCmd(t *testing.T) {
	out := t.TempDir()
	code, _, stderr := runCmd("chaos", "--out", out, "--binary", helperBinary(t), "--duration", "5s",
		"--node-cmd", "echo no ledger here >&2; exit 3")
	for _, want := range []string{"does not follow the node protocol", "node n1 did not write its control address", "no ledger here"} {
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, want 2 and %q in %q", code, want, stderr)
		}
	}
	if left, _ := os.ReadDir(out); len(left) > 0 {
		t.Errorf("a refused run left %d entries in --out", len(left))
	}
	code, _, stderr = runCmd("chaos", "--out", out, "--node-cmd", "true", "--target", "redsync")
	if code != exitUsage || !strings.Contains(stderr, "the command is the design under test") {
		t.Errorf("--node-cmd with --target: exit %d, stderr %q", code, stderr)
	}
}
