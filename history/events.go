package history

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Events is a sequence of events held compactly: a long run's two million events take
// 64 bytes each and no pointer, where []Event takes 160 bytes and an allocated id each,
// all of which the garbage collector would scan again and again. The strings of all
// events live in one table (each distinct node, kind, error... once) and their ids in
// one arena; At hands out an Event whose strings share that memory, without allocating.
//
// An Events is immutable once made, and safe for concurrent reads. The zero value is
// empty. Make one with Pack, or get one from LoadRun.
type Events struct {
	rows []row
	ids  string   // every event's id, one after another
	strs []string // interned strings; strs[0] is ""
	wide []Event  // the events no row layout fits (see layoutWide)
}

// row is one event. Its strings are indices into Events.strs, its id a span of
// Events.ids; layout says what x and y hold.
type row struct {
	time, token, x, y        int64
	id                       span
	node, err, reason, fault uint32
	events                   int32
	typ, kind, layout        uint8
}

// Layouts of a row. A store operation sets either a commit's from and to or a load's
// cursor, so one pair of fields holds either; anything else is kept whole.
const (
	layoutCommit = iota // x = from, y = to; cursor 0
	layoutLoad          // x = cursor; from and to 0
	layoutWide          // the event is wide[x]: cursor with from or to, events beyond
	// int32, or a type or kind that is not one of the package's constants
)

// fields is an event being read: its strings interned, its id in the builder's arena.
type fields struct {
	time, token, from, to, cursor, events int64
	id                                    span
	typ, kind, node, err, reason, fault   uint32
}

// span locates a string in an arena: offset in the high 40 bits, length in the low 24
// (a line, so any id, is shorter than maxLine).
type span uint64

func mkSpan(off, n int) span { return span(uint64(off)<<24 | uint64(n)) }
func (s span) off() int      { return int(s >> 24) }
func (s span) end() int      { return s.off() + s.len() }
func (s span) len() int      { return int(s & (1<<24 - 1)) }

// Pack returns evs as Events, in the same order. It copies them.
func Pack(evs []Event) Events {
	b := newBuilder(len(evs))
	for i := range evs {
		b.set(&evs[i])
		b.push()
	}
	return b.events()
}

// Len returns the number of events.
func (h Events) Len() int { return len(h.rows) }

// At returns the i-th event. Its strings share h's memory; it allocates nothing.
func (h Events) At(i int) Event {
	r := &h.rows[i]
	if r.layout == layoutWide {
		return h.wide[r.x]
	}
	e := Event{ID: h.ids[r.id.off():r.id.end()], Type: Type(h.strs[r.typ]), Kind: Kind(h.strs[r.kind]),
		Node: h.strs[r.node], Time: r.time, Token: r.token, Events: int(r.events),
		Error: h.strs[r.err], Reason: h.strs[r.reason], Fault: h.strs[r.fault]}
	if r.layout == layoutLoad {
		e.Cursor = r.x
	} else {
		e.From, e.To = r.x, r.y
	}
	return e
}

// Time returns the time of the i-th event.
func (h Events) Time(i int) int64 { return h.rows[i].time }

// ID returns the id of the i-th event.
func (h Events) ID(i int) string { r := &h.rows[i]; return h.ids[r.id.off():r.id.end()] }

// All returns the events as a slice (a copy). For tests and small histories.
func (h Events) All() []Event {
	out := make([]Event, h.Len())
	for i := range out {
		out[i] = h.At(i)
	}
	return out
}

// SortedByTime reports whether the events are in time order.
func (h Events) SortedByTime() bool {
	return slices.IsSortedFunc(h.rows, func(a, b row) int { return cmp.Compare(a.time, b.time) })
}

// SortByTime returns the events ordered by time, keeping the order of equal times: h
// itself if it is already in order, else a sorted copy.
func (h Events) SortByTime() Events {
	if h.SortedByTime() {
		return h
	}
	s := Events{rows: slices.Clone(h.rows), ids: h.ids, strs: h.strs, wide: h.wide}
	slices.SortStableFunc(s.rows, func(a, b row) int { return cmp.Compare(a.time, b.time) })
	return s
}

// builder makes an Events. Each file of a run is read by a builder of its own, in
// parallel; merge joins them.
type builder struct {
	rows  []row
	ids   []byte
	strs  []string
	wide  []Event
	index map[string]uint32
	f     fields // the event being read
}

// internFixed are the strings every history holds, at the same index in every builder.
var internFixed = []string{"",
	string(Invoke), string(OK), string(Fail), string(Info),
	string(KindLoad), string(KindCommit), string(KindAcquire), string(KindRenew),
	string(KindRelease), string(KindStepDown), string(KindFault),
	ErrStaleToken, ErrCursorConflict, ErrNotHeld,
}

func newBuilder(n int) *builder {
	b := &builder{rows: make([]row, 0, n), strs: slices.Clone(internFixed), index: make(map[string]uint32, len(internFixed))}
	for i, s := range internFixed {
		b.index[s] = uint32(i)
	}
	return b
}

// intern returns the index of s in the table, adding it if it is new. The map lookup
// with string(key) does not allocate; only a new string is copied.
func (b *builder) intern(s []byte) uint32 {
	if i, ok := b.index[string(s)]; ok {
		return i
	}
	str := string(s)
	i := uint32(len(b.strs))
	b.strs = append(b.strs, str)
	b.index[str] = i
	return i
}

func (b *builder) internString(s string) uint32 {
	if i, ok := b.index[s]; ok {
		return i
	}
	i := uint32(len(b.strs))
	b.strs = append(b.strs, s)
	b.index[s] = i
	return i
}

// set makes e the event being read.
func (b *builder) set(e *Event) {
	off := len(b.ids)
	b.ids = append(b.ids, e.ID...)
	b.f = fields{time: e.Time, token: e.Token, from: e.From, to: e.To, cursor: e.Cursor,
		events: int64(e.Events), id: mkSpan(off, len(e.ID)),
		typ: b.internString(string(e.Type)), kind: b.internString(string(e.Kind)), node: b.internString(e.Node),
		err: b.internString(e.Error), reason: b.internString(e.Reason), fault: b.internString(e.Fault)}
}

// push appends the event being read, in the smallest layout that holds it.
func (b *builder) push() {
	f := &b.f
	r := row{time: f.time, token: f.token, id: f.id, node: f.node, err: f.err, reason: f.reason, fault: f.fault,
		events: int32(f.events), typ: uint8(f.typ), kind: uint8(f.kind)}
	fixed := f.typ < uint32(len(internFixed)) && f.kind < uint32(len(internFixed)) && int64(r.events) == f.events
	switch {
	case fixed && f.cursor == 0:
		r.layout, r.x, r.y = layoutCommit, f.from, f.to
	case fixed && f.from == 0 && f.to == 0:
		r.layout, r.x = layoutLoad, f.cursor
	default:
		r.layout, r.x, r.typ, r.kind = layoutWide, int64(len(b.wide)), 0, 0
		b.wide = append(b.wide, Event{ID: string(b.ids[f.id.off():f.id.end()]), Type: Type(b.strs[f.typ]),
			Kind: Kind(b.strs[f.kind]), Node: b.strs[f.node], Time: f.time, Token: f.token, From: f.from, To: f.to,
			Cursor: f.cursor, Events: int(f.events), Error: b.strs[f.err], Reason: b.strs[f.reason], Fault: b.strs[f.fault]})
	}
	b.rows = append(b.rows, r)
}

// decode parses one history line into the event being read: directly for lines of the
// shape Record writes, through encoding/json for anything else (so the event is always
// what json.Unmarshal gives).
func (b *builder) decode(line []byte) error {
	mark := len(b.ids)
	f := &b.f
	*f = fields{}
	ok := decodeFlat(line, func(key, str []byte, n int64, isStr bool) bool {
		if isStr {
			switch string(key) {
			case "id":
				f.id = mkSpan(len(b.ids), len(str))
				b.ids = append(b.ids, str...)
			case "type":
				f.typ = b.intern(str)
			case "kind":
				f.kind = b.intern(str)
			case "node":
				f.node = b.intern(str)
			case "error":
				f.err = b.intern(str)
			case "reason":
				f.reason = b.intern(str)
			case "fault":
				f.fault = b.intern(str)
			default:
				return false
			}
			return true
		}
		switch string(key) {
		case "time":
			f.time = n
		case "token":
			f.token = n
		case "from":
			f.from = n
		case "to":
			f.to = n
		case "cursor":
			f.cursor = n
		case "events":
			if int64(int(n)) != n {
				return false
			}
			f.events = n
		default:
			return false
		}
		return true
	})
	if ok {
		return nil
	}
	b.ids = b.ids[:mark] // an id the fast path appended
	var e Event
	if err := decodeEvent(line, &e); err != nil {
		return err
	}
	b.set(&e)
	return nil
}

// validate checks the event being read, as Event.Validate does.
func (b *builder) validate() error {
	r := &b.f
	if r.id.len() == 0 {
		return fmt.Errorf("%w: missing id", ErrMalformed)
	}
	if r.typ < 1 || r.typ > 4 {
		return fmt.Errorf("%w: unknown type %q", ErrMalformed, b.strs[r.typ])
	}
	if r.kind < 5 || r.kind > 11 {
		return fmt.Errorf("%w: unknown kind %q", ErrMalformed, b.strs[r.kind])
	}
	if r.time <= 0 || r.time > MaxTime {
		return fmt.Errorf("%w: time %d is outside 1..%d (host nanoseconds since 1970)", ErrMalformed, r.time, MaxTime)
	}
	return nil
}

// sortByTime orders the builder's events by time, keeping the order of equal times.
func (b *builder) sortByTime() {
	slices.SortStableFunc(b.rows, func(x, y row) int { return cmp.Compare(x.time, y.time) })
}

func (b *builder) events() Events {
	return Events{rows: b.rows, ids: string(b.ids), strs: b.strs, wide: b.wide}
}

// merge joins the events of several builders into one Events ordered by time, as a
// stable sort of their concatenation would order it. Each builder's events must be in
// time order. When every part still lies where the reader put it, in all (one slice for
// every file, part i at its counted place), the rows are moved within all, each
// towards its start: nothing a check holds is held twice.
func merge(parts []*builder, all []row, counts []int) Events {
	out := newBuilder(0)
	var ids strings.Builder
	n, nids := 0, 0
	inPlace := len(counts) == len(parts)
	for i, p := range parts {
		n += len(p.rows)
		nids += len(p.ids)
		// A part that outgrew its count (a file that grew since it was counted) was
		// reallocated, and moving it would overwrite the next part before it is read.
		inPlace = inPlace && len(p.rows) <= counts[i]
	}
	ids.Grow(nids)
	rows := all[:0]
	if !inPlace || cap(rows) < n {
		rows = make([]row, 0, n)
	}
	bounds := make([]int, 0, len(parts)+1)
	for _, p := range parts {
		// Type and kind need no remapping: a row holds only the fixed ones, at the same
		// index in every builder.
		remap := make([]uint32, len(p.strs))
		for i, s := range p.strs {
			remap[i] = out.internString(s)
		}
		base, wideBase := ids.Len(), int64(len(out.wide))
		ids.Write(p.ids)
		out.wide = append(out.wide, p.wide...)
		bounds = append(bounds, len(rows))
		for _, r := range p.rows {
			r.node, r.err, r.reason, r.fault = remap[r.node], remap[r.err], remap[r.reason], remap[r.fault]
			r.id = mkSpan(r.id.off()+base, r.id.len())
			if r.layout == layoutWide {
				r.x += wideBase
			}
			rows = append(rows, r) // within all: never ahead of what it reads
		}
	}
	bounds = append(bounds, len(rows))
	mergeRuns(rows, bounds)
	return Events{rows: rows, ids: ids.String(), strs: out.strs, wide: out.wide}
}

// mergeRuns orders rows by time, as a stable sort would, when rows[bounds[k]:bounds[k+1]]
// are each sorted by time. It merges the runs into a permutation (4 bytes a row) and
// applies it in place, moving each row once: a stable sort moves them many times, and a
// merge into a second slice would double the largest thing a check holds.
func mergeRuns(rows []row, bounds []int) {
	if len(bounds) <= 2 {
		return
	}
	pos := make([]int, len(bounds)-1) // next unmerged index of each run
	copy(pos, bounds[:len(bounds)-1])
	perm := make([]int32, len(rows)) // perm[i]: the index in rows of the i-th row in order
	for i := range perm {
		best := -1
		for k := range pos {
			if pos[k] < bounds[k+1] && (best < 0 || rows[pos[k]].time < rows[pos[best]].time) {
				best = k // strictly earlier only: equal times keep the order of the runs
			}
		}
		perm[i] = int32(pos[best])
		pos[best]++
	}
	// Apply the permutation by following its cycles: the slot i receives rows[perm[i]].
	for i := range perm {
		if perm[i] < 0 || int(perm[i]) == i {
			continue
		}
		tmp := rows[i]
		j := i
		for {
			k := int(perm[j])
			perm[j] = -1
			if k == i {
				rows[j] = tmp
				break
			}
			rows[j] = rows[k]
			j = k
		}
	}
}
