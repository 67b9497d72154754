package main

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/internal/cli"
)

// Every command of this build prints the one usage format for -h: its one-line summary,
// "Usage: fenceline CMD [flags] ARGS", its flags and the exit codes, and exits 0. A
// command of the other build is not listed by `fenceline -h`.
func TestEveryCommandHelp(t *testing.T) {
	code, _, top := runCmd("-h")
	if code != exitOK || !strings.Contains(top, "Usage: fenceline <command> [flags] [args]") || !strings.HasSuffix(top, cli.ExitCodes+"\n") {
		t.Fatalf("fenceline -h: exit %d:\n%s", code, top)
	}
	for _, c := range program().Commands {
		listed := strings.Contains(top, "\n  "+c.Name+" ")
		if listed != c.Present {
			t.Errorf("fenceline -h lists %s: %v, want %v (chaos build: %v)", c.Name, listed, c.Present, chaosBuild)
		}
		if !c.Present {
			continue
		}
		code, stdout, stderr := runCmd(c.Name, "-h")
		synopsis := strings.TrimSpace("Usage: fenceline " + c.Name + " [flags] " + c.Args)
		lines := strings.Split(stderr, "\n")
		if code != exitOK || stdout != "" || lines[0] != "fenceline "+c.Name+": "+c.Summary ||
			!slices.Contains(lines, synopsis) || !slices.Contains(lines, "Flags:") || !strings.HasSuffix(stderr, "\n"+cli.ExitCodes+"\n") {
			t.Errorf("fenceline %s -h: exit %d, stdout %q, stderr:\n%s\nwant the summary, %q, the flags and the exit codes", c.Name, code, stdout, stderr, synopsis)
		}
		// The flag package takes a back-quoted phrase of a usage string as the name
		// of the flag's argument: only "password" is meant as one.
		for _, l := range lines {
			if strings.HasPrefix(l, "  -") && len(strings.Fields(l)) > 2 && !strings.HasPrefix(l, "  -redis-password password") {
				t.Errorf("fenceline %s -h: a flag line with an argument name of several words: %q", c.Name, l)
			}
		}
	}
}

// The production build's node -h shows none of the chaos build's flags, and refuses
// each in one line; the chaos build's has them.
func TestNodeHelpOfTheBuild(t *testing.T) {
	_, _, help := runCmd("node", "-h")
	for _, flag := range []string{"-chaos", "-chaos-allow-remote-control", "-failpoint", "-variant", "-start-token", "-start-cursor", "-clients"} {
		if got := strings.Contains(help, "\n  "+flag+" ") || strings.Contains(help, "\n  "+flag+"\n"); got != chaosBuild {
			t.Errorf("node -h shows %s: %v, want %v", flag, got, chaosBuild)
		}
	}
	if got := strings.Contains(help, "register"); got != chaosBuild {
		t.Errorf("node -h mentions the register workload: %v, want %v", got, chaosBuild)
	}
	if chaosBuild && !strings.Contains(help, "\n  -variant string\n") {
		t.Errorf("node -h renders a back-quoted phrase as --variant's argument:\n%s", help)
	}
}

// fenceline version and --version print the module version and the VCS revision, and
// "unknown" for what the binary does not know (a test binary has no VCS stamp).
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		code, stdout, stderr := runCmd(args...)
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if code != exitOK || stderr != "" || len(lines) != 4 || !strings.HasPrefix(lines[0], "fenceline ") ||
			!strings.HasPrefix(lines[1], "revision ") || !strings.HasPrefix(lines[2], "modified ") {
			t.Errorf("fenceline %s: exit %d, stdout %q, stderr %q", args[0], code, stdout, stderr)
		}
		for _, l := range lines {
			if len(strings.Fields(l)) < 2 {
				t.Errorf("fenceline %s: an empty value: %q", args[0], l)
			}
		}
	}
}

// hashDir returns the SHA-256 of every file under dir, by its relative path.
func hashDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		sums[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return sums
}

// check judges a stored run without changing a byte of its directory, also on a run
// with a failing linearizability check (porcupine's visualization) and with --json;
// check --write and report write its report files.
func TestCheckWritesNothing(t *testing.T) {
	for name, want := range map[string]int{"pass": exitOK, "fail": exitInvalid} {
		t.Run(name, func(t *testing.T) {
			dir := copyRun(t, name)
			before := hashDir(t, dir)
			code, stdout, stderr := runCmd("check", dir)
			if code != want || !strings.Contains(stdout, "fenceline run:") {
				t.Fatalf("check: exit %d, want %d\n%s%s", code, want, stdout, stderr)
			}
			code, stdout, stderr = runCmd("check", "--json", dir)
			var res struct{ Verdict string }
			if err := json.Unmarshal([]byte(stdout), &res); code != want || err != nil || res.Verdict == "" {
				t.Fatalf("check --json: exit %d, %v, verdict %q\n%s", code, err, res.Verdict, stderr)
			}
			if after := hashDir(t, dir); !maps.Equal(before, after) {
				t.Fatalf("check changed the run directory:\nbefore %v\nafter  %v", before, after)
			}
			for _, cmd := range [][]string{{"check", "--write", dir}, {"report", dir}} {
				os.Remove(filepath.Join(dir, "results.json"))
				if code, _, stderr := runCmd(cmd...); code != want {
					t.Fatalf("%v: exit %d, want %d: %s", cmd, code, want, stderr)
				}
				for _, f := range []string{"results.json", "report.md", "index.html", "junit.xml"} {
					if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
						t.Errorf("%v did not write %s: %v", cmd, f, err)
					}
				}
			}
			// What check --json prints is what results.json holds, but for how long the
			// check took.
			_, stdout, _ = runCmd("check", "--json", dir)
			b, err := os.ReadFile(filepath.Join(dir, "results.json"))
			var printed, stored map[string]any
			if err == nil {
				err = errors.Join(json.Unmarshal([]byte(stdout), &printed), json.Unmarshal(b, &stored))
			}
			delete(printed, "check_duration_ns")
			delete(stored, "check_duration_ns")
			if err != nil || !reflect.DeepEqual(printed, stored) {
				t.Errorf("check --json differs from results.json (%v)", err)
			}
		})
	}
}
