package reports

import (
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

// Summary prints the verdict, the failing checks' violations and the tables of
// report.md to w, as boxed text for a terminal (the output of `fenceline chaos` and
// `fenceline check`). It writes w once and returns its error.
func Summary(w io.Writer, run *history.Run, res *checker.Result) error {
	v, err := newView(run, res)
	if err != nil {
		return err
	}
	return v.summary(w)
}

func (v *view) summary(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "fenceline run: %s\n%s\n%s\n", strings.ToUpper(verdictMark(v.verdict())), v.headline(), v.oneLine())
	if loss := v.redisLoss(); loss.Lost {
		fmt.Fprintf(&b, "%s: %s.\n", RedisLossLabel, loss.Evidence)
	}
	for _, c := range v.failing() {
		fmt.Fprintf(&b, "\n%s %s: %s\n", verdictMark(c.Verdict), c.Name, c.Message)
		for _, o := range c.Offending {
			fmt.Fprintf(&b, "  - %s\n", o)
		}
		if c.Visualization != "" {
			fmt.Fprintf(&b, "  visualization: %s\n", c.Visualization)
		}
	}
	for _, t := range v.tables() {
		fmt.Fprintf(&b, "\n%s\n", strings.ToUpper(t.Title))
		if t.Intro != "" {
			fmt.Fprintf(&b, "%s\n", t.Intro)
		}
		if len(t.Rows) == 0 {
			fmt.Fprintf(&b, "%s\n", t.Empty)
			continue
		}
		t, note := terminalMarks(t)
		renderTable(&b, t, false)
		if note != "" {
			fmt.Fprintf(&b, "%s\n", note)
		}
		if t.More > 0 {
			fmt.Fprintf(&b, "%s\n", t.MoreNote())
		}
	}
	if back := v.wayBack(); back != nil {
		fmt.Fprintf(&b, "\nTHE WAY BACK\n%s\n", wayBackIntro)
		for _, c := range back {
			fmt.Fprintf(&b, "  %s\n", c)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// fewSamples matches a percentile cell marked by pctCell: its value and n.
var fewSamples = regexp.MustCompile(`^(\S+) \(n=(\d+), fewer than \d+: [^)]*\)$`)

// terminalMarks shortens for a terminal the percentile cells pctCell marked, which
// would make the table twice as wide as the screen: each becomes its value and an
// asterisk, explained by the note returned (empty when no cell was marked).
func terminalMarks(t table) (table, string) {
	marked := false
	rows := make([][]string, len(t.Rows))
	for i, r := range t.Rows {
		rows[i] = slices.Clone(r)
		for j, c := range r {
			if m := fewSamples.FindStringSubmatch(c); m != nil {
				rows[i][j], marked = m[1]+"*", true
			}
		}
	}
	if !marked {
		return t, ""
	}
	t.Rows = rows
	return t, fmt.Sprintf("* over fewer than %d windows (n, the windows column) a percentile is one of them: p90 and p99 the maximum, p50 the ⌈n/2⌉-th smallest.", minSamples)
}
