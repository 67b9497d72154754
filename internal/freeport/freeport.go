// Package freeport hands out TCP ports on 127.0.0.1 for servers the harness starts as
// separate processes (redis-server, postgres), which must be told a port before they
// bind it.
//
// Asking the kernel for port 0 and closing the listener is not enough: such a port comes
// from the ephemeral range, which every outgoing connection on the machine draws from
// too, so between the close and the server's bind a client socket can take it (seen in
// CI: "bind: Address already in use" while other test packages ran chaos runs). Ports
// here come from below the ephemeral range instead, where only listeners live, are
// checked free by binding them, and are never handed out twice by one process.
package freeport

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowest port handed out: above the well-known and most registered service ports.
const lowest = 15000

var (
	mu     sync.Mutex
	issued = map[int]bool{}
)

// Get returns a port on 127.0.0.1 that was free a moment ago and that this process has
// not handed out before.
func Get() (int, error) {
	hi := ephemeralLow() - 1
	if hi <= lowest {
		return 0, errors.New("freeport: no ports below the ephemeral range")
	}
	mu.Lock()
	defer mu.Unlock()
	for range 1000 {
		p := lowest + rand.IntN(hi-lowest+1)
		if issued[p] {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		issued[p] = true
		return p, nil
	}
	return 0, fmt.Errorf("freeport: no free port in %d-%d after 1000 tries", lowest, hi)
}

// InUse reports whether a server's start failed because its port was taken, so the
// caller can try again on another port.
func InUse(log string) bool {
	return strings.Contains(log, "Address already in use")
}

// Start runs start on port or, if port is 0, on a port from Get. A port picked here can
// still be taken before the server binds it: if start fails for that (InUse), Start
// tries again on another, three times in all. It returns start's last error.
func Start(port int, start func(port int) error) error {
	pick := port == 0
	for attempt := 1; ; attempt++ {
		if pick {
			p, err := Get()
			if err != nil {
				return err
			}
			port = p
		}
		err := start(port)
		if err == nil || !pick || attempt == 3 || !InUse(err.Error()) {
			return err
		}
	}
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768 on Linux by
// default).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 0 {
				return n
			}
		}
	}
	return 32768
}
