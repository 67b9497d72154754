package reports

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

// JUnit writes junit.xml of a run to w: one testsuite with one testcase per check,
// named "<check> (seed N)" in the class fenceline.<target>.<topology>.<store>, so
// that the cases of different runs merged by CI stay apart. The suite's time is the
// run's length; its properties hold how the run was made, the failover p50, p99 and
// n of each fault kind, and whether Redis lost acknowledged writes. An
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
	Time      string        `xml:"time,attr,omitempty"`
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

// junitClass is the classname of a run's test cases: fenceline.<target>.<topology>.<store>,
// the target being the design under test (the variant of the reference, or the
// target's name), so that the cases of runs of different designs never share a name.
func (v *view) junitClass() string {
	in := v.run.Info
	target := cmp.Or(in.Target, cmp.Or(in.Variant, "reference"))
	if in.Target != "" && in.Variant != "" && in.Variant != "reference" {
		target += "-" + in.Variant
	}
	topology := "single"
	if in.Redis != nil && in.Redis.Topology != "" {
		topology = in.Redis.Topology
	}
	part := strings.NewReplacer(".", "_", " ", "_").Replace
	return "fenceline." + part(target) + "." + part(topology) + "." + part(cmp.Or(in.Store, "redis"))
}

// runLength is how long the run took by its own record (run.json's start to end), or,
// for a run that never recorded its end, the span of what it recorded.
func (v *view) runLength() time.Duration {
	if in := v.run.Info; in.Start > 0 && in.End > in.Start {
		return time.Duration(in.End - in.Start)
	}
	return time.Duration(v.end - v.start)
}

// secs renders d in seconds for JUnit.
func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

func (v *view) junit(w io.Writer) error {
	in := v.run.Info
	class := v.junitClass()
	seed := fmt.Sprintf(" (seed %d)", in.Seed)
	// The suite's time is the run's, which a CI system charts; the checker's is a property.
	length := secs(v.runLength())
	s := junitSuite{Name: class + seed, Time: length, ID: "0", Package: "fenceline"}
	if in.Start > 0 {
		s.Timestamp = time.Unix(0, in.Start).UTC().Format("2006-01-02T15:04:05")
	}
	prop := func(k, val string) { s.Properties = append(s.Properties, junitProperty{k, val}) }
	prop("verdict", string(v.verdict()))
	prop("seed", strconv.FormatInt(in.Seed, 10))
	prop("workload", in.Workload)
	prop("variant", orDefault(in.Variant, "reference"))
	if in.Target != "" {
		prop("target", in.Target)
	}
	prop("backend", in.Backend)
	prop("nodes", strings.Join(v.nodes, ","))
	prop("lease_ttl", in.LeaseTTL.String())
	prop("duration", in.Duration.String())
	prop("nemeses", strings.Join(in.Nemeses, ","))
	if in.StartToken != 0 || in.StartCursor != 0 {
		prop("start_token", strconv.FormatInt(in.StartToken, 10))
		prop("start_cursor", strconv.FormatInt(in.StartCursor, 10))
	}
	prop("leader_changes", strconv.Itoa(v.res.LeaderChanges))
	prop("fencing_rejections", strconv.Itoa(v.res.FencingRejections))
	prop("check_time", secs(v.res.Duration))
	// Failover per fault kind: p50 and p99 of the time to a new token, with n.
	for _, f := range v.res.Failover {
		k, d := "failover."+f.Fault, f.ToNewToken
		prop(k+".n", strconv.Itoa(d.Count))
		if d.Count == 0 {
			continue
		}
		prop(k+".p50_ns", strconv.FormatInt(int64(d.P50), 10))
		prop(k+".p99_ns", strconv.FormatInt(int64(d.P99), 10))
		prop(k+".p50", pctCell(d.P50, 0.50, d.Count))
		prop(k+".p99", pctCell(d.P99, 0.99, d.Count))
	}
	loss := v.redisLoss()
	prop("redis_lost_acknowledged_writes", strconv.FormatBool(loss.Lost))
	if loss.Lost {
		prop("redis_lost_acknowledged_writes.evidence", loss.Evidence)
		if loss.Commits > 0 {
			prop("redis_lost_acknowledged_writes.commits", strconv.Itoa(loss.Commits))
		}
	}
	for _, k := range sortedKeys(in.Versions) {
		prop("version."+k, in.Versions[k])
	}
	for _, c := range v.res.Checks {
		tc := junitCase{Name: c.Name + seed, Classname: class, SystemOut: c.Message}
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
		s.Cases = append(s.Cases, junitCase{Name: "run" + seed, Classname: class,
			Error: &junitProblem{Type: string(checker.Unknown), Message: msg, Text: msg + "\n"}})
		s.Errors++
	}
	s.Tests = len(s.Cases)
	s.SystemOut = v.headline() + "\n" + v.oneLine() + "\nReport: " + HTMLFile + ", " + MarkdownFile + ", " + ResultsFile + "\n"
	return writeJUnit(w, s)
}

// writeJUnit writes suite as the one test suite of a junit.xml document.
func writeJUnit(w io.Writer, s junitSuite) error {
	doc := junitSuites{Name: "fenceline", Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: s.Time, Suites: []junitSuite{s}}
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
