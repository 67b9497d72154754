package reports

import (
	"bytes"
	"cmp"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/internal/testfiles"
)

// TestTopOverlaps: keeping only the n longest gives the first n of a stable sort of
// them all, ties included.
func TestTopOverlaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := range 500 {
		ov := make([]checker.Overlap, rng.IntN(40))
		for i := range ov {
			ov[i] = checker.Overlap{TokenA: int64(i), Start: rng.Int64N(5), Duration: time.Duration(rng.IntN(4))}
		}
		want := slices.Clone(ov)
		slices.SortStableFunc(want, func(a, b checker.Overlap) int {
			return cmp.Or(cmp.Compare(b.Duration, a.Duration), cmp.Compare(a.Start, b.Start))
		})
		n := rng.IntN(12)
		want = want[:min(n, len(want))]
		v := &view{res: &checker.Result{Overlaps: ov}}
		if got := v.topOverlaps(n); !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("iteration %d, n=%d:\n got %v\nwant %v", iter, n, got, want)
		}
	}
}

// TestStreamJSON: the complete results, written a list item at a time, are the bytes
// json.Encoder gives for the whole, with every kind of field: empty and nil lists, an
// omitted and a present omitempty field, characters encoding/json escapes.
func TestStreamJSON(t *testing.T) {
	full := &Results{Schema: Schema, Verdict: checker.Invalid, Summary: "a <b> & \"c\" \u2028",
		Run:      RunSummary{Nodes: []string{"n1", "n2"}, Versions: map[string]string{"go": "1"}},
		Checks:   []Check{{Name: "x", Offending: []string{"o1", "<o2>"}, Stats: map[string]int64{"a": 1}}},
		Terms:    []Term{{Node: "n1", Token: 3}, {Node: "n2", EndReason: "é"}},
		Overlaps: []Overlap{{NodeA: "n1", NodeB: "n2", DurationNS: 5}}, Faults: []Fault{},
		Store: &StoreSummary{}, Files: nil, Full: FullResultsFile}
	for _, r := range []*Results{full, {}, {Schema: Schema, Windows: []Window{}, Changes: []LeaderChange{{OldNode: "a"}}}} {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(r); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := writeFullJSON(&got, r); err != nil {
			t.Fatal(err)
		}
		if b := testfiles.Gunzip(t, got.Bytes()); !bytes.Equal(b, want.Bytes()) {
			t.Errorf("streamed:\n%s\njson.Encoder:\n%s", b, want.Bytes())
		}
	}
}
