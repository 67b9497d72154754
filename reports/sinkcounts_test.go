package reports

import "testing"

// The store summary counts lost and duplicated events the way the exactly-once check
// finds them, so that a soak can sum them from results.json.
func TestSinkCounts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sink      []int64
		cursor    int64
		lost, dup int
	}{
		{"exact", []int64{1, 2, 3}, 3, 0, 0},
		{"empty", nil, 0, 0, 0},
		{"lost", []int64{1, 3}, 4, 2, 0},
		{"duplicated", []int64{1, 2, 2, 3, 1}, 3, 0, 2},
		{"both", []int64{2, 2, 5}, 5, 3, 1},
		{"beyond the cursor", []int64{1, 2, 9}, 2, 0, 0},
		{"huge cursor", []int64{1}, 1 << 40, 1<<31 - 1, 0},
	} {
		lost, dup := sinkCounts(tc.sink, tc.cursor)
		if lost != tc.lost || dup != tc.dup {
			t.Errorf("%s: sinkCounts(%v, %d) = %d lost, %d duplicated; want %d, %d", tc.name, tc.sink, tc.cursor, lost, dup, tc.lost, tc.dup)
		}
	}
}
