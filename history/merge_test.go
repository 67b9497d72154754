package history

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// TestMergeRuns: merging sorted runs in place orders events exactly as a stable sort of
// their concatenation does, equal times included.
func TestMergeRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		k := 1 + rng.IntN(6)
		var evs []Event
		bounds := []int{0}
		for r := range k {
			n := rng.IntN(30)
			run := make([]Event, n)
			for i := range run {
				run[i] = Event{ID: fmt.Sprintf("%d/%d", r, i), Time: 1 + rng.Int64N(20)}
			}
			SortByTime(run)
			evs = append(evs, run...)
			bounds = append(bounds, len(evs))
		}
		want := slices.Clone(evs)
		SortByTime(want)
		mergeRuns(evs, bounds)
		if !reflect.DeepEqual(evs, want) && len(evs) > 0 {
			t.Fatalf("merged %v\nwant %v", evs, want)
		}
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
