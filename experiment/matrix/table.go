//go:build chaos

package matrix

import (
	"io"
	"strings"
	"time"

	"github.com/fenceline/fenceline/reports"
)

// Table is one table of an experiment's report: a header, which columns are right
// aligned, and rows of plain-text cells.
type Table struct {
	Header []string
	Right  []bool
	Rows   [][]string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Markdown writes t as a compact GitHub Markdown table, one line a row and no padding
// ("| a | b |"): a committed table then changes by the rows that changed, and a table
// can be merged row by row (topologies). Cells are escaped, so that a '|' or a '*' in
// a message does not break the table.
func (t Table) Markdown(w io.Writer) {
	var b strings.Builder
	line := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" " + MarkdownCell(c) + " |")
		}
		b.WriteString("\n")
	}
	line(t.Header)
	b.WriteString("|")
	for i := range t.Header {
		if i < len(t.Right) && t.Right[i] {
			b.WriteString("---:|")
		} else {
			b.WriteString("---|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		line(r)
	}
	_, _ = io.WriteString(w, b.String())
}

// Terminal writes t as boxed text for a terminal (tablewriter; long cells wrap).
func (t Table) Terminal(w io.Writer) {
	reports.RenderTable(w, t.Header, t.Right, t.Rows, false)
}

// markdownEscaper escapes what GitHub Markdown would read as markup in a table cell,
// and folds line breaks (a cell is one line). As package reports escapes its cells.
var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`, `<`, `\<`, `>`, `\>`, `|`, `\|`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// MarkdownCell escapes s for a Markdown table cell.
func MarkdownCell(s string) string { return markdownEscaper.Replace(s) }

// Dur renders a duration for a table: to the millisecond below a second, to 10 ms
// above.
func Dur(d time.Duration) string {
	if d >= time.Second {
		return d.Round(10 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// OrDash is s, or "—" for an empty cell.
func OrDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
