package reports

import (
	"io"
	"strconv"
	"time"
)

// MatrixCase is one run of a multi-run experiment (validate, targets, topologies) as a
// JUnit test case. What counts as a failure is the experiment's: a broken variant that
// the harness caught passes validate, and an unfenced library's invalid run is a
// finding of targets, not a failure.
type MatrixCase struct {
	Name    string        // unique in the suite: "<row> (seed N)"
	Class   string        // "fenceline.<experiment>.<row>"
	Time    time.Duration // the run's length
	Failure string        // why the run fails the experiment; "" if it does not
	Error   string        // why it could not be judged (unknown, incomplete)
	Skipped string        // why it did not run
	Out     string        // system-out: the run's outcome in a line, and its directory
}

// MatrixJUnit writes one junit.xml for a whole experiment: one test suite named suite,
// one case per run, in order; the suite's time is elapsed, the experiment's length;
// props (name, value) are the suite's properties, after "runs". It is valid against the
// same schema as a run's junit.xml (testdata/junit.xsd).
func MatrixJUnit(w io.Writer, suite string, elapsed time.Duration, props [][2]string, cases []MatrixCase) error {
	s := junitSuite{Name: suite, Time: secs(elapsed), ID: "0", Package: "fenceline",
		Properties: []junitProperty{{"runs", strconv.Itoa(len(cases))}}}
	for _, p := range props {
		s.Properties = append(s.Properties, junitProperty{p[0], p[1]})
	}
	for _, c := range cases {
		tc := junitCase{Name: c.Name, Classname: c.Class, Time: secs(c.Time), SystemOut: c.Out}
		switch {
		case c.Skipped != "":
			tc.Skipped = &junitSkipped{Text: c.Skipped}
			s.Skipped++
		case c.Error != "":
			tc.Error = &junitProblem{Type: "unknown", Message: c.Error, Text: c.Error + "\n"}
			s.Errors++
		case c.Failure != "":
			tc.Failure = &junitProblem{Type: "invalid", Message: c.Failure, Text: c.Failure + "\n"}
			s.Failures++
		}
		s.Cases = append(s.Cases, tc)
	}
	s.Tests = len(s.Cases)
	return writeJUnit(w, s)
}
