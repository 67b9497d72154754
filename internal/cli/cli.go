// Package cli is the dispatch, the one usage format and the flag parsing of every
// fenceline command: each command's -h prints its summary, its synopsis, its flags and
// the exit codes, and every usage error is one line on stderr with exit code 2. It also
// hides the flags a build does not have (Hide), so that -h shows only what the binary
// accepts.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/fenceline/fenceline/internal/exitcode"
)

// ExitCodes is the last line of every -h.
const ExitCodes = "Exit codes: 0 valid or success, 1 invalid, 2 usage or bad input, 3 unknown or incomplete (never a pass)."

// Program is a binary's commands.
type Program struct {
	Name     string // the binary ("fenceline"), the first word of every message
	Summary  string // one line, for Name -h
	Commands []Command
	// Version is the command --version runs.
	Version string
	// Absent is what the program answers, in one line with exit 2, to a command that is
	// not Present in this build.
	Absent string
}

// Command is one subcommand.
type Command struct {
	Name string
	// Args is the synopsis of its arguments after [flags]: "" for none, "RUN_DIR" for
	// exactly one, "DIR..." for one or more.
	Args    string
	Summary string // one line
	// Present is whether this build has the command (see Program.Absent).
	Present bool
	Run     func(args []string, stdout, stderr io.Writer) int
}

// Run runs the command args[0] names with the rest of args, and returns its exit code;
// it blocks until the command returns. With no command it prints the usage (exit 2), as
// with -h (exit 0); --version runs the Version command.
func (p Program) Run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		p.usage(stderr)
		if len(args) == 0 {
			return exitcode.Usage
		}
		return exitcode.OK
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{p.Version}, args[1:]...)
	}
	for _, c := range p.Commands {
		switch {
		case c.Name != args[0]:
		case !c.Present:
			fmt.Fprintf(stderr, "%s %s: %s\n", p.Name, c.Name, p.Absent)
			return exitcode.Usage
		default:
			return c.Run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "%s: unknown command %q (%s -h lists them)\n", p.Name, args[0], p.Name)
	return exitcode.Usage
}

// usage is the program's -h: the commands of this build.
func (p Program) usage(w io.Writer) {
	fmt.Fprintf(w, "%s: %s\n\nUsage: %s <command> [flags] [args]\n\nCommands:\n", p.Name, p.Summary, p.Name)
	for _, c := range p.Commands {
		if c.Present {
			fmt.Fprintf(w, "  %-12s %s\n", c.Name, c.Summary)
		}
	}
	fmt.Fprintf(w, "\nRun '%s <command> -h' for a command's flags.\n%s\n", p.Name, ExitCodes)
}

// Parse parses the flags of the command named fs.Name() from args: flags may come
// before, between and after its arguments, which it returns, as many as its Args
// say. It returns ok false when the command must stop, with its exit code: -h (0, the
// usage on stderr) or a usage error (2, one line on stderr).
func (p Program) Parse(fs *flag.FlagSet, args []string, stderr io.Writer) (rest []string, code int, ok bool) {
	c := Command{Name: fs.Name()}
	for _, cmd := range p.Commands {
		if cmd.Name == c.Name {
			c = cmd
		}
	}
	rest, code, ok = p.parse(c, fs, args, stderr)
	want := strings.Fields(c.Args)
	if ok && c.Args != "" && (len(rest) < len(want) || (len(rest) > len(want) && !strings.HasSuffix(c.Args, "..."))) {
		fmt.Fprintf(stderr, "%s %s: want %s, got %d arguments ('%s %s -h' says more)\n", p.Name, c.Name, c.Args, len(rest), p.Name, c.Name)
		return nil, exitcode.Usage, false
	}
	return rest, code, ok
}

func (p Program) parse(c Command, fs *flag.FlagSet, args []string, stderr io.Writer) (rest []string, code int, ok bool) {
	fs.SetOutput(io.Discard) // the flag package's messages are replaced by ours, below
	fs.Usage = func() {}
	for {
		err := fs.Parse(args)
		switch {
		case errors.Is(err, flag.ErrHelp):
			p.PrintUsage(stderr, c, fs)
			return nil, exitcode.OK, false
		case err != nil:
			if name, hint := refused(fs); name != "" {
				fmt.Fprintf(stderr, "%s %s: --%s %s\n", p.Name, c.Name, name, hint)
			} else {
				fmt.Fprintf(stderr, "%s %s: %v ('%s %s -h' lists the flags)\n", p.Name, c.Name, err, p.Name, c.Name)
			}
			return nil, exitcode.Usage, false
		case fs.NArg() == 0:
			return rest, 0, true
		case c.Args == "":
			fmt.Fprintf(stderr, "%s %s: unexpected argument %q\n", p.Name, c.Name, fs.Arg(0))
			return nil, exitcode.Usage, false
		}
		rest, args = append(rest, fs.Arg(0)), fs.Args()[1:]
	}
}

// PrintUsage is a command's -h: its summary, its synopsis, the flags fs shows (not the
// hidden ones) and the exit codes.
func (p Program) PrintUsage(w io.Writer, c Command, fs *flag.FlagSet) {
	synopsis := strings.TrimSpace(p.Name + " " + c.Name + " [flags] " + c.Args)
	fmt.Fprintf(w, "%s %s: %s\n\nUsage: %s\n\nFlags:\n", p.Name, c.Name, c.Summary, synopsis)
	shown := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		if _, hidden := f.Value.(*hiddenFlag); !hidden {
			shown.Var(f.Value, f.Name, f.Usage)
			shown.Lookup(f.Name).DefValue = f.DefValue
			n++
		}
	})
	if n == 0 {
		fmt.Fprintln(w, "  none")
	}
	shown.SetOutput(w)
	shown.PrintDefaults()
	fmt.Fprintf(w, "\n%s\n", ExitCodes)
}

// Hide defines on fs a flag this build does not have: -h does not list it, and any
// value but accept makes Parse fail with "--NAME " + hint, in one line. A flag whose
// accept is "false" is a boolean one.
func Hide(fs *flag.FlagSet, name, accept, hint string) {
	fs.Var(&hiddenFlag{accept: accept, hint: hint}, name, "")
}

// hiddenFlag is a flag of Hide.
type hiddenFlag struct {
	accept, hint string
	refused      bool
}

func (f *hiddenFlag) String() string   { return "" }
func (f *hiddenFlag) IsBoolFlag() bool { return f.accept == "false" }

func (f *hiddenFlag) Set(v string) error {
	if v == f.accept {
		return nil
	}
	f.refused = true
	return errors.New(f.hint)
}

// refused returns the name and hint of the hidden flag whose value fs refused, if any.
func refused(fs *flag.FlagSet) (name, hint string) {
	fs.VisitAll(func(f *flag.Flag) {
		if h, ok := f.Value.(*hiddenFlag); ok && h.refused {
			name, hint = f.Name, h.hint
		}
	})
	return name, hint
}
