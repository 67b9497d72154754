package reports_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
	"github.com/fenceline/fenceline/reports"
	"github.com/fenceline/fenceline/source"
)

// The real recorded runs of the checker's tests (checker/testdata/real, see
// checker/real_test.go), reported: a failing run names its violations first, before
// any table; a passing one says so in its first line.
func TestRealRunReports(t *testing.T) {
	cases := []struct {
		name    string
		verdict checker.Verdict
		first   string   // the report's first line
		names   []string // checks the violations section names, in this order
	}{
		{"reference-valid", checker.Valid, "# fenceline run: ✓ VALID", nil},
		{"no-fence-delay-invalid", checker.Invalid, "# fenceline run: ✗ INVALID",
			[]string{checker.CheckLinearizability, checker.CheckStaleWrite, checker.CheckExactlyOnce, checker.CheckCursorMonotonic}},
		{"unknown-outcomes-resolved", checker.Valid, "# fenceline run: ✓ VALID", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run, err := history.LoadRun(filepath.Join("..", "checker", "testdata", "real", tc.name))
			if err != nil {
				t.Fatal(err)
			}
			res, err := checker.Check(context.Background(), run, checker.Options{ExpectedBalances: source.Balances, OutDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			if v := reports.Verdict(run, res); v != tc.verdict {
				t.Fatalf("verdict %s, want %s", v, tc.verdict)
			}
			var md bytes.Buffer
			if err := reports.Markdown(&md, run, res); err != nil {
				t.Fatal(err)
			}
			text := md.String()
			if first, _, _ := strings.Cut(text, "\n"); first != tc.first {
				t.Errorf("first line %q, want %q", first, tc.first)
			}
			sections := headings(text)
			if tc.names == nil {
				if strings.Contains(text, "## Violations") {
					t.Errorf("a valid run's report has violations; sections %v", sections)
				}
			} else {
				if len(sections) == 0 || sections[0] != "Violations" {
					t.Fatalf("the first section is not the violations: %v", sections)
				}
				viol, _, _ := strings.Cut(text[strings.Index(text, "## Violations"):], "\n## ")
				at := 0
				for _, name := range tc.names {
					i := strings.Index(viol[at:], "invalid "+name)
					if i < 0 {
						t.Fatalf("violations section does not name %s (after byte %d):\n%s", name, at, viol)
					}
					at += i
				}
				// The headline, above every section, names the failing checks too.
				head := text[:strings.Index(text, "## ")]
				for _, name := range tc.names {
					if !strings.Contains(head, name) {
						t.Errorf("headline does not name %s: %q", name, head)
					}
				}
			}
			var js bytes.Buffer
			if err := reports.WriteResults(&js, run, res); err != nil {
				t.Fatal(err)
			}
			var got struct {
				Verdict string `json:"verdict"`
			}
			if err := json.Unmarshal(js.Bytes(), &got); err != nil || got.Verdict != string(tc.verdict) {
				t.Errorf("results.json verdict %q (%v), want %s", got.Verdict, err, tc.verdict)
			}
		})
	}
}

// headings lists the report's level-2 section titles in order.
func headings(md string) []string {
	var out []string
	for line := range strings.Lines(md) {
		if s, ok := strings.CutPrefix(line, "## "); ok {
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}

// A run that `fenceline shrink` found says so in the headline of the summary, report.md
// and the HTML report.
func TestShrunkRunSaysSo(t *testing.T) {
	t.Parallel()
	run, err := history.LoadRun(filepath.Join("..", "checker", "testdata", "real", "no-fence-delay-invalid"))
	if err != nil {
		t.Fatal(err)
	}
	run.Info.ShrunkFrom, run.Info.ShrunkTo, run.Info.ShrunkFromRun = 12, 1, "reports/runs/orig"
	run.Info.Schedule = "replayed"
	res, err := checker.Check(context.Background(), run, checker.Options{ExpectedBalances: source.Balances, OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	want := "Shrunk from 12 faults to 1 (fenceline shrink of reports/runs/orig)."
	if !strings.Contains(sumOneLine(t, run, res), "of chaos, replayed schedule;") {
		t.Error("the summary does not say the schedule was replayed")
	}
	var sum, md, html bytes.Buffer
	if err := reports.Summary(&sum, run, res); err != nil {
		t.Fatal(err)
	}
	if err := reports.Markdown(&md, run, res); err != nil {
		t.Fatal(err)
	}
	if err := reports.HTML(&html, run, res); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*bytes.Buffer{"summary": &sum, "report.md": &md, "HTML": &html} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("%s does not say %q", name, want)
		}
	}
}

func sumOneLine(t *testing.T, run *history.Run, res *checker.Result) string {
	t.Helper()
	var b bytes.Buffer
	if err := reports.Summary(&b, run, res); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
