package history

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"unsafe"
)

// TestMerge: merging time-ordered parts (each with its own string table and id arena)
// gives exactly the events of a stable sort of their concatenation, equal times
// included, whether the rows are moved within one slice or into a new one.
func TestMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 2000 {
		k := 1 + rng.IntN(6)
		var evs []Event
		var parts []*builder
		counts := make([]int, k)
		for r := range k {
			counts[r] = rng.IntN(30)
		}
		total := 0
		for _, c := range counts {
			total += c
		}
		all := make([]row, total)
		off := 0
		for r := range k {
			n := counts[r]
			if iter%5 == 0 && r == 0 {
				n += 3 // a file that grew since it was counted: its part is reallocated
			}
			run := make([]Event, n)
			for i := range run {
				// Cursor and from/to both set now and then: a wide event, which every
				// part numbers from 0.
				run[i] = Event{ID: fmt.Sprintf("%d/%d", r, i), Type: OK, Kind: KindLoad, Node: fmt.Sprintf("n%d", rng.IntN(3)+r),
					Time: 1 + rng.Int64N(20), Cursor: rng.Int64N(5), From: rng.Int64N(3) / 2, To: rng.Int64N(2), Reason: fmt.Sprintf("r%d", rng.IntN(2))}
			}
			SortByTime(run)
			evs = append(evs, run...)
			b := newBuilder(0)
			b.rows = all[off : off : off+counts[r]]
			off += counts[r]
			for i := range run {
				b.set(&run[i])
				b.push()
			}
			parts = append(parts, b)
		}
		want := slices.Clone(evs)
		SortByTime(want)
		got := merge(parts, all, counts).All()
		if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
			t.Fatalf("merged %v\nwant %v", got, want)
		}
	}
}

// TestPack: an event survives Pack and At unchanged, in every row layout, every field
// and odd strings included.
func TestPack(t *testing.T) {
	evs := []Event{
		{ID: "a", Type: Invoke, Kind: KindCommit, Node: "n1", Time: 1, Token: -3, From: 4, To: 5, Events: 7},
		{ID: "a", Type: Fail, Kind: KindCommit, Node: "n1", Time: 2, Error: ErrStaleToken, Cursor: 9},
		{ID: "é\"x", Type: "weird", Kind: "odd", Node: "", Time: -1, Reason: "why", Fault: "pause"},
		{},
		{ID: "l", Type: OK, Kind: KindLoad, Node: "n2", Time: 3, Token: 2, Cursor: 1 << 40},
		{ID: "c", Type: OK, Kind: KindCommit, Node: "n2", Time: 4, From: 1, To: 2, Cursor: 3, Events: 1 << 40},
		{ID: "e", Type: Invoke, Kind: KindCommit, Node: "n2", Time: 5, Events: -1 << 33},
	}
	p := Pack(evs)
	if p.Len() != len(evs) || !reflect.DeepEqual(p.All(), evs) {
		t.Fatalf("Pack/All: %+v\nwant %+v", p.All(), evs)
	}
	wide := 0
	for _, r := range p.rows {
		if r.layout == layoutWide {
			wide++
		}
	}
	if wide != 3 || len(p.wide) != 3 {
		t.Errorf("%d wide rows, %d wide events; want 3 (an unknown type and kind, cursor with from, events beyond int32)", wide, len(p.wide))
	}
	if n := unsafe.Sizeof(row{}); n != 64 {
		t.Errorf("a row takes %d bytes, want 64", n)
	}
	for i := range evs {
		if p.Kind(i) != evs[i].Kind || p.Type(i) != evs[i].Type || p.ID(i) != evs[i].ID {
			t.Errorf("event %d: Kind %q, Type %q, ID %q; want %q, %q, %q", i, p.Kind(i), p.Type(i), p.ID(i), evs[i].Kind, evs[i].Type, evs[i].ID)
		}
	}
	if p.ID(2) != evs[2].ID || p.Time(1) != 2 {
		t.Errorf("ID(2) = %q, Time(1) = %d", p.ID(2), p.Time(1))
	}
	if s := Pack([]Event{{Time: 3}, {Time: 1, ID: "x"}, {Time: 1, ID: "y"}}).SortByTime().All(); s[0].ID != "x" || s[1].ID != "y" || s[2].Time != 3 {
		t.Errorf("SortByTime: %+v", s)
	}
}

// FuzzParseInts: the sink's fast path gives what encoding/json gives, or defers to it.
func FuzzParseInts(f *testing.F) {
	for _, s := range []string{`[]`, `[1,2,3]`, ` [ 1 , -2 ] `, `null`, `[1.0]`, `[01]`, `[9223372036854775807]`, `[9223372036854775808]`, `[1,]`, `[1 2]`, `{}`, `[1e3]`, `[-0]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseInts(b)
		if !ok {
			return
		}
		var want []int64
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%q: parsed %v, but encoding/json says %v", b, got, err)
		}
		if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0 && (got == nil) == (want == nil)) {
			t.Fatalf("%q: parsed %#v, encoding/json %#v", b, got, want)
		}
	})
}

// Until keeps the events at or before a time, in a packed history and in a sorted view of
// one alike.
func TestUntil(t *testing.T) {
	ev := func(id string, at int64) Event {
		return Event{ID: id, Type: Invoke, Kind: KindLoad, Node: "n1", Time: at}
	}
	sorted := Pack([]Event{ev("a", 1), ev("b", 2), ev("c", 2), ev("d", 5)})
	view := Pack([]Event{ev("d", 5), ev("b", 2), ev("a", 1), ev("c", 2)}).SortByTime()
	for name, h := range map[string]Events{"packed": sorted, "sorted view": view} {
		for _, c := range []struct {
			t    int64
			want string
		}{{0, ""}, {1, "a"}, {2, "abc"}, {4, "abc"}, {9, "abcd"}} {
			got := ""
			u := h.Until(c.t)
			for i := range u.Len() {
				got += u.At(i).ID
			}
			if got != c.want {
				t.Errorf("%s: Until(%d) = %q, want %q", name, c.t, got, c.want)
			}
		}
	}
}
