package reports

import (
	"bytes"
	_ "embed"
	"html/template"
	"io"
	"strconv"
	"strings"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

//go:embed index.html.tmpl
var pageSource string

// pageTemplate renders index.html. It is parsed once; a parse error is a programmer
// error caught by every test.
var pageTemplate = template.Must(template.New("index.html").Funcs(template.FuncMap{
	"f":     func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) },
	"add":   func(a, b float64) float64 { return a + b },
	"sub":   func(a, b float64) float64 { return a - b },
	"right": func(t table, i int) bool { return i < len(t.Right) && t.Right[i] },
	"verdictClass": func(vd checker.Verdict) string {
		switch vd {
		case checker.Valid, checker.Invalid, checker.NotApplicable:
			return string(vd)
		}
		return "unknown"
	},
	"mark":  verdictMark,
	"upper": strings.ToUpper,
}).Parse(pageSource))

// page is the data of index.html.
type page struct {
	Verdict  checker.Verdict
	Headline string
	OneLine  string
	Failing  []checker.CheckResult
	Timeline *timeline
	Run      table
	Tables   []table
	Links    []link
	// RedisLoss is the finding that Redis lost acknowledged writes, shown as a badge.
	RedisLoss      redisLoss
	RedisLossLabel string
	// WayBack holds the commands that replay and shrink a run that did not pass.
	WayBack      []string
	WayBackIntro string
}

// HTML writes index.html of a run to w: one self-contained page (inline CSS, script and
// SVG; it fetches nothing) with the verdict and violations, a timeline of leadership,
// faults, failover windows and commit rate, the report's tables and links to the run's
// files. It writes w once.
func HTML(w io.Writer, run *history.Run, res *checker.Result) error {
	v, err := newView(run, res)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := v.html(&b); err != nil {
		return err
	}
	_, err = w.Write(b.Bytes())
	return err
}

func (v *view) html(w io.Writer) error {
	ts := v.tables()
	p := page{Verdict: v.verdict(), Headline: v.headline(), OneLine: v.oneLine(), Failing: v.failing(),
		Timeline: v.timeline(), Run: ts[0], Tables: ts[1:], Links: v.links(), WayBack: v.wayBack(), WayBackIntro: wayBackIntro,
		RedisLoss: v.redisLoss(), RedisLossLabel: RedisLossLabel}
	return pageTemplate.Execute(w, p)
}
