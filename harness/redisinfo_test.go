package harness

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
)

// The peak grows with what Redis held, and survives its deletion.
func TestRedisPeakMemory(t *testing.T) {
	srv := redisserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before, err := RedisPeakMemory(ctx, srv.Addr())
	if err != nil || before <= 0 {
		t.Fatalf("RedisPeakMemory = %d, %v; want > 0", before, err)
	}
	c := election.NewClient(srv.Addr())
	defer c.Close()
	big := strings.Repeat("x", 8<<20)
	if err := c.Set(ctx, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Del(ctx, "big").Err(); err != nil {
		t.Fatal(err)
	}
	after, err := RedisPeakMemory(ctx, srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	if after < before+8<<20 {
		t.Errorf("peak after an 8 MB value came and went: %d bytes, before %d; want at least 8 MB more", after, before)
	}
}

func TestRedisPeakMemoryNoRedis(t *testing.T) {
	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := RedisPeakMemory(ctx, "127.0.0.1:"+strconv.Itoa(port)); err == nil {
		t.Fatal("RedisPeakMemory of a closed port: no error")
	}
}

func TestParsePeakMemory(t *testing.T) {
	for _, tc := range []struct {
		info string
		want int64
		ok   bool
	}{
		{"# Memory\r\nused_memory:1000\r\nused_memory_peak:2048\r\nused_memory_peak_human:2K\r\n", 2048, true},
		{"# Memory\r\nused_memory:1000\r\n", 0, false},
		{"used_memory_peak:lots\r\n", 0, false},
		{"used_memory_peak:-5\r\n", 0, false},
		{"", 0, false},
	} {
		got, err := parsePeakMemory(tc.info)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("parsePeakMemory(%q) = %d, %v; want %d", tc.info, got, err, tc.want)
		}
		if !tc.ok && !errors.Is(err, ErrNoPeakMemory) {
			t.Errorf("parsePeakMemory(%q) = %d, %v; want ErrNoPeakMemory", tc.info, got, err)
		}
	}
}
