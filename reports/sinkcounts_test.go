package reports

import (
	"math"
	"testing"

	"github.com/fenceline/fenceline/checker"
	"github.com/fenceline/fenceline/history"
)

// seq returns events lo..hi in order.
func seq(lo, hi int64) []int64 {
	var s []int64
	for i := lo; i <= hi; i++ {
		s = append(s, i)
	}
	return s
}

// The store summary counts lost and duplicated events the way the exactly-once check
// finds them, from the run's start cursor (events start+1..cursor are the run's to
// apply), so that a soak can sum them from results.json.
func TestSinkCounts(t *testing.T) {
	const (
		int32Max = math.MaxInt32
		near53   = 1<<53 - 1000
	)
	for _, tc := range []struct {
		name          string
		sink          []int64
		start, cursor int64
		lost, dup     int64
	}{
		{"exact", []int64{1, 2, 3}, 0, 3, 0, 0},
		{"empty", nil, 0, 0, 0, 0},
		{"lost", []int64{1, 3}, 0, 4, 2, 0},
		{"duplicated", []int64{1, 2, 2, 3, 1}, 0, 3, 0, 2},
		{"both", []int64{2, 2, 5}, 0, 5, 3, 1},
		{"beyond the cursor", []int64{1, 2, 9}, 0, 2, 0, 0},
		{"repeated beyond the cursor", []int64{1, 2, 9, 9}, 0, 2, 0, 0},
		{"repeated at the start", []int64{9, 9, 10, 11}, 9, 11, 0, 0},
		{"applied three times", []int64{1, 2, 2, 2, 3}, 0, 3, 0, 2},
		// A cursor far beyond a short sink loses that many events: never clamped.
		{"huge cursor", []int64{1}, 0, 1 << 40, 1<<40 - 1, 0},
		// The run began at a start cursor: only events after it are the run's.
		{"start 0, lost beyond int32", seq(1, 3), 0, 1 << 32, 1<<32 - 3, 0},
		{"start 9", seq(10, 14), 9, 14, 0, 0},
		{"start 9, an event at the start is not the run's", seq(9, 14), 9, 14, 0, 0},
		{"start 2^31-1", seq(int32Max+1, int32Max+4), int32Max, int32Max + 4, 0, 0},
		{"start 2^53-1000", seq(near53+1, near53+20), near53, near53 + 20, 0, 0},
		{"cursor == start, nothing applied", nil, near53, near53, 0, 0},
		{"cursor == start 9", nil, 9, 9, 0, 0},
		// A real gap (event start+2) and a real duplicate (start+1) near the start.
		{"gap and duplicate near 2^53", []int64{near53 + 1, near53 + 1, near53 + 3, near53 + 4}, near53, near53 + 4, 1, 1},
		{"gap and duplicate near 2^31", []int64{int32Max + 1, int32Max + 3, int32Max + 3}, int32Max, int32Max + 3, 1, 1},
	} {
		lost, dup := sinkCounts(tc.sink, tc.start, tc.cursor)
		if lost != tc.lost || dup != tc.dup {
			t.Errorf("%s: sinkCounts(%d entries, start %d, cursor %d) = %d lost, %d duplicated; want %d, %d",
				tc.name, len(tc.sink), tc.start, tc.cursor, lost, dup, tc.lost, tc.dup)
		}
	}
}

// results.json takes the start cursor from run.json: a valid run that began near 2^53
// lost nothing.
func TestResultsCountSinkFromStartCursor(t *testing.T) {
	start := int64(1<<53 - 1000)
	run := &history.Run{Info: history.RunInfo{StartCursor: start},
		Store: &history.Store{Cursor: start + 3, Sink: seq(start+1, start+3)}}
	v, err := newView(run, &checker.Result{Verdict: checker.Valid})
	if err != nil {
		t.Fatal(err)
	}
	r := v.results(v.limit)
	if r.Store.SinkLost != 0 || r.Store.SinkDuplicated != 0 {
		t.Errorf("store %+v: a run that applied events start+1..cursor once lost or duplicated some", *r.Store)
	}
}
