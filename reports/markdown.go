package reports

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

// Markdown writes report.md of a run to w: the verdict and the failing checks'
// violations first, then the tables. It does not block beyond writing to w.
func Markdown(w io.Writer, run *history.Run, res *checker.Result) error {
	v, err := newView(run, res)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	v.markdown(&b)
	_, err = w.Write(b.Bytes())
	return err
}

func (v *view) markdown(b *bytes.Buffer) {
	vd := v.verdict()
	fmt.Fprintf(b, "# fenceline run: %s\n\n", strings.ToUpper(verdictMark(vd)))
	fmt.Fprintf(b, "**%s** %s\n\n", mdText(v.headline()), mdText(v.oneLine()))
	if why, ok := RedisLostWrites(v.run, v.res); ok {
		fmt.Fprintf(b, "**%s**: %s. The violations below follow from it: asynchronous replication lost writes in a promotion, not the election (see the README's topologies section).\n\n",
			RedisLossLabel, mdText(why))
	}
	if failing := v.failing(); len(failing) > 0 {
		title := "Violations"
		if vd != checker.Invalid {
			title = "Undecided checks"
		}
		fmt.Fprintf(b, "## %s\n\n", title)
		for _, c := range failing {
			fmt.Fprintf(b, "### %s %s\n\n", verdictMark(c.Verdict), mdText(c.Name))
			fmt.Fprintf(b, "%s\n\n", mdText(c.Message))
			for _, o := range c.Offending {
				fmt.Fprintf(b, "- %s\n", mdCode(o))
			}
			if len(c.Offending) > 0 {
				b.WriteString("\n")
			}
			if c.Visualization != "" {
				fmt.Fprintf(b, "Visualization of the failing piece of history: [%s](%s)\n\n", mdText(c.Visualization), mdLink(c.Visualization))
			}
		}
	}
	for _, t := range v.tables() {
		fmt.Fprintf(b, "## %s\n\n", t.Title)
		if t.Intro != "" {
			fmt.Fprintf(b, "%s\n\n", mdText(t.Intro))
		}
		if len(t.Rows) == 0 {
			fmt.Fprintf(b, "%s\n\n", mdText(t.Empty))
			continue
		}
		renderTable(b, t, true)
		if t.More > 0 {
			fmt.Fprintf(b, "\n%s\n", mdText(t.MoreNote()))
		}
		b.WriteString("\n")
	}
	b.WriteString("## Files\n\n")
	for _, f := range v.links() {
		fmt.Fprintf(b, "- [%s](%s) — %s\n", mdText(f.Name), mdLink(f.Href), mdText(f.What))
	}
	if cmds := v.wayBack(); cmds != nil {
		fmt.Fprintf(b, "\n## The way back\n\n%s\n\n```sh\n%s\n```\n", mdText(wayBackIntro), strings.Join(cmds, "\n"))
	}
}

// oneLine sums the run up in a sentence: what ran, with what.
func (v *view) oneLine() string {
	in := v.run.Info
	design := orDefault(in.Variant, "reference") + " variant"
	if in.Target != "" {
		design = "target " + in.Target
	}
	s := fmt.Sprintf("Seed %d, %s workload, %s, %d nodes on %s, lease TTL %s, %s of chaos",
		in.Seed, orDash(in.Workload), design, len(v.nodes), orDash(in.Backend), dur(in.LeaseTTL), dur(in.Duration))
	if in.Schedule != "" && in.Schedule != "random" {
		s += ", " + in.Schedule + " schedule"
	}
	if in.StartToken != 0 || in.StartCursor != 0 {
		s += fmt.Sprintf(", token counter from %d and cursor from %d", in.StartToken, in.StartCursor)
	}
	s += fmt.Sprintf("; %d faults, %d leader changes, %d fencing rejections.", len(v.faults), v.res.LeaderChanges, v.res.FencingRejections)
	if tp := v.res.Throughput; tp != nil {
		if why, slow := tp.Slow(); slow {
			s += " Flagged (not judged): " + why + "."
		}
	}
	return s
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// RenderTable renders a table with the report's renderer (tablewriter): GitHub
// Markdown, or boxes for a terminal. right marks the columns of numbers
// (right-aligned). Its writer's error is the caller's to see on its next write.
func RenderTable(w io.Writer, header []string, right []bool, rows [][]string, markdown bool) {
	renderTable(w, table{Header: header, Right: right, Rows: rows}, markdown)
}

// renderTable renders t with tablewriter: GitHub Markdown, or boxes for a terminal.
func renderTable(w io.Writer, t table, markdown bool) {
	align := make([]tw.Align, len(t.Header))
	for i := range align {
		align[i] = tw.AlignLeft
		if i < len(t.Right) && t.Right[i] {
			align[i] = tw.AlignRight
		}
	}
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: align}),
	}
	if markdown {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()), tablewriter.WithRowAutoWrap(tw.WrapNone))
	} else {
		opts = append(opts, tablewriter.WithRowMaxWidth(terminalCell), tablewriter.WithRowAutoWrap(tw.WrapNormal))
	}
	tb := tablewriter.NewTable(w, opts...)
	cell := func(s string) string { return termCell(s) }
	if markdown {
		cell = mdCell
	}
	hdr := make([]string, len(t.Header))
	for i, h := range t.Header {
		hdr[i] = cell(h)
	}
	tb.Header(hdr)
	for _, r := range t.Rows {
		row := make([]string, len(r))
		for i, c := range r {
			row[i] = cell(c)
		}
		// Append and Render fail only on a malformed table (a row of the wrong kind) or a
		// failing writer; the writer here is a buffer or the caller's, whose error the
		// caller sees on its next write.
		_ = tb.Append(row)
	}
	_ = tb.Render()
}

// terminalCell bounds a terminal table's cells; longer ones wrap. With the few short
// columns beside the long ones, tables stay within about terminalWidth.
const (
	terminalCell  = 80
	terminalWidth = 120
)

var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`, `<`, `\<`, `>`, `\>`, `|`, `\|`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// mdText escapes s for Markdown inline text.
func mdText(s string) string { return mdEscaper.Replace(s) }

// mdCell escapes s for a Markdown table cell.
func mdCell(s string) string { return mdText(s) }

// termCell keeps a terminal cell on one logical line.
func termCell(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// mdCode renders s as a code span, fenced with enough backticks.
func mdCode(s string) string {
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		return fence + " " + s + " " + fence
	}
	return fence + s + fence
}

// mdLink escapes a relative file name for a link target.
func mdLink(s string) string {
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "<", "%3C", ">", "%3E").Replace(s)
}
