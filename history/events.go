package history

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
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
	rows  []row
	order []int32  // when not nil, the i-th event in time order is rows[order[i]]
	ids   []string // every event's id, in chunks (see arena)
	strs  []string // interned strings; strs[0] is ""
	wide  []Event  // the events no row layout fits (see layoutWide)
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

// fields is an event being read: its strings interned, its id in the builder's arena
// (or, while a line is parsed, still in the line: idb).
type fields struct {
	time, token, from, to, cursor, events, lease int64
	inEffectFrom, inEffectTo                     int64
	id                                           span
	idb                                          []byte
	typ, kind, node, err, reason, fault          uint32
}

// span locates a string in an arena: its chunk in the high 20 bits, its offset in the
// chunk in the next 22, its length in the low 22 (a line, so any id, is shorter than
// maxLine = 2^22 bytes).
type span uint64

const (
	spanBits  = 22
	spanMask  = 1<<spanBits - 1
	maxChunks = 1 << (64 - 2*spanBits)
)

func mkSpan(chunk, off, n int) span {
	return span(uint64(chunk)<<(2*spanBits) | uint64(off)<<spanBits | uint64(n))
}
func (s span) chunk() int { return int(s >> (2 * spanBits)) }
func (s span) off() int   { return int(s>>spanBits) & spanMask }
func (s span) end() int   { return s.off() + s.len() }
func (s span) len() int   { return int(s & spanMask) }

// rebase moves s to the chunk base chunks further on (merge joins the arenas of parts).
func (s span) rebase(base int) span { return s + span(uint64(base)<<(2*spanBits)) }

// arena holds many short strings (a run's ids) in chunks of chunkSize bytes, each one
// string once it is full: no slice that doubles as it grows, and no copy of the whole
// when it is done (a million-operation run has 17 MB of ids, which a doubling slice
// made 100 MB of allocations and two more copies).
type arena struct {
	chunks []string // sealed chunks
	cur    []byte   // the chunk being filled; its index is len(chunks)
}

const chunkSize = 1 << 20

// add copies s into the arena and returns where it is.
func (a *arena) add(s []byte) span {
	if len(a.cur)+len(s) > cap(a.cur) || len(a.cur)+len(s) > spanMask {
		a.seal()
		if n := max(chunkSize, len(s)); cap(a.cur) < n {
			a.cur = make([]byte, 0, n)
		}
	}
	if len(a.chunks) >= maxChunks || len(s) > spanMask {
		panic("history: arena overflow") // 2^20 chunks of 1 MiB, or a string longer than a line
	}
	sp := mkSpan(len(a.chunks), len(a.cur), len(s))
	a.cur = append(a.cur, s...)
	return sp
}

// seal turns the chunk being filled into a string and starts a new one in its buffer.
func (a *arena) seal() {
	if len(a.cur) > 0 {
		a.chunks = append(a.chunks, string(a.cur))
		a.cur = a.cur[:0]
	}
}

// str returns the string at sp; it allocates only for one in the unsealed chunk.
func str(chunks []string, cur []byte, sp span) string {
	if sp.len() == 0 {
		return ""
	}
	if c := sp.chunk(); c < len(chunks) {
		return chunks[c][sp.off():sp.end()]
	}
	return string(cur[sp.off():sp.end()])
}

// done seals the arena and returns its chunks.
func (a *arena) done() []string {
	a.seal()
	return a.chunks
}

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
func (h Events) Len() int {
	if h.order != nil {
		return len(h.order)
	}
	return len(h.rows)
}

// Until returns the events at or before time t, h being in time order (SortByTime): a
// view of the same rows.
func (h Events) Until(t int64) Events {
	n := sort.Search(h.Len(), func(i int) bool { return h.row(i).time > t })
	if h.order != nil {
		return Events{rows: h.rows, order: h.order[:n:n], ids: h.ids, strs: h.strs, wide: h.wide}
	}
	return Events{rows: h.rows[:n:n], ids: h.ids, strs: h.strs, wide: h.wide}
}

// row returns the i-th event's row.
func (h Events) row(i int) *row {
	if h.order != nil {
		return &h.rows[h.order[i]]
	}
	return &h.rows[i]
}

// At returns the i-th event. Its strings share h's memory; it allocates nothing.
func (h Events) At(i int) Event {
	r := h.row(i)
	if r.layout == layoutWide {
		return h.wide[r.x]
	}
	e := Event{ID: str(h.ids, nil, r.id), Type: Type(h.strs[r.typ]), Kind: Kind(h.strs[r.kind]),
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
func (h Events) Time(i int) int64 { return h.row(i).time }

// Type returns the type of the i-th event.
func (h Events) Type(i int) Type {
	r := h.row(i)
	if r.layout == layoutWide {
		return h.wide[r.x].Type
	}
	return Type(h.strs[r.typ])
}

// Kind returns the kind of the i-th event.
func (h Events) Kind(i int) Kind {
	r := h.row(i)
	if r.layout == layoutWide {
		return h.wide[r.x].Kind
	}
	return Kind(h.strs[r.kind])
}

// ID returns the id of the i-th event.
func (h Events) ID(i int) string {
	r := h.row(i)
	if r.layout == layoutWide {
		return h.wide[r.x].ID
	}
	return str(h.ids, nil, r.id)
}

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
	for i := 1; i < h.Len(); i++ {
		if h.row(i).time < h.row(i-1).time {
			return false
		}
	}
	return true
}

// SortByTime returns the events ordered by time, keeping the order of equal times: h
// itself if it is already in order, else a sorted view of the same rows (4 bytes an
// event).
func (h Events) SortByTime() Events {
	if h.SortedByTime() {
		return h
	}
	order := make([]int32, h.Len())
	for i := range order {
		order[i] = int32(i)
		if h.order != nil {
			order[i] = h.order[i]
		}
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmp.Compare(h.rows[a].time, h.rows[b].time) })
	return Events{rows: h.rows, order: order, ids: h.ids, strs: h.strs, wide: h.wide}
}

// builder makes an Events. Each file of a run is read by a builder of its own, in
// parallel; merge joins them.
type builder struct {
	rows     []row
	ids      arena
	strs     []string
	wide     []Event
	index    map[string]uint32
	lastNode uint32 // the node of the last line: a node's file names one node throughout
	f        fields // the event being read
}

// internFixed are the strings every history holds, at the same index in every builder.
var internFixed = []string{"",
	string(Invoke), string(OK), string(Fail), string(Info),
	string(KindLoad), string(KindCommit), string(KindAcquire), string(KindRenew),
	string(KindRelease), string(KindStepDown), string(KindFault), string(KindWrite),
	ErrStaleToken, ErrCursorConflict, ErrNotHeld, ErrBodyFailed,
}

// The indices of the types and the kinds in internFixed.
const (
	fixedTypeLo, fixedTypeHi = 1, 4
	fixedKindLo, fixedKindHi = 5, 12
)

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
	return b.add(string(s))
}

func (b *builder) internString(s string) uint32 {
	if i, ok := b.index[s]; ok {
		return i
	}
	return b.add(s)
}

// add appends s, which is not in the table, and returns its index.
func (b *builder) add(s string) uint32 {
	i := uint32(len(b.strs))
	b.strs = append(b.strs, s)
	b.index[s] = i
	return i
}

// set makes e the event being read.
func (b *builder) set(e *Event) {
	b.f = fields{time: e.Time, token: e.Token, from: e.From, to: e.To, cursor: e.Cursor,
		events: int64(e.Events), lease: e.Lease, inEffectFrom: e.InEffectFrom, inEffectTo: e.InEffectTo, id: b.ids.add([]byte(e.ID)),
		typ: b.internString(string(e.Type)), kind: b.internString(string(e.Kind)), node: b.internString(e.Node),
		err: b.internString(e.Error), reason: b.internString(e.Reason), fault: b.internString(e.Fault)}
}

// push appends the event being read, in the smallest layout that holds it.
func (b *builder) push() {
	f := &b.f
	r := row{time: f.time, token: f.token, id: f.id, node: f.node, err: f.err, reason: f.reason, fault: f.fault,
		events: int32(f.events), typ: uint8(f.typ), kind: uint8(f.kind)}
	fixed := f.typ < uint32(len(internFixed)) && f.kind < uint32(len(internFixed)) && int64(r.events) == f.events &&
		f.lease == 0 && f.inEffectFrom == 0 && f.inEffectTo == 0 // a step-down that counts its lease, a fault's interval (rare): kept whole
	switch {
	case fixed && f.cursor == 0:
		r.layout, r.x, r.y = layoutCommit, f.from, f.to
	case fixed && f.from == 0 && f.to == 0:
		r.layout, r.x = layoutLoad, f.cursor
	default:
		r.layout, r.x, r.typ, r.kind = layoutWide, int64(len(b.wide)), 0, 0
		b.wide = append(b.wide, Event{ID: str(b.ids.chunks, b.ids.cur, f.id), Type: Type(b.strs[f.typ]),
			Kind: Kind(b.strs[f.kind]), Node: b.strs[f.node], Time: f.time, Token: f.token, From: f.from, To: f.to,
			Cursor: f.cursor, Events: int(f.events), Error: b.strs[f.err], Reason: b.strs[f.reason], Fault: b.strs[f.fault],
			Lease: f.lease, InEffectFrom: f.inEffectFrom, InEffectTo: f.inEffectTo})
	}
	b.rows = append(b.rows, r)
}

// decode parses one history line into the event being read: directly for lines of the
// shape Record writes (a flat object of known keys with plain strings and integers),
// through encoding/json for anything else (escapes, other keys, floats, null), so the
// event is always what json.Unmarshal gives. Histories are large (a million operations
// is two million lines), so the direct path looks up the strings that repeat on every
// line (type, kind, node) without hashing them.
func (b *builder) decode(line []byte) error {
	f := &b.f
	*f = fields{}
	ok := decodeFlat(line, func(key, str []byte, n int64, isStr bool) bool {
		if isStr {
			switch string(key) {
			case "id":
				f.idb = str
			case "type":
				f.typ = b.fixed(str, fixedTypeLo, fixedTypeHi)
			case "kind":
				f.kind = b.fixed(str, fixedKindLo, fixedKindHi)
			case "node":
				if string(str) != b.strs[b.lastNode] {
					b.lastNode = b.intern(str)
				}
				f.node = b.lastNode
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
		case "lease_ns":
			f.lease = n
		case "in_effect_from":
			f.inEffectFrom = n
		case "in_effect_to":
			f.inEffectTo = n
		default:
			return false
		}
		return true
	})
	if ok {
		f.id, f.idb = b.ids.add(f.idb), nil
		return nil
	}
	var e Event
	if err := json.Unmarshal(line, &e); err != nil {
		return err
	}
	b.set(&e)
	return nil
}

// fixed interns s, looking first among internFixed[lo..hi] (the types, or the kinds).
func (b *builder) fixed(s []byte, lo, hi uint32) uint32 {
	for i := lo; i <= hi; i++ {
		if string(s) == internFixed[i] {
			return i
		}
	}
	return b.intern(s)
}

// decodeEvent parses one history line as LoadRun does.
func decodeEvent(line []byte, e *Event) error {
	b := newBuilder(1)
	if err := b.decode(line); err != nil {
		return err
	}
	b.push()
	*e = b.events().At(0)
	return nil
}

// validate checks the event being read, as Event.Validate does.
func (b *builder) validate() error {
	r := &b.f
	if r.id.len() == 0 {
		return fmt.Errorf("%w: missing id", ErrMalformed)
	}
	if r.typ < fixedTypeLo || r.typ > fixedTypeHi {
		return fmt.Errorf("%w: unknown type %q", ErrMalformed, b.strs[r.typ])
	}
	if r.kind < fixedKindLo || r.kind > fixedKindHi {
		return fmt.Errorf("%w: unknown kind %q", ErrMalformed, b.strs[r.kind])
	}
	if r.time <= 0 || r.time > MaxTime {
		return fmt.Errorf("%w: time %d is outside 1..%d (host nanoseconds since 1970)", ErrMalformed, r.time, MaxTime)
	}
	kind := Kind(b.strs[r.kind])
	if r.lease < 0 || r.lease != 0 && kind != KindStepDown {
		return leaseError(r.lease, kind)
	}
	return inEffectError(r.inEffectFrom, r.inEffectTo, kind, Type(b.strs[r.typ]))
}

// sortByTime orders the builder's events by time, keeping the order of equal times.
func (b *builder) sortByTime() {
	slices.SortStableFunc(b.rows, func(x, y row) int { return cmp.Compare(x.time, y.time) })
}

func (b *builder) events() Events {
	return Events{rows: b.rows, ids: b.ids.done(), strs: b.strs, wide: b.wide}
}

// merge joins the events of several builders into one Events ordered by time, as a
// stable sort of their concatenation would order it. Each builder's events must be in
// time order. When every part still lies where the reader put it, in all (one slice for
// every file, part i at its counted place), the rows are moved within all, each
// towards its start: nothing a check holds is held twice. The rows stay in file order;
// the time order is a permutation beside them (Events.order, 4 bytes a row), which is
// much cheaper than moving 64-byte rows to random places, and walking them in time
// order reads each file's rows in sequence.
func merge(parts []*builder, all []row, counts []int) Events {
	out := newBuilder(0)
	var chunks []string
	n := 0
	inPlace := len(counts) == len(parts)
	for i, p := range parts {
		n += len(p.rows)
		// A part that outgrew its count (a file that grew since it was counted) was
		// reallocated, and moving it would overwrite the next part before it is read.
		inPlace = inPlace && len(p.rows) <= counts[i]
	}
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
		base, wideBase := len(chunks), int64(len(out.wide))
		chunks = append(chunks, p.ids.done()...)
		out.wide = append(out.wide, p.wide...)
		bounds = append(bounds, len(rows))
		for _, r := range p.rows {
			r.node, r.err, r.reason, r.fault = remap[r.node], remap[r.err], remap[r.reason], remap[r.fault]
			r.id = r.id.rebase(base)
			if r.layout == layoutWide {
				r.x += wideBase
			}
			rows = append(rows, r) // within all: never ahead of what it reads
		}
	}
	bounds = append(bounds, len(rows))
	return Events{rows: rows, order: mergeOrder(rows, bounds), ids: chunks, strs: out.strs, wide: out.wide}
}

// mergeOrder returns the order of rows by time, as a stable sort would give it, when
// rows[bounds[k]:bounds[k+1]] are each sorted by time; nil when rows are in order
// already.
func mergeOrder(rows []row, bounds []int) []int32 {
	if len(bounds) <= 2 {
		return nil
	}
	sorted := true
	for k := 1; k+1 < len(bounds) && sorted; k++ {
		sorted = bounds[k] == 0 || bounds[k] == len(rows) || rows[bounds[k]-1].time <= rows[bounds[k]].time
	}
	if sorted {
		return nil // each part ends before the next begins
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
	return perm
}
