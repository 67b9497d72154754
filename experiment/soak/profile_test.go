//go:build chaos

package soak

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
)

func TestParseProfiles(t *testing.T) {
	in := `# a comment

single: --nemesis all
python: --node-cmd '/usr/bin/python3 examples/python-node/node.py' --nemesis "kill,stop"
quoted: --x "a \"b\" c" 'it''s'
`
	ps, err := ParseProfiles(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []Profile{
		{"single", []string{"--nemesis", "all"}},
		{"python", []string{"--node-cmd", "/usr/bin/python3 examples/python-node/node.py", "--nemesis", "kill,stop"}},
		{"quoted", []string{"--x", `a "b" c`, "its"}},
	}
	if len(ps) != len(want) {
		t.Fatalf("got %q", ps)
	}
	for i := range want {
		if ps[i].Name != want[i].Name || !slices.Equal(ps[i].Args, want[i].Args) {
			t.Errorf("profile %d: %q, want %q", i, ps[i], want[i])
		}
	}
	for _, bad := range []string{
		"",                          // no profile
		"# only a comment\n",        // no profile
		"no colon here\n",           // not NAME: FLAGS
		"Upper: --nemesis all\n",    // name not lower case
		"a: --x\na: --y\n",          // twice
		"a: --duration 5s\n",        // the soak's own flag
		"a: --seed=3\n",             // the soak's own flag, with =
		"a: -out x\n",               // one dash
		"a: --node-cmd 'python3\n",  // unterminated quote
		"a: --node-cmd \"python3\n", // unterminated quote
	} {
		if _, err := ParseProfiles(strings.NewReader(bad)); err == nil {
			t.Errorf("ParseProfiles(%q): no error", bad)
		}
	}
	// The campaign's own file parses.
	if ps, err := LoadProfiles("campaign.profiles"); err != nil || len(ps) < 8 {
		t.Errorf("campaign.profiles: %d profiles, %v", len(ps), err)
	}
}

// The runs are cut into one block per profile, and every shard runs every profile.
func TestProfileOfBlocks(t *testing.T) {
	ps := []Profile{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	var got []string
	for i := range 7 {
		got = append(got, ProfileOf(ps, 7, i).Name)
	}
	if want := []string{"a", "a", "a", "b", "b", "c", "c"}; !slices.Equal(got, want) {
		t.Errorf("7 runs over 3 profiles: %v, want %v", got, want)
	}
	for _, n := range []int{2, 3} {
		for i := 1; i <= n; i++ {
			seen := map[string]bool{}
			for _, j := range (Shard{i, n}).Indices(30) {
				seen[ProfileOf(ps, 30, j).Name] = true
			}
			if len(seen) != len(ps) {
				t.Errorf("shard %d/%d of 30 runs runs profiles %v, want all %d", i, n, seen, len(ps))
			}
		}
	}
	if p := ProfileOf(nil, 5, 2); p.Name != "" || p.Args != nil {
		t.Errorf("no profiles: %+v", p)
	}
}

// Each run of a campaign gets its profile's flags after the soak's own, records its
// profile, and a directory of another campaign is refused.
func TestCampaignRunsEachProfile(t *testing.T) {
	argsFile := filepath.Join(t.TempDir(), "args")
	bin := filepath.Join(t.TempDir(), "fenceline")
	script := "#!/bin/sh\necho \"$@\" >> " + argsFile + "\nexit 3\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cfg := Config{Binary: bin, Out: out, Runs: 4, Seed0: 1, Duration: time.Second,
		Profiles: []Profile{{"one", []string{"--nemesis", "kill"}}, {"two", []string{"--store", "postgres"}}}}
	s, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(argsFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d runs started: %q", len(lines), lines)
	}
	for i, l := range lines {
		want := " --quiet --nemesis kill"
		if i >= 2 {
			want = " --quiet --store postgres"
		}
		if !strings.HasSuffix(l, want) {
			t.Errorf("run %d: %q, want it to end with %q", i, l, want)
		}
	}
	if len(s.Profiles) != 2 || s.Profiles[0].Name != "one" || s.Profiles[0].Unknown != 2 || s.Profiles[1].Unknown != 2 {
		t.Errorf("profiles %+v; want one and two, 2 unknown runs each", s.Profiles)
	}
	other := cfg
	other.Profiles = []Profile{{"one", nil}, {"three", nil}}
	if _, err := Run(context.Background(), other); !errors.Is(err, ErrOtherSoak) {
		t.Errorf("a campaign with other profiles in the same directory: %v, want ErrOtherSoak", err)
	}
	few := cfg
	few.Out, few.Runs = t.TempDir(), 1
	if _, err := Run(context.Background(), few); !errors.Is(err, ErrBadConfig) {
		t.Errorf("2 profiles, 1 run: %v, want ErrBadConfig", err)
	}
}

// The profiles table counts each profile's verdicts and the checks that failed.
func TestProfilesTable(t *testing.T) {
	rec := func(i int, p string, v checker.Verdict, failed ...string) Record {
		r := unknownRun(i, int64(i+1))
		r.Profile, r.Verdict, r.FailedChecks = p, v, failed
		r.Events, r.Lost, r.Duplicated = 100, 0, 0
		return r
	}
	s := Summarize([]Record{
		rec(0, "a", checker.Valid), rec(1, "a", checker.Invalid, "lease-exclusion", "linearizability"),
		rec(2, "b", checker.Invalid, "linearizability"), rec(3, "b", checker.Unknown),
	}, []int{0, 1, 2, 3})
	if len(s.Profiles) != 2 {
		t.Fatalf("profiles %+v", s.Profiles)
	}
	a, b := s.Profiles[0], s.Profiles[1]
	if a.Valid != 1 || a.Invalid != 1 || a.FailedChecks["lease-exclusion"] != 1 || b.Invalid != 1 || b.Unknown != 1 || a.Events != 200 {
		t.Errorf("profiles %+v", s.Profiles)
	}
	var md bytes.Buffer
	s.Markdown(&md)
	squeezed := strings.Join(strings.Fields(md.String()), " ")
	for _, want := range []string{"## Profiles", "| a | 2 | 1 / 1 / 0 | lease-exclusion 1, linearizability 1 |", "| b | 2 | 0 / 1 / 1 | linearizability 1 |"} {
		if !strings.Contains(squeezed, want) {
			t.Errorf("soak.md lacks %q:\n%s", want, md.String())
		}
	}
	var ju bytes.Buffer
	if err := s.JUnit(&ju); err != nil || !strings.Contains(ju.String(), `classname="fenceline.soak.b"`) {
		t.Errorf("junit (%v):\n%s", err, ju.String())
	}
}
