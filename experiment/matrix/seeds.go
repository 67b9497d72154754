//go:build chaos

package matrix

import (
	"errors"
	"fmt"
)

// Seeds is the seeds of a matrix: First, First+1, ..., First+Count-1, every row
// with each of them.
type Seeds struct {
	// First is the first seed (--seed). Default (0): 1.
	First int64
	// Count is how many seeds (--seeds), >= 1.
	Count int
}

// ErrSeeds is returned (wrapped) by Seeds.Check.
var ErrSeeds = errors.New("matrix: bad seeds")

// Check reports whether the seeds can be run: Count >= 1 and First >= 0 (0 is 1).
func (s Seeds) Check() error {
	switch {
	case s.Count < 1:
		return fmt.Errorf("%w: need --seeds >= 1 (got %d)", ErrSeeds, s.Count)
	case s.First < 0:
		return fmt.Errorf("%w: need --seed >= 1 (got %d)", ErrSeeds, s.First)
	}
	return nil
}

// From is the first seed: First, or 1 when First is 0.
func (s Seeds) From() int64 { return max(s.First, 1) }

// List returns the seeds in order.
func (s Seeds) List() []int64 {
	out := make([]int64, 0, max(s.Count, 0))
	for i := range max(s.Count, 0) {
		out = append(out, s.From()+int64(i))
	}
	return out
}

// Range is the seeds as the tables say them: "N..M" (also for one seed, "N..N").
func (s Seeds) Range() string {
	return fmt.Sprintf("%d..%d", s.From(), s.From()+int64(max(s.Count, 1))-1)
}
