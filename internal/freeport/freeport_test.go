package freeport

import (
	"net"
	"strconv"
	"testing"
)

func TestGetAvoidsEphemeralRangeAndRepeats(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 200 {
		p, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		if p < lowest || p >= low {
			t.Fatalf("port %d outside [%d, %d)", p, lowest, low)
		}
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
}

func TestGetSkipsBoundPort(t *testing.T) {
	// Hold many ports of the range: Get must never return one of them.
	held := map[int]bool{}
	for range 50 {
		p, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		held[p] = true
	}
	// Forget that they were issued, so only the bind check keeps them out.
	mu.Lock()
	for p := range held {
		delete(issued, p)
	}
	mu.Unlock()
	for range 2000 {
		p, err := Get()
		if err != nil {
			t.Fatal(err)
		}
		if held[p] {
			t.Fatalf("Get returned port %d, which is bound", p)
		}
	}
}
