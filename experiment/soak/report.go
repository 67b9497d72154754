//go:build chaos

package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/fenceline/fenceline/internal/exitcode"
	"github.com/fenceline/fenceline/node"
)

// Report is `fenceline soak-report`: it merges the soak directories, shard summaries
// or run directories in dirs into one summary, writes it to out (default: the first
// of dirs, or its directory when it is a summary file) and returns it with the
// directory it went to. An error without a summary is bad input; a summary it cannot
// write returns the summary with the error.
func Report(dirs []string, out string) (*Summary, string, error) {
	if len(dirs) == 0 {
		return nil, "", errors.New("no directory to merge: want DIR...")
	}
	var sets [][]Record
	for _, d := range dirs {
		rs, err := LoadDir(d)
		if err != nil {
			return nil, "", err
		}
		if len(dirs) > 1 {
			// Say which input each run came from.
			for i := range rs {
				if rs[i].Index >= 0 && !filepath.IsAbs(rs[i].Dir) {
					rs[i].Dir = filepath.ToSlash(filepath.Join(summaryDir(d), rs[i].Dir))
				}
			}
		}
		sets = append(sets, rs)
	}
	merged, err := Merge(sets...)
	if err != nil {
		return nil, "", err
	}
	sum := Summarize(merged, ExpectedOf(merged))
	if out == "" {
		out = summaryDir(dirs[0])
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, "", err
	}
	return sum, out, sum.WriteFiles(out, SummaryName)
}

// summaryDir is d, or its directory when d is a summary file.
func summaryDir(d string) string {
	if st, err := os.Stat(d); err == nil && !st.IsDir() {
		return filepath.Dir(d)
	}
	return d
}

// CheckBinary reports whether bin has the chaos command each run executes: a binary
// without the harness (a default build) would fail every run.
func CheckBinary(bin string) error {
	if err := exec.Command(bin, "chaos", "-h").Run(); err != nil {
		return fmt.Errorf("--binary %s has no chaos command (%v): %s", bin, err, node.ChaosBuildHint)
	}
	return nil
}

// Prepare checks cfg as `fenceline soak` gives it, where a zero is no setting rather
// than a default, and fills in the binary (default: this executable), which must have
// the chaos command. Its errors are usage errors.
func (c *Config) Prepare() error {
	if c.Runs < 1 || c.Duration <= 0 || c.Seed0 < 1 {
		return errors.New("need --seeds >= 1, --duration > 0 and --seed >= 1")
	}
	var err error
	if c.Binary == "" {
		c.Binary, err = os.Executable()
	}
	if err == nil {
		err = CheckBinary(c.Binary)
	}
	return err
}

// RunAndPrint is `fenceline soak` once its flags are parsed: Prepare, Run, and the
// summary's table on stdout. It returns the exit code: 1 if any run is invalid, else 3
// if any is unknown or missing (also when ctx was cancelled), 0 only when every run is
// there and valid; 2 for bad settings. It blocks until Run returns.
func RunAndPrint(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	if err := cfg.Prepare(); err != nil {
		fmt.Fprintf(stderr, "fenceline soak: %v\n", err)
		return exitcode.Usage
	}
	sum, err := Run(ctx, cfg)
	switch {
	case sum == nil:
		fmt.Fprintf(stderr, "fenceline soak: %v\n", err)
		return exitcode.Usage
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(stderr, "fenceline soak: interrupted; the same command resumes it (finished runs are kept)")
	case err != nil:
		fmt.Fprintf(stderr, "fenceline soak: %v\n", err)
	}
	return sum.print(stdout, filepath.Join(cfg.Out, cfg.SummaryName()+".md"))
}

// ReportAndPrint is `fenceline soak-report`: Report, and the merged table on stdout. It
// returns the exit code of RunAndPrint's rule; 2 for bad input.
func ReportAndPrint(dirs []string, out string, stdout, stderr io.Writer) int {
	sum, dst, err := Report(dirs, out)
	if err != nil {
		fmt.Fprintf(stderr, "fenceline soak-report: %v\n", err)
	}
	switch {
	case sum == nil:
		return exitcode.Usage
	case err != nil:
		return exitcode.Unknown
	}
	return sum.print(stdout, filepath.Join(dst, SummaryName+".md"))
}

// print prints the summary's table and the file it is in, and returns its exit code.
func (s *Summary) print(w io.Writer, file string) int {
	s.Terminal(w)
	fmt.Fprintf(w, "summary: %s\n", file)
	return s.Verdict.ExitCode()
}
