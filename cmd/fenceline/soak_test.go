//go:build chaos

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/soak"
)

// Bad input to soak and soak-report: exit 2 with one line, never a panic.
func TestSoakUsageErrors(t *testing.T) {
	empty := t.TempDir()
	wantUsage(t, nil, true, []usageCase{
		{[]string{"soak", "--shard", "3/2"}, `bad shard "3/2"`},
		{[]string{"soak", "--shard", "0/2"}, `bad shard "0/2"`},
		{[]string{"soak", "--shard", "garbage"}, `bad shard "garbage"`},
		{[]string{"soak", "--seeds", "0"}, "need --seeds >= 1"},
		{[]string{"soak", "--duration", "0s"}, "--duration > 0"},
		{[]string{"soak", "--seed", "-1"}, "--seed >= 1"},
		{[]string{"soak", "--runs", "3"}, "flag provided but not defined: -runs"},
		{[]string{"soak", "--seed0", "3"}, "flag provided but not defined: -seed0"},
		{[]string{"soak", "leftover"}, `unexpected argument "leftover"`},
		{[]string{"soak-report"}, "want DIR..., got 0 arguments"},
		{[]string{"soak-report", empty}, "no runs in " + empty},
		{[]string{"soak-report", filepath.Join(empty, "nope")}, "no such file or directory"},
	})
}

// soak-report's exit code: 1 if any run is invalid, else 3 if any is unknown or a
// planned run is missing, 0 only when every run is there and valid.
func TestSoakReportExitCodes(t *testing.T) {
	V, I, U := checker.Valid, checker.Invalid, checker.Unknown
	for _, tc := range []struct {
		name     string
		verdicts []checker.Verdict // of runs 0..3 of a 4-run soak; "" = missing
		want     int
	}{
		{"all valid", []checker.Verdict{V, V, V, V}, exitOK},
		{"one unknown", []checker.Verdict{V, U, V, V}, exitUnknown},
		{"one invalid", []checker.Verdict{V, V, I, V}, exitInvalid},
		{"invalid wins over unknown", []checker.Verdict{U, V, I, U}, exitInvalid},
		{"a missing run", []checker.Verdict{V, V, "", V}, exitUnknown},
		{"invalid wins over missing", []checker.Verdict{I, "", V, V}, exitInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			a, b := filepath.Join(base, "shard1"), filepath.Join(base, "shard2")
			for i, v := range tc.verdicts {
				if v == "" {
					continue
				}
				dir := a
				if i%2 == 1 {
					dir = b
				}
				soak.WriteTestSlot(t, dir, i, 4, 1, soak.TestRun{Verdict: v, Cursor: 10}, true)
			}
			for _, d := range []string{a, b} {
				os.MkdirAll(d, 0o755)
			}
			out := filepath.Join(base, "merged")
			code, stdout, stderr := runCmd("soak-report", a, b, "--out", out)
			if code != tc.want {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.want, stdout, stderr)
			}
			if _, err := os.Stat(filepath.Join(out, "soak.md")); err != nil {
				t.Error(err)
			}
		})
	}
}

// Directories of two different soaks are not merged: exit 2.
func TestSoakReportRefusesMixedSoaks(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	soak.WriteTestSlot(t, a, 0, 2, 1, soak.TestRun{Cursor: 10}, true)
	soak.WriteTestSlot(t, b, 1, 2, 50, soak.TestRun{Cursor: 10}, true)
	code, _, stderr := runCmd("soak-report", a, b)
	if code != exitUsage || !strings.Contains(stderr, "different soaks") {
		t.Errorf("exit %d, stderr %q; want 2, different soaks", code, stderr)
	}
	// The summary goes to the first directory by default.
	soak.WriteTestSlot(t, a, 1, 2, 1, soak.TestRun{Cursor: 10}, true)
	if code, _, stderr := runCmd("soak-report", a); code != exitOK {
		t.Errorf("soak-report of a complete soak: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(a, "soak.json")); err != nil {
		t.Error(err)
	}
}
