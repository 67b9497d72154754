package cli

import (
	"bytes"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/internal/exitcode"
)

func testProgram(run func([]string, io.Writer, io.Writer) int) Program {
	return Program{Name: "prog", Summary: "a test", Version: "version", Absent: "not in this build", Commands: []Command{
		{Name: "one", Args: "DIR", Summary: "takes one", Present: true, Run: run},
		{Name: "many", Args: "DIR...", Summary: "takes many", Present: true, Run: run},
		{Name: "none", Summary: "takes none", Present: true, Run: run},
		{Name: "version", Summary: "version", Present: true, Run: run},
		{Name: "gone", Summary: "elsewhere", Run: run},
	}}
}

// Flags may come before, between and after the arguments; a command takes as many
// arguments as its Args say; every usage error is one line with exit 2.
func TestParse(t *testing.T) {
	p := testProgram(func([]string, io.Writer, io.Writer) int { return 0 })
	for _, tc := range []struct {
		cmd     string
		args    []string
		rest    []string
		code    int
		message string
	}{
		{"one", []string{"-v", "d", "-x", "3"}, []string{"d"}, 0, ""},
		{"one", []string{"d", "e"}, nil, exitcode.Usage, "prog one: want DIR, got 2 arguments"},
		{"one", nil, nil, exitcode.Usage, "want DIR, got 0 arguments"},
		{"many", []string{"a", "-v", "b", "c"}, []string{"a", "b", "c"}, 0, ""},
		{"none", []string{"a"}, nil, exitcode.Usage, `prog none: unexpected argument "a"`},
		{"none", []string{"-x", "nan"}, nil, exitcode.Usage, `invalid value "nan" for flag -x`},
		{"none", []string{"-nope"}, nil, exitcode.Usage, "flag provided but not defined: -nope"},
		{"none", []string{"-hidden"}, nil, exitcode.Usage, "prog none: --hidden is elsewhere"},
		{"none", []string{"-hidden=false", "-quiet", "off"}, nil, 0, ""},
		{"none", []string{"-quiet", "on"}, nil, exitcode.Usage, "prog none: --quiet is elsewhere"},
	} {
		fs := flag.NewFlagSet(tc.cmd, flag.ContinueOnError)
		fs.Bool("v", false, "verbose")
		fs.Int("x", 0, "a number")
		Hide(fs, "hidden", "false", "is elsewhere")
		Hide(fs, "quiet", "off", "is elsewhere")
		var stderr bytes.Buffer
		rest, code, ok := p.Parse(fs, tc.args, &stderr)
		if code != tc.code || ok != (tc.message == "") || !slices.Equal(rest, tc.rest) ||
			!strings.Contains(stderr.String(), tc.message) || strings.Count(stderr.String(), "\n") > 1 {
			t.Errorf("%s %q: rest %q, code %d, ok %v, stderr %q; want %q, %d, %q", tc.cmd, tc.args, rest, code, ok, stderr.String(), tc.rest, tc.code, tc.message)
		}
	}
}

// -h prints the one format and hides the hidden flags; the program's -h lists only the
// commands it has; an absent command is one line with exit 2.
func TestUsage(t *testing.T) {
	p := testProgram(func(args []string, stdout, _ io.Writer) int {
		io.WriteString(stdout, "ran "+strings.Join(args, " "))
		return 0
	})
	fs := flag.NewFlagSet("one", flag.ContinueOnError)
	fs.Bool("v", false, "verbose")
	Hide(fs, "hidden", "false", "is elsewhere")
	var stderr bytes.Buffer
	if _, code, ok := p.Parse(fs, []string{"-h"}, &stderr); code != 0 || ok {
		t.Fatalf("-h: code %d, ok %v", code, ok)
	}
	want := "prog one: takes one\n\nUsage: prog one [flags] DIR\n\nFlags:\n  -v\tverbose\n\n" + ExitCodes + "\n"
	if stderr.String() != want {
		t.Errorf("-h:\n%s\nwant:\n%s", stderr.String(), want)
	}
	var out, errb bytes.Buffer
	if code := p.Run([]string{"-h"}, &out, &errb); code != 0 || strings.Contains(errb.String(), "gone") || !strings.Contains(errb.String(), "  many ") {
		t.Errorf("prog -h: code %d:\n%s", code, errb.String())
	}
	errb.Reset()
	if code := p.Run([]string{"gone"}, &out, &errb); code != exitcode.Usage || errb.String() != "prog gone: not in this build\n" {
		t.Errorf("prog gone: code %d, %q", code, errb.String())
	}
	out.Reset()
	if code := p.Run([]string{"--version"}, &out, &errb); code != 0 || out.String() != "ran " {
		t.Errorf("prog --version: code %d, %q", code, out.String())
	}
	if code := p.Run(nil, &out, &errb); code != exitcode.Usage {
		t.Errorf("prog: code %d, want 2", code)
	}
}
