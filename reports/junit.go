package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

// JUnit writes junit.xml of a run to w: one testsuite with one testcase per check. An
// invalid check is a <failure>; an unknown one an <error> (never <skipped>, which CI
// systems show as harmless): a check that could not decide is not a pass. Only a check
// that does not apply to the run (checker.NotApplicable) is <skipped>.
func JUnit(w io.Writer, run *history.Run, res *checker.Result) error {
	v, err := newView(run, res)
	if err != nil {
		return err
	}
	return v.junit(w)
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	ID         string          `xml:"id,attr"`
	Package    string          `xml:"package,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Skipped   *junitSkipped `xml:"skipped"`
	Error     *junitProblem `xml:"error"`
	Failure   *junitProblem `xml:"failure"`
	SystemOut string        `xml:"system-out"`
}

// junitSkipped is a check that does not apply; the schema gives <skipped> text only.
type junitSkipped struct {
	Text string `xml:",chardata"`
}

type junitProblem struct {
	Type    string `xml:"type,attr"`
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func (v *view) junit(w io.Writer) error {
	in := v.run.Info
	class := "fenceline." + orDefault(in.Workload, "run") + "." + orDefault(in.Variant, "reference")
	secs := strconv.FormatFloat(v.res.Duration.Seconds(), 'f', 3, 64)
	s := junitSuite{Name: class, Time: secs, ID: "0", Package: "fenceline"}
	if in.Start > 0 {
		s.Timestamp = time.Unix(0, in.Start).UTC().Format("2006-01-02T15:04:05")
	}
	prop := func(k, val string) { s.Properties = append(s.Properties, junitProperty{k, val}) }
	prop("verdict", string(v.verdict()))
	prop("seed", strconv.FormatInt(in.Seed, 10))
	prop("workload", in.Workload)
	prop("variant", orDefault(in.Variant, "reference"))
	prop("backend", in.Backend)
	prop("nodes", strings.Join(v.nodes, ","))
	prop("lease_ttl", in.LeaseTTL.String())
	prop("duration", in.Duration.String())
	prop("nemeses", strings.Join(in.Nemeses, ","))
	prop("leader_changes", strconv.Itoa(v.res.LeaderChanges))
	prop("fencing_rejections", strconv.Itoa(v.res.FencingRejections))
	for _, k := range sortedKeys(in.Versions) {
		prop("version."+k, in.Versions[k])
	}
	for _, c := range v.res.Checks {
		tc := junitCase{Name: c.Name, Classname: class, SystemOut: c.Message}
		if c.Verdict == checker.NotApplicable {
			// The check does not apply to this run (no fence to check): skipped, with why.
			tc.Skipped = &junitSkipped{Text: c.Message}
			s.Skipped++
		} else if c.Verdict != checker.Valid {
			var text strings.Builder
			text.WriteString(c.Message + "\n")
			for _, o := range shownOffending(c.Offending) {
				text.WriteString("  " + o + "\n")
			}
			if c.Visualization != "" {
				fmt.Fprintf(&text, "visualization: %s\n", c.Visualization)
			}
			p := &junitProblem{Type: string(c.Verdict), Message: c.Message, Text: text.String()}
			if c.Verdict == checker.Invalid {
				tc.Failure = p
				s.Failures++
			} else {
				p.Type = string(checker.Unknown) // whatever it said, it is not a pass
				tc.Error = p
				s.Errors++
			}
		}
		s.Cases = append(s.Cases, tc)
	}
	// A run without checks, or an interrupted one, must not look green either.
	if v.verdict() != checker.Valid && s.Failures+s.Errors == 0 {
		msg := v.headline()
		s.Cases = append(s.Cases, junitCase{Name: "run", Classname: class,
			Error: &junitProblem{Type: string(checker.Unknown), Message: msg, Text: msg + "\n"}})
		s.Errors++
	}
	s.Tests = len(s.Cases)
	s.SystemOut = v.headline() + "\n" + v.oneLine() + "\nReport: " + HTMLFile + ", " + MarkdownFile + ", " + ResultsFile + "\n"
	doc := junitSuites{Name: "fenceline", Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: secs, Suites: []junitSuite{s}}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
