//go:build chaos

package soak

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadShard is returned (wrapped, with the offending text) by ParseShard.
var ErrBadShard = errors.New("soak: bad shard")

// Shard is the I-th (1-based) of N disjoint slices of a soak's run indices. The zero
// Shard is the whole soak (1/1).
type Shard struct{ I, N int }

// ParseShard parses "i/N" with 1 <= i <= N. An empty string is the whole soak.
func ParseShard(s string) (Shard, error) {
	if strings.TrimSpace(s) == "" {
		return Shard{1, 1}, nil
	}
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("%w %q: want i/N with 1 <= i <= N, e.g. 1/2", ErrBadShard, s)
	}
	return Shard{i, n}, nil
}

func (s Shard) norm() Shard {
	if s.N < 1 {
		return Shard{1, 1}
	}
	return s
}

// String returns "i/N".
func (s Shard) String() string {
	s = s.norm()
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Whole reports whether the shard is the whole soak.
func (s Shard) Whole() bool { return s.norm().N == 1 }

// Indices returns the run indices of the shard among runs runs, in increasing order:
// every j in [0, runs) with j mod N = I-1.
func (s Shard) Indices(runs int) []int {
	s = s.norm()
	var out []int
	for j := s.I - 1; j < runs; j += s.N {
		out = append(out, j)
	}
	return out
}

// SeedOf returns the seed of run index of a soak with base seed seed0.
func SeedOf(seed0 int64, index int) int64 { return seed0 + int64(index) }
