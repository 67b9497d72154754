package reports

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// maxBoxesPerRow bounds what one row of the timeline draws (the faults, the failovers,
// each lane's terms, conditions and overlaps). Beyond it, the boxes that start within
// the same 1/maxBoxesPerRow of the plot's width — less than three pixels of a full-width
// page — are drawn as one, whose tooltip counts them. So index.html stays a few
// megabytes however long the run: 100,000 terms would otherwise take 150 MB.
const maxBoxesPerRow = 400

// thinAll applies thin to every row of the timeline.
func (tl *timeline) thinAll() {
	tl.Faults = tl.thin(tl.Faults, "faults")
	tl.Bands = tl.thin(tl.Bands, "faults")
	tl.Windows = tl.thinWindows(tl.Windows)
	tl.Marks = tl.thin(tl.Marks, "failovers")
	for i := range tl.Lanes {
		ln := &tl.Lanes[i]
		ln.Leader = tl.thin(ln.Leader, "leadership terms")
		ln.Conditions = tl.thin(ln.Conditions, "faults")
		ln.Overlaps = tl.thin(ln.Overlaps, "leadership overlaps")
	}
}

// buckets groups n items, sorted by x, into runs [lo, hi) whose x fall in the same
// 1/maxBoxesPerRow of the plot.
func (tl *timeline) buckets(n int, x func(i int) float64) [][2]int {
	width := (tl.X1 - tl.X0) / maxBoxesPerRow
	bucket := func(i int) int { return int((x(i) - tl.X0) / width) }
	var out [][2]int
	for lo := 0; lo < n; {
		hi := lo + 1
		for hi < n && bucket(hi) == bucket(lo) {
			hi++
		}
		out = append(out, [2]int{lo, hi})
		lo = hi
	}
	return out
}

// thin draws bs with at most about maxBoxesPerRow boxes: when there are more, it sorts
// them by x and merges those of each bucket (see buckets).
func (tl *timeline) thin(bs []box, what string) []box {
	if len(bs) <= maxBoxesPerRow {
		return bs // drawn as they are, in their order
	}
	slices.SortStableFunc(bs, func(a, b box) int { return cmp.Compare(a.X, b.X) })
	groups := tl.buckets(len(bs), func(i int) float64 { return bs[i].X })
	out := make([]box, 0, len(groups))
	for _, g := range groups {
		out = append(out, tl.merge(bs[g[0]:g[1]], what))
	}
	return out
}

// item is a box yet to be made: where it is drawn, and the index of what it draws.
type item struct {
	x, w float64
	i    int
}

// thinItems is thin for boxes that mk makes from items: only the boxes drawn are made,
// so that a lane of a long register run (hundreds of thousands of terms or overlaps,
// nearly all merged) does not format a tooltip for each.
func (tl *timeline) thinItems(items []item, what string, mk func(item) box) []box {
	if len(items) <= maxBoxesPerRow {
		out := make([]box, len(items))
		for k, it := range items {
			out[k] = mk(it)
		}
		return out
	}
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(a.x, b.x) })
	groups := tl.buckets(len(items), func(k int) float64 { return items[k].x })
	out := make([]box, 0, len(groups))
	for _, g := range groups {
		b := mk(items[g[0]])
		if g[1]-g[0] > 1 {
			end := b.X + b.W
			for _, it := range items[g[0]+1 : g[1]] {
				end = max(end, it.x+it.w)
			}
			b.W, b.Label = end-b.X, ""
			b.Title = tl.mergedTitle(g[1]-g[0], what, b.X, end)
		}
		out = append(out, b)
	}
	return out
}

// merge draws the boxes bs as one box spanning them all, in the first one's style.
func (tl *timeline) merge(bs []box, what string) box {
	m := bs[0]
	if len(bs) == 1 {
		return m
	}
	end := m.X + m.W
	for _, b := range bs[1:] {
		end = max(end, b.X+b.W)
	}
	m.W, m.Label = end-m.X, ""
	m.Title = tl.mergedTitle(len(bs), what, m.X, end)
	return m
}

// mergedTitle is the tooltip of n boxes drawn as one from x to end.
func (tl *timeline) mergedTitle(n int, what string, x, end float64) string {
	return fmt.Sprintf("%d %s between %s and %s, drawn as one at this scale (the tables and results list them)",
		n, what, tl.timeAt(x), tl.timeAt(end))
}

// thinWindows is thin for the failover windows (a span and its gap each).
func (tl *timeline) thinWindows(ws []windowBox) []windowBox {
	if len(ws) <= maxBoxesPerRow {
		return ws
	}
	slices.SortStableFunc(ws, func(a, b windowBox) int { return cmp.Compare(a.Span.X, b.Span.X) })
	groups := tl.buckets(len(ws), func(i int) float64 { return ws[i].Span.X })
	out := make([]windowBox, 0, len(groups))
	spans, gaps := make([]box, 0, len(ws)), make([]box, 0, len(ws))
	for _, g := range groups {
		spans, gaps = spans[:0], gaps[:0]
		for _, w := range ws[g[0]:g[1]] {
			spans, gaps = append(spans, w.Span), append(gaps, w.Gap)
		}
		wb := windowBox{Span: tl.merge(spans, "failover windows"), Gap: tl.merge(gaps, "failover windows")}
		wb.Gap.Title = wb.Span.Title
		out = append(out, wb)
	}
	return out
}

// timeAt is the time at x, relative to the run's start: "t+1.234s".
func (tl *timeline) timeAt(x float64) string {
	f := (x - tl.X0) / (tl.X1 - tl.X0)
	return "t+" + dur(time.Duration(f*float64(tl.Span)))
}
