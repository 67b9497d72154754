package reports

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"
)

// timeline is the geometry of index.html's SVG timeline, computed here so that the
// template only places what it is given. Coordinates are in the SVG's viewBox units.
type timeline struct {
	W, H   float64 // viewBox
	X0, X1 float64 // the plot's x range: X0 is the run's start, X1 its end
	// Span is the run's length in nanoseconds (for the crosshair's time readout).
	Span int64
	// Top and Bottom bound the rows; the grid lines span them.
	Top, Bottom float64
	Ticks       []tick
	FaultRow    row
	Faults      []box
	WindowRow   row
	Windows     []windowBox
	LanesTop    float64
	LanesBottom float64
	Bands       []box // fault bands across the lanes
	Marks       []box // first commit of each new term after a failover
	Lanes       []lane
	Chart       chart
	Legend      []legendItem
}

type tick struct {
	X     float64
	Label string
}

type row struct {
	Y, H  float64
	Label string
}

// box is a labelled rectangle with a tooltip.
type box struct {
	X, Y, W, H float64
	Fill       string
	Class      string
	Label      string // drawn only when it fits
	Title      string // tooltip
}

type windowBox struct {
	Span, Gap box
}

type lane struct {
	Node       string
	Y, H       float64
	Title      string
	Leader     []box
	Conditions []box
	Overlaps   []box
}

type chart struct {
	Y, H     float64 // plot area
	Bars     []box
	MaxLabel string // the y axis' top value
	Caption  string
}

type legendItem struct {
	Fill, Class, Label string
}

// Layout constants (viewBox units).
const (
	tlWidth     = 1200.0
	tlGutter    = 92.0 // node labels
	tlRight     = 16.0
	laneH       = 30.0
	laneGap     = 8.0
	charW       = 6.2 // average width of a character at the labels' size
	minLabelPad = 6.0
)

// faultColors gives each fault kind a colour; unknown kinds get one from the fallback
// palette by hash, so a kind keeps its colour from run to run.
var faultColors = map[string]string{
	"kill":                   "#d64545",
	"stop":                   "#e8833a",
	"pause":                  "#8a63d2",
	"partition-reset":        "#3b82c4",
	"partition-blackhole":    "#1f4e8c",
	"delay":                  "#c9a227",
	"clock":                  "#1a9e9e",
	"redis-restart":          "#6b7280",
	"redis-restart-volatile": "#374151",
}

var fallbackColors = []string{"#b04a8f", "#5b8c2a", "#8c5b2a", "#2a8c7a", "#7a2a8c"}

func faultColor(kind string) string {
	if c, ok := faultColors[kind]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(kind))
	return fallbackColors[h.Sum32()%uint32(len(fallbackColors))]
}

// conditionClass is the CSS class (and SVG pattern) of a node condition.
func conditionClass(cond string) string {
	return "cond-" + strings.ReplaceAll(cond, " ", "-")
}

func (v *view) timeline() *timeline {
	tl := &timeline{W: tlWidth, X0: tlGutter, X1: tlWidth - tlRight, Span: v.end - v.start}
	x := func(t int64) float64 {
		f := float64(t-v.start) / float64(tl.Span)
		return tl.X0 + min(max(f, 0), 1)*(tl.X1-tl.X0)
	}
	span := func(a, b int64) (float64, float64) {
		xa, xb := x(a), x(b)
		return xa, max(xb-xa, 1.5) // keep an instant visible
	}
	fits := func(label string, w float64) string {
		if float64(len([]rune(label)))*charW+minLabelPad <= w {
			return label
		}
		return ""
	}
	y := 6.0
	tl.Top = y
	tl.FaultRow = row{Y: y, H: 22, Label: "faults"}
	kinds := map[string]bool{}
	conds := map[string]bool{}
	for _, f := range v.faults {
		end := f.Heal
		if end == 0 {
			end = v.end
		}
		bx, bw := span(f.Inject, end)
		label := f.Kind
		if f.Target != "" {
			label += " " + f.Target
		}
		title := fmt.Sprintf("%s: %s on %s, injected %s", f.ID, f.Kind, orDash(f.Target), v.at(f.Inject))
		if f.Heal != 0 {
			title += fmt.Sprintf(", healed %s (held %s)", v.at(f.Heal), dur(f.held()))
		} else {
			title += ", never healed"
		}
		if f.Failed {
			title += "; the injection failed"
		}
		if f.Err != "" {
			title += "; error: " + f.Err
		}
		if f.Detail != "" {
			title += "; " + f.Detail
		}
		class := "fault"
		if f.Failed {
			class += " failed"
		}
		kinds[f.Kind] = true
		tl.Faults = append(tl.Faults, box{X: bx, Y: y, W: bw, H: 22, Fill: faultColor(f.Kind), Class: class,
			Label: fits(label, bw), Title: title})
		tl.Bands = append(tl.Bands, box{X: bx, W: bw, Fill: faultColor(f.Kind), Class: "band", Title: title})
	}
	y += 22 + 6
	tl.WindowRow = row{Y: y, H: 16, Label: "failovers"}
	for i, w := range v.res.Windows {
		sx, sw := span(w.Injected, w.FirstNew)
		gx, gw := span(w.LastOld, w.FirstNew)
		title := fmt.Sprintf("failover %d: %s on %s at %s; %s (token %d) → %s (token %d); first commit under the new token %s after the fault; no commit accepted for %s",
			i+1, w.Fault, orDash(w.FaultNode), v.at(w.Injected), w.OldNode, w.OldToken, w.NewNode, w.NewToken,
			dur(w.ToNewToken), dur(w.Gap))
		tl.Windows = append(tl.Windows, windowBox{
			Span: box{X: sx, Y: y, W: sw, H: 16, Fill: faultColor(w.Fault), Class: "window", Label: fits(dur(w.ToNewToken), sw), Title: title},
			Gap:  box{X: gx, Y: y + 11, W: gw, H: 5, Class: "gap", Title: title},
		})
		tl.Marks = append(tl.Marks, box{X: x(w.FirstNew), Class: "mark", Title: title})
	}
	y += 16 + 10
	tl.LanesTop = y
	var items []item // one slice for every lane: a long register run's lanes have 80,000 items each
	for _, n := range v.nodes {
		ln := lane{Node: n, Y: y, H: laneH, Title: n + ": follower unless marked"}
		items = items[:0]
		for i, t := range v.res.Terms {
			if t.Node == n {
				bx, bw := span(t.Start, t.End)
				items = append(items, item{bx, bw, i})
			}
		}
		ln.Leader = tl.thinItems(items, "leadership terms", func(it item) box {
			t := v.res.Terms[it.i]
			fill := "#2f9e62"
			if t.Token%2 == 0 {
				fill = "#4cb87c"
			}
			title := fmt.Sprintf("%s leads with token %d from %s to %s (%s; ended by %s); %d commits accepted",
				n, t.Token, v.at(t.Start), v.at(t.End), dur(time.Duration(t.End-t.Start)), orDash(t.EndReason), t.Commits)
			return box{X: it.x, Y: y, W: it.w, H: laneH, Fill: fill, Class: "leader",
				Label: fits(fmt.Sprintf("t%d", t.Token), it.w), Title: title}
		})
		for _, f := range v.faults {
			cond := condition(f.Kind)
			if f.Target != n || cond == "" || f.Failed {
				continue
			}
			end := f.Heal
			if end == 0 {
				end = v.end
			}
			bx, bw := span(f.Inject, end)
			conds[cond] = true
			ln.Conditions = append(ln.Conditions, box{X: bx, Y: y, W: bw, H: laneH, Class: "cond " + conditionClass(cond),
				Label: fits(cond, bw), Title: fmt.Sprintf("%s %s from %s to %s (%s)", n, cond, v.at(f.Inject), v.at(end), f.Kind)})
		}
		items = items[:0]
		for i, o := range v.res.Overlaps {
			if o.NodeA == n || o.NodeB == n {
				bx, bw := span(o.Start, o.End)
				items = append(items, item{bx, bw, i})
			}
		}
		ln.Overlaps = tl.thinItems(items, "leadership overlaps", func(it item) box {
			o := v.res.Overlaps[it.i]
			return box{X: it.x, Y: y, W: it.w, H: 4, Class: "overlap",
				Title: fmt.Sprintf("%s (token %d) and %s (token %d) both believed they led for %s from %s",
					o.NodeA, o.TokenA, o.NodeB, o.TokenB, dur(o.Duration), v.at(o.Start))}
		})
		tl.Lanes = append(tl.Lanes, ln)
		y += laneH + laneGap
	}
	tl.LanesBottom = y - laneGap
	for i := range tl.Bands {
		tl.Bands[i].Y, tl.Bands[i].H = tl.LanesTop, tl.LanesBottom-tl.LanesTop
	}
	for i := range tl.Marks {
		tl.Marks[i].Y, tl.Marks[i].H = tl.LanesTop, tl.LanesBottom-tl.LanesTop
	}
	y += 8
	tl.Chart = v.commitChart(y, 64, x)
	y += 64
	tl.Bottom = y
	tl.Ticks = ticks(tl.Span, func(d time.Duration) float64 { return x(v.start + int64(d)) })
	tl.H = y + 22

	tl.Legend = append(tl.Legend, legendItem{Fill: "#e9edf3", Class: "follower", Label: "follower"},
		legendItem{Fill: "#2f9e62", Class: "leader", Label: "leader (token)"})
	for _, c := range []string{"down", "paused", "cut off", "slow", "clock skewed"} {
		if conds[c] {
			tl.Legend = append(tl.Legend, legendItem{Class: "cond " + conditionClass(c), Label: c})
		}
	}
	if len(v.res.Overlaps) > 0 {
		tl.Legend = append(tl.Legend, legendItem{Fill: "#e02424", Class: "overlap", Label: "two leaders"})
	}
	if len(v.res.Windows) > 0 {
		tl.Legend = append(tl.Legend, legendItem{Fill: "#111827", Class: "gap", Label: "commit gap"})
	}
	for _, k := range sortedKeys(kinds) {
		tl.Legend = append(tl.Legend, legendItem{Fill: faultColor(k), Class: "fault", Label: k})
	}
	tl.thinAll()
	return tl
}

// commitChart buckets the accepted commits over time.
func (v *view) commitChart(y, h float64, x func(int64) float64) chart {
	c := chart{Y: y, H: h}
	span := time.Duration(v.end - v.start)
	bucket := niceStep(span, 100)
	n := int(span/bucket) + 1
	counts := make([]int, n)
	for _, t := range v.commits {
		if i := int(time.Duration(t-v.start) / bucket); i >= 0 && i < n {
			counts[i]++
		}
	}
	peak := slices.Max(counts)
	perSec := func(k int) float64 { return float64(k) / bucket.Seconds() }
	c.Caption = fmt.Sprintf("accepted commits per second (buckets of %s)", dur(bucket))
	if peak == 0 {
		c.MaxLabel = "0/s"
		c.Caption = "no commit was accepted"
		return c
	}
	c.MaxLabel = fmt.Sprintf("%s/s", trimFloat(perSec(peak)))
	for i, k := range counts {
		if k == 0 {
			continue
		}
		a := v.start + int64(time.Duration(i)*bucket)
		b := min(a+int64(bucket), v.end)
		bx, bw := x(a), x(b)-x(a)
		bh := h * float64(k) / float64(peak)
		c.Bars = append(c.Bars, box{X: bx, Y: y + h - bh, W: max(bw-0.6, 0.8), H: bh, Class: "bar",
			Title: fmt.Sprintf("%s–%s: %d commits (%s/s)", v.at(a), v.at(b), k, trimFloat(perSec(k)))})
	}
	return c
}

func trimFloat(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	return strings.TrimSuffix(s, ".0")
}

// niceSteps are the candidate tick and bucket sizes.
var niceSteps = []time.Duration{
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
}

// niceStep is the smallest nice step that cuts span in at most n parts.
func niceStep(span time.Duration, n int) time.Duration {
	for _, s := range niceSteps {
		if span/s <= time.Duration(n) {
			return s
		}
	}
	return span/time.Duration(n) + 1
}

func ticks(span int64, x func(time.Duration) float64) []tick {
	step := niceStep(time.Duration(span), 12)
	var out []tick
	for d := time.Duration(0); d <= time.Duration(span); d += step {
		out = append(out, tick{X: x(d), Label: dur(d)})
	}
	return out
}
