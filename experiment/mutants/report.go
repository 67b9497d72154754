//go:build chaos

package mutants

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/experiment/matrix"
	"github.com/fenceline/fenceline/internal/exitcode"
)

// line sums a mutant up for the progress log.
func (r Record) line() string {
	s := fmt.Sprintf("%q -> %q: unit tests %s, harness %s", r.Old, r.New, r.Tests, r.Harness)
	if r.Harness == Killed {
		s += fmt.Sprintf(" (%s at %s, seed %d)", r.Check, at(r.At), r.Seed)
	}
	if r.Detail != "" {
		s += "; " + r.Detail
	}
	return s
}

func at(d time.Duration) string {
	if d < 0 {
		return "untimed"
	}
	return d.Round(100 * time.Millisecond).String()
}

// tally counts the records.
type tally struct {
	run, notViable, undecided, notRun              int
	testsKilled, harnessKilled, both, eitherKilled int
	equivalent, unexplained, contradicted          int
	times                                          []time.Duration
}

func count(recs []Record) tally {
	var t tally
	for _, r := range recs {
		t.run++
		switch {
		case r.Harness == NotViable:
			t.notViable++
			continue
		case r.Harness == NotReached || r.Tests == NotReached:
			t.notRun++
			continue
		case r.Harness == Undecided || r.Tests == Undecided:
			// Out of every score: its other stage's answer alone would count it in one
			// numerator but in no denominator.
			t.undecided++
			continue
		}
		if r.Harness == Survived && r.Equivalent != "" {
			// Argued equivalent: out of every score, and of the kill counts that are
			// their numerators (the unit tests may kill one that is only unreachable).
			t.equivalent++
			continue
		}
		tk, hk := r.Tests == Killed, r.Harness == Killed
		if r.Contradicted != "" {
			t.contradicted++
		}
		if tk {
			t.testsKilled++
		}
		if hk {
			t.harnessKilled++
			if r.At >= 0 {
				t.times = append(t.times, r.At)
			}
		}
		if tk && hk {
			t.both++
		}
		if tk || hk {
			t.eitherKilled++
		}
		if r.Harness == Survived {
			t.unexplained++
		}
	}
	return t
}

// decided is the number of viable mutants whose both stages gave an answer.
func (t tally) decided() int { return t.run - t.notViable - t.notRun - t.undecided }

// nonEquivalent is the denominator of the scores: decided mutants not argued equivalent.
func (t tally) nonEquivalent() int { return t.decided() - t.equivalent }

func pct(n, d int) string {
	if d == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f %%", 100*float64(n)/float64(d))
}

// report renders a mutation run.
type report struct {
	cfg     Config
	total   int // mutants generated
	recs    []Record
	control Record // the unmutated code through both stages
	resumed int    // records taken from an earlier run's progress file
	began   time.Time
	elapsed time.Duration
	mutated string // the commit of the mutated code (repoCommit)
	code    string // its module's SHA-256 (codeDigest)
	judge   string // the commit of this binary, whose harness and checker judge
}

// codeText says which code was mutated and which judged it: a run with --repo, or one
// whose binary was built before a commit, mutates code that is not its own.
func (rep report) codeText() string {
	s := rep.mutated
	if rep.code != "" {
		s += fmt.Sprintf(" (module SHA-256 %.12s)", rep.code)
	}
	if rep.judge != rep.mutated {
		s += ", judged by the harness and checker of " + rep.judge
	}
	return s
}

func (rep report) exitCode() int {
	t := count(rep.recs)
	switch {
	case !rep.controlPassed() || t.contradicted > 0:
		// A kill may be a false alarm: the scores say nothing.
		return exitcode.Unknown
	case t.unexplained > 0:
		return exitcode.Invalid
	case t.undecided > 0 || t.notRun > 0:
		return exitcode.Unknown
	}
	return exitcode.OK
}

// controlPassed reports whether the unmutated code passed its unit tests and survived
// the harness.
func (rep report) controlPassed() bool {
	return rep.control.Tests == Survived && rep.control.Harness == Survived
}

// controlText says how the control fared.
func (rep report) controlText() string {
	c := rep.control
	if rep.controlPassed() {
		return fmt.Sprintf("control (the unmutated code, beside the first mutants): unit tests passed, harness valid on seed %d, on seed %d with %s, and on seed %d with %s",
			rep.cfg.Seed, rep.cfg.Seed+1, TakeoverSecond, rep.cfg.Seed+2, RegisterThird)
	}
	s := fmt.Sprintf("control (the unmutated code) FAILED: unit tests %s, harness %s", c.Tests, c.Harness)
	if c.Harness == Killed {
		s += fmt.Sprintf(" (%s at %s, seed %d)", c.Check, at(c.At), c.Seed)
	}
	if c.Detail != "" {
		s += "; " + c.Detail
	}
	return s + ": any kill of this run may be a false alarm (at this load?), so no score stands"
}

// slotTime is the sum of the mutants' own wall times.
func (rep report) slotTime() time.Duration {
	var d time.Duration
	for _, r := range rep.recs {
		d += r.Took
	}
	return d
}

// summaryText is what the command prints.
func (rep report) summaryText() string {
	t := count(rep.recs)
	median := "—"
	if len(t.times) > 0 {
		median = checker.Summarize(t.times).P50.Round(100 * time.Millisecond).String()
	}
	return fmt.Sprintf("mutants: %d generated, %d run; %d not viable, %d undecided, %d not run\n"+
		"killed by the harness: %d of %d non-equivalent (%s), median time to the first violation %s\n"+
		"killed by the unit tests: %d (%s); by both %d; by either %d\n"+
		"survived: %d argued equivalent, %d unexplained\n%s%s\n",
		rep.total, t.run, t.notViable, t.undecided, t.notRun,
		t.harnessKilled, t.nonEquivalent(), pct(t.harnessKilled, t.nonEquivalent()), median,
		t.testsKilled, pct(t.testsKilled, t.nonEquivalent()), t.both, t.eitherKilled,
		t.equivalent, t.unexplained, contradictedText(t.contradicted), rep.controlText())
}

// contradictedText says how many argued mutants the harness killed, a line, or "".
func contradictedText(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("argued equivalent in equivalent.txt, yet killed by the harness: %d (a false alarm of a check, or a wrong argument: look into each)\n", n)
}

// markdown is the report file.
func (rep report) markdown() string {
	var b strings.Builder
	c := rep.cfg
	t := count(rep.recs)
	fmt.Fprintf(&b, "# Mutation score\n\n")
	scope := "every mutant"
	switch {
	case c.Sample > 0:
		scope = fmt.Sprintf("a sample of %d of the %d mutants, spread evenly", c.Sample, rep.total)
	case len(c.Only) > 0:
		scope = fmt.Sprintf("the %d of the %d mutants named by --only", len(rep.recs), rep.total)
	}
	fmt.Fprintf(&b, "`%s` on %s: %s; each through its package's unit tests and one chaos run of %s (every fault, "+
		"random schedule, 3 nodes, lease TTL 2 s: `make chaos`), seed %d, and seed %d with %s when the first survives; "+
		"a survivor of the listener's code then seed %d with %s. "+
		"Started %s, %s of wall time.\n\n",
		c.Command, rep.codeText(), scope, c.Duration, c.Seed, c.Seed+1, TakeoverSecond, c.Seed+2, RegisterThird,
		rep.began.UTC().Format("2006-01-02 15:04 UTC"), rep.elapsed.Round(time.Second))
	if rep.resumed > 0 {
		fmt.Fprintf(&b, "Resumed: %d mutants were decided by an earlier run of the same code (%s), "+
			"and their wall time is not in the figure above; the mutants' own times (build and both stages, "+
			"%d at once) add up to %s.\n\n", rep.resumed, progressFile, c.Parallel, rep.slotTime().Round(time.Second))
	}
	fmt.Fprintf(&b, "The %s.\n\n", rep.controlText())
	median := "—"
	if len(t.times) > 0 {
		median = checker.Summarize(t.times).P50.Round(100 * time.Millisecond).String()
	}
	sum := matrix.Table{
		Header: []string{"mutants", "not viable", "undecided", "killed by the unit tests", "killed by the harness",
			"equivalent", "surviving", "harness score", "unit-test score", "median time to first violation"},
		Right: []bool{true, true, true, true, true, true, true, true, true, true},
	}
	sum.Add(fmt.Sprint(t.run), fmt.Sprint(t.notViable), fmt.Sprint(t.undecided+t.notRun), fmt.Sprint(t.testsKilled),
		fmt.Sprint(t.harnessKilled), fmt.Sprint(t.equivalent), fmt.Sprint(t.unexplained),
		pct(t.harnessKilled, t.nonEquivalent()), pct(t.testsKilled, t.nonEquivalent()), median)
	sum.Markdown(&b)
	b.WriteString("\nScores are of the non-equivalent mutants decided (run, compiled, both stages answered); " +
		"the harness score counts the mutants the unit tests also kill.\n")

	b.WriteString("\n## Mutants\n\n")
	tb := matrix.Table{Header: []string{"mutant", "change", "unit tests", "harness", "note"}}
	for _, r := range rep.recs {
		h := r.Harness
		if h == Killed {
			h = fmt.Sprintf("killed: %s at %s (seed %d)", r.Check, at(r.At), r.Seed)
		}
		note := r.Detail
		switch {
		case r.Equivalent != "":
			note = "equivalent: " + r.Equivalent
		case r.Contradicted != "":
			note = "ARGUED EQUIVALENT, YET KILLED (a false alarm, or a wrong argument): " + r.Contradicted
		}
		// Table.Markdown escapes every cell itself.
		tb.Add(r.ID, fmt.Sprintf("%s → %s", r.Old, r.New), r.Tests, h, matrix.OrDash(note))
	}
	tb.Markdown(&b)
	return b.String()
}

// ReadEquivalent reads equivalent.txt: one mutant per line, "ID: why no history can tell
// it from the original"; blank lines and lines starting with # are skipped.
func ReadEquivalent(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		id, why, ok := strings.Cut(line, ": ")
		if !ok || strings.TrimSpace(why) == "" {
			return nil, fmt.Errorf("line %d: want \"ID: why it is equivalent\", got %q", n, line)
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("line %d: %s named twice", n, id)
		}
		out[id] = strings.TrimSpace(why)
	}
	return out, sc.Err()
}

// ReadEquivalentFile is ReadEquivalent of a file; a missing file is an empty list.
func ReadEquivalentFile(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m, err := ReadEquivalent(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
