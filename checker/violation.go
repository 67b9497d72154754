package checker

import (
	"cmp"
	"math"
	"slices"
)

// Violation is the earliest violation of a run: the check that found it, when, and
// what it was.
type Violation struct {
	// Check is the name of the check that found it.
	Check string `json:"check"`
	// Time is CheckResult.FirstViolation: host wall-clock nanoseconds since the Unix
	// epoch, like the history's.
	Time int64 `json:"time"`
	// Description is the check's first offending entry (its message if it has none).
	Description string `json:"description"`
}

// FirstViolation returns the earliest violation over the invalid checks of r: the one
// whose CheckResult.FirstViolation is smallest, ties going to the check listed first.
// ok is false when no check is invalid. An invalid check without a time (a result
// stored before the field existed) counts as later than every timed one.
func (r *Result) FirstViolation() (v Violation, ok bool) {
	for i := range r.Checks {
		c := &r.Checks[i]
		if c.Verdict != Invalid {
			continue
		}
		if ok && (c.FirstViolation == 0 || (v.Time != 0 && v.Time <= c.FirstViolation)) {
			continue // not earlier than the one we have
		}
		v, ok = Violation{Check: c.Name, Time: c.FirstViolation, Description: c.Message}, true
		if len(c.Offending) > 0 {
			v.Description = c.Offending[0]
		}
	}
	return v, ok
}

// finding is one violation a check found: the host time of its earliest offending
// operation (0 if it has none) and its description.
type finding struct {
	at   int64
	what string
}

// cmpTime orders times earliest first, 0 (no time) last.
func cmpTime(a, b int64) int {
	switch {
	case a == b:
		return 0
	case a == 0:
		return 1
	case b == 0:
		return -1
	}
	return cmp.Compare(a, b)
}

// byTime sorts findings earliest first, untimed ones last, keeping the order of equals.
func byTime(fs []finding) {
	slices.SortStableFunc(fs, func(a, b finding) int { return cmpTime(a.at, b.at) })
}

// earliest returns the smallest non-zero time of fs, or 0.
func earliest(fs []finding) int64 {
	var t int64
	for _, f := range fs {
		if f.at != 0 && (t == 0 || f.at < t) {
			t = f.at
		}
	}
	return t
}

// texts returns the descriptions of fs, capped at n entries (see capList).
func texts(fs []finding, n int) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.what
	}
	return capList(out, n)
}

// setOffending sorts fs earliest first and records them as the check's violations:
// Offending (capped at n) and FirstViolation. When no finding has a time, fallback
// (the moment the violation was observed, such as the final store read) is used.
func (cr *CheckResult) setOffending(fs []finding, n int, fallback int64) {
	byTime(fs)
	cr.Offending = texts(fs, n)
	cr.FirstViolation = cmp.Or(earliest(fs), fallback)
}

// setGroupedOffending is setOffending for violations of several kinds, each kind
// capped apart at per entries so that one kind cannot hide the others: the groups are
// sorted earliest first, ordered by their earliest entry, and Offending is capped at n.
func (cr *CheckResult) setGroupedOffending(groups [][]finding, per, n int, fallback int64) {
	groups = slices.DeleteFunc(groups, func(g []finding) bool { return len(g) == 0 })
	for _, g := range groups {
		byTime(g)
	}
	slices.SortStableFunc(groups, func(a, b []finding) int { return cmpTime(a[0].at, b[0].at) })
	var out []string
	var first int64
	for _, g := range groups {
		out = append(out, texts(g, per)...)
		if t := earliest(g); t != 0 && (first == 0 || t < first) {
			first = t
		}
	}
	cr.Offending = capList(out, n)
	cr.FirstViolation = cmp.Or(first, fallback)
}

// opTime is the time an operation is judged at: its completion, or its invoke when it
// has none.
func (o *op) opTime() int64 {
	if o.ret != never {
		return o.ret
	}
	return o.call
}

// commitTime returns the time of the commit or write whose operation id is id, or 0 if
// no recorded one has that id (an audit entry the histories do not know). It is safe
// for concurrent use.
func (p *parsed) commitTime(id string) int64 {
	p.commitByIDOnce.Do(func() {
		p.commitByID = make(map[string]int32, p.counts.Commits)
		for i := range p.ops {
			if o := &p.ops[i]; o.kind != kLoad && !o.final {
				p.commitByID[p.evs.ID(int(o.ev))] = int32(i)
			}
		}
	})
	if i, ok := p.commitByID[id]; ok {
		return p.ops[i].opTime()
	}
	return 0
}

// sinkWriters times the violations exactly-once finds in the final store. wrote(i) is
// the time of the commit that appended sink position i, and passed(e) that of the
// first commit that moved the cursor to event e or beyond, both found through the audit
// stream's accepted entries (each appends the events from+1..to). Either returns 0 when
// the audit stream cannot tell: it does not account for the sink exactly (a Redis
// restart without persistence truncated it), or the commit is not in the histories.
func (p *parsed) sinkWriters(initialCursor int64) (wrote func(pos int) int64, passed func(event int64) int64) {
	none := func(int) int64 { return 0 }
	st := p.run.Store
	type span struct {
		end int64 // sink positions up to end (exclusive) are written by then
		op  string
		to  int64
	}
	var spans []span
	var n int64
	for ai := range st.AuditLen() {
		a := st.AuditAt(ai)
		if a.Result != "ok" {
			continue
		}
		if d := a.To - a.From; a.To > a.From && d > 0 { // d > 0: no overflow
			n = min(n, math.MaxInt64-d) + d
		}
		spans = append(spans, span{end: n, op: a.Op, to: a.To})
	}
	wrote = none
	if n == int64(len(st.Sink)) {
		wrote = func(pos int) int64 {
			j, _ := slices.BinarySearchFunc(spans, int64(pos), func(s span, v int64) int { return cmp.Compare(s.end, v+1) })
			if j == len(spans) {
				return 0
			}
			return p.commitTime(spans[j].op)
		}
	}
	// reach[j] is the highest cursor spans[:j+1] moved to: non-decreasing, searchable.
	reach := make([]int64, len(spans))
	for j, s := range spans {
		reach[j] = s.to
		if j > 0 {
			reach[j] = max(reach[j], reach[j-1])
		}
	}
	passed = func(e int64) int64 {
		j, _ := slices.BinarySearch(reach, e)
		if e <= initialCursor || j == len(spans) {
			return 0
		}
		return p.commitTime(spans[j].op)
	}
	return wrote, passed
}
