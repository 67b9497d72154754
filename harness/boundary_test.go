package harness

import (
	"strconv"
	"testing"
)

// BoundaryStart: the same seed gives the same start; every start lies just below a
// boundary, so that a run crosses it: the token counter 2 below a power of ten (the
// first token has fewer digits than the second), the cursor within 1000
// events of its boundary or at 0; over many seeds every boundary is drawn.
func TestBoundaryStart(t *testing.T) {
	tokens, cursors := map[int64]int{}, map[int64]int{}
	for seed := int64(1); seed <= 300; seed++ {
		tok, cur := BoundaryStart(seed)
		if t2, c2 := BoundaryStart(seed); t2 != tok || c2 != cur {
			t.Fatalf("seed %d: %d/%d then %d/%d", seed, tok, cur, t2, c2)
		}
		// The first token is tok+1, below the boundary; the second is not: the
		// first leader change crosses it.
		if len(strconv.FormatInt(tok+1, 10)) == len(strconv.FormatInt(tok+2, 10)) {
			t.Errorf("seed %d: token counter %d: tokens %d and %d have as many digits", seed, tok, tok+1, tok+2)
		}
		found := false
		for _, b := range tokenBoundaries {
			if tok == b-2 {
				tokens[b]++
				found = true
			}
		}
		if !found {
			t.Errorf("seed %d: token counter %d is near no boundary", seed, tok)
		}
		found = false
		for _, b := range cursorBoundaries {
			if (b == 0 && cur == 0) || (b > 0 && cur < b && cur >= b-cursorSpread) {
				cursors[b]++
				found = true
			}
		}
		if !found {
			t.Errorf("seed %d: cursor %d is near no boundary", seed, cur)
		}
	}
	if len(tokens) != len(tokenBoundaries) || len(cursors) != len(cursorBoundaries) {
		t.Errorf("300 seeds drew token boundaries %v and cursor boundaries %v", tokens, cursors)
	}
}
