package checker

import (
	"fmt"
	"slices"
	"time"
)

// Throughput compares the rate at which the store accepted events in the chaos phase,
// away from every fault, with the run's own fault-free warm-up. A design that slows
// down without breaking anything (a fence that rejects a leader's own second commit,
// an election that hands over on its own) keeps every check valid but shows here.
type Throughput struct {
	// Warmup is from the end of the first catch-up (the first accepted commit followed
	// by a pause of at least CaughtUpGap before the next: the events that piled up while
	// the first leader was elected are applied by then) to the first fault's injection
	// (to the final heal if none was injected); WarmupEvents the events accepted in it.
	Warmup       time.Duration `json:"warmup_ns"`
	WarmupEvents int64         `json:"warmup_events"`
	// Outside is the time of the chaos phase (first injection to final heal) outside
	// every fault window, a window being a fault's injection to one lease TTL after
	// its heal (the failover it may cause); OutsideEvents the events accepted in it.
	Outside       time.Duration `json:"outside_ns"`
	OutsideEvents int64         `json:"outside_events"`
	// Terms counts the terms that started in the chaos phase outside fault windows.
	OutsideTerms int `json:"outside_terms"`
	// SourceRate is RunInfo.SourceRate: the rate of a leader that keeps up (0: unknown).
	SourceRate float64 `json:"source_rate,omitempty"`
}

// WarmupRate and OutsideRate are events per second; 0 when their time is 0.
func (t Throughput) WarmupRate() float64  { return rate(t.WarmupEvents, t.Warmup) }
func (t Throughput) OutsideRate() float64 { return rate(t.OutsideEvents, t.Outside) }

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// CaughtUpGap is the pause between two accepted commits that marks the end of the
// first catch-up: half the listener's default poll interval, which it waits when the
// source has nothing new.
const CaughtUpGap = 50 * time.Millisecond

// MinThroughputSpan is the least warm-up and outside time for Throughput.Ratio to be
// given: shorter spans hold too few commits to compare.
const MinThroughputSpan = 500 * time.Millisecond

// Ratio is OutsideRate / WarmupRate, and whether both spans are long enough
// (MinThroughputSpan) and the warm-up accepted anything.
func (t Throughput) Ratio() (float64, bool) {
	if t.Warmup < MinThroughputSpan || t.Outside < MinThroughputSpan || t.WarmupEvents == 0 {
		return 0, false
	}
	return t.OutsideRate() / t.WarmupRate(), true
}

// Slow reports whether the run's throughput should be flagged, and why: outside fault
// windows below half the warm-up's, or either below half the source's rate (the
// leader falls behind the feed). Spans shorter than MinThroughputSpan are not judged.
func (t Throughput) Slow() (string, bool) {
	if r, ok := t.Ratio(); ok && r < 0.5 {
		return fmt.Sprintf("commit throughput outside fault windows is %.0f%% of the warm-up's (%.0f against %.0f events/s)", 100*r, t.OutsideRate(), t.WarmupRate()), true
	}
	if t.SourceRate > 0 {
		for _, s := range []struct {
			what string
			d    time.Duration
			rate float64
		}{{"the warm-up", t.Warmup, t.WarmupRate()}, {"the chaos phase outside fault windows", t.Outside, t.OutsideRate()}} {
			if s.d >= MinThroughputSpan && s.rate < t.SourceRate/2 {
				return fmt.Sprintf("commit throughput in %s is %.0f%% of the source's rate (%.0f against %.0f events/s): the leader falls behind the feed", s.what, 100*s.rate/t.SourceRate, s.rate, t.SourceRate), true
			}
		}
	}
	return "", false
}

// throughput measures Throughput from the accepted commits (by their return time) and
// the terms. It returns nil for a run without a lease TTL or a final heal, or without
// an accepted commit before the first fault, and for the register workload, whose
// clients commit as fast as they contend, not as the source produces.
func throughput(p *parsed, terms []Term) *Throughput {
	ttl, heal := p.run.Info.LeaseTTL, p.run.Info.HealTime
	if ttl <= 0 || heal == 0 || p.run.Info.Workload == "register" {
		return nil
	}
	var accepted []*op
	for i := range p.ops {
		if o := &p.ops[i]; acceptedCommit(o) && o.ret != never {
			accepted = append(accepted, o)
		}
	}
	slices.SortFunc(accepted, func(a, b *op) int { return cmpInt(a.ret, b.ret) })
	first := int64(-1)
	for i := 0; i+1 < len(accepted); i++ {
		if accepted[i+1].call-accepted[i].ret >= int64(CaughtUpGap) {
			first = accepted[i].ret
			break
		}
	}
	if first < 0 {
		return nil
	}
	chaos := heal
	type span struct{ from, to int64 }
	var windows []span
	for i := range p.faults {
		f := &p.faults[i]
		chaos = min(chaos, f.inject)
		end := f.heal
		if end == 0 {
			end = heal
		}
		windows = append(windows, span{f.inject, end + int64(ttl)})
	}
	if first >= chaos {
		return nil
	}
	// Merge the windows, so that outside is the chaos phase minus their union.
	slices.SortFunc(windows, func(a, b span) int { return cmpInt(a.from, b.from) })
	var merged []span
	for _, w := range windows {
		if n := len(merged); n > 0 && w.from <= merged[n-1].to {
			merged[n-1].to = max(merged[n-1].to, w.to)
			continue
		}
		merged = append(merged, w)
	}
	inWindow := func(t int64) bool {
		i, _ := slices.BinarySearchFunc(merged, t, func(s span, v int64) int {
			if s.to < v {
				return -1
			}
			return 1
		})
		return i < len(merged) && merged[i].from <= t
	}
	tp := &Throughput{Warmup: time.Duration(chaos - first), SourceRate: p.run.Info.SourceRate}
	outside := heal - chaos
	for _, w := range merged {
		outside -= max(0, min(w.to, heal)-max(w.from, chaos))
	}
	tp.Outside = time.Duration(max(outside, 0))
	for i := range p.ops {
		o := &p.ops[i]
		if !acceptedCommit(o) || o.ret == never || o.b <= o.a {
			continue
		}
		n := o.b - o.a
		switch {
		case o.ret <= first:
		case o.ret < chaos:
			tp.WarmupEvents += n
		case o.ret <= heal && !inWindow(o.ret):
			tp.OutsideEvents += n
		}
	}
	for _, t := range terms {
		if t.Start >= chaos && t.Start <= heal && !inWindow(t.Start) {
			tp.OutsideTerms++
		}
	}
	return tp
}
