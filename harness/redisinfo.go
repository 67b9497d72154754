package harness

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/fenceline/fenceline/election"
)

// ErrNoPeakMemory is returned (wrapped) when Redis's INFO has no usable
// used_memory_peak.
var ErrNoPeakMemory = errors.New("harness: no used_memory_peak in INFO memory")

// RedisPeakMemory returns Redis's used_memory_peak in bytes: the most memory its
// allocator held since it started (a restart resets it). It blocks for one round trip,
// bounded by ctx and the client's timeouts.
func RedisPeakMemory(ctx context.Context, addr string) (int64, error) {
	c := election.NewClient(addr)
	defer c.Close()
	info, err := c.Info(ctx, "memory").Result()
	if err != nil {
		return 0, fmt.Errorf("harness: INFO memory: %w", err)
	}
	return parsePeakMemory(info)
}

// parsePeakMemory reads used_memory_peak from the text of INFO memory.
func parsePeakMemory(info string) (int64, error) {
	for line := range strings.Lines(info) {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory_peak:")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%w: %q", ErrNoPeakMemory, v)
		}
		return n, nil
	}
	return 0, ErrNoPeakMemory
}
