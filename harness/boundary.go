package harness

import "math/rand/v2"

// Boundary starts. A fresh store starts its token counter and its cursor at 0, and a
// 60-second run never gets far from there, so a bug that shows only past some magnitude
// (tokens compared as strings, a 32-bit field, a double) never shows. A deployment that
// has lived a little is far past 0. BoundaryStart puts a run just below a boundary, so
// that it crosses it within its first leader changes (tokens) or its first seconds
// (cursor).
//
// The token counter is always placed a few tokens below a power of ten: that is where a
// comparison of decimal strings goes wrong ("10" < "9"), and the magnitudes are chosen
// around the other limits: 10^9 (near 2^30), 10^10 (beyond 2^32: no 32-bit field holds
// it) and 10^16 (beyond 2^53: a double no longer tells neighbouring tokens apart). The
// cursor is placed below a binary limit, 2^31, 2^32 or 2^53, or a power of ten, or at 0
// (a fresh store).
var (
	// tokenBoundaries: the counter starts 2 below one of these, so the first token
	// issued is 1 below it and the second term's is the boundary: the tokens change
	// their number of digits at the run's first leader change. (Starting lower spread
	// the crossing over the second to fourth terms, and string-compare's median time
	// to its first violation in make validate from about 3 s to 14 s; 1 below issues the
	// boundary first, and no two tokens of the run differ in digits.)
	tokenBoundaries = []int64{10, 100, 1e9, 1e10, 1e16}
	// cursorBoundaries: the cursor starts up to cursorSpread events below one of
	// these (0: a fresh store).
	cursorBoundaries = []int64{0, 10, 100, 1 << 31, 1 << 32, 1 << 53}
)

// cursorSpread bounds how far below its boundary the cursor starts: about 2.5 s of
// the listener workload's 400 events per second.
const cursorSpread = 1000

// BoundaryStart returns the token counter and the cursor a run of this seed starts
// with. The same seed gives the same start; it draws from a stream of its own, so the
// fault schedule of a seed is the same with or without it.
func BoundaryStart(seed int64) (token, cursor int64) {
	r := rand.New(rand.NewPCG(uint64(seed), 0x626f756e64617279)) // "boundary"
	tb := tokenBoundaries[r.IntN(len(tokenBoundaries))]
	token = tb - 2
	cb := cursorBoundaries[r.IntN(len(cursorBoundaries))]
	if cb > 0 {
		cursor = cb - 1 - r.Int64N(min(cb, cursorSpread))
	}
	return token, cursor
}
