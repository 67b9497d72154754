package reports

import (
	"bytes"
	"fmt"
	"io"
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
		renderTable(&b, t, false)
		if t.More > 0 {
			fmt.Fprintf(&b, "%s\n", t.MoreNote())
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}
