package backend

import (
	"io"
	"net"
	"testing"
	"time"
)

// A cut source's bytes are held back both ways, on the connection it had open and on
// new ones, while another source goes on talking; uncut, it talks again, and what was
// held back arrives.
func TestBusRelayCutsOneSource(t *testing.T) {
	t.Parallel()
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	go func() {
		for {
			c, err := echo.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	r, err := newBusRelay("127.0.0.1:0", echo.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	dial := func(src string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: time.Second}
		c, err := d.Dial("tcp", r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	talks := func(c net.Conn) bool {
		if _, err := c.Write([]byte("ping")); err != nil {
			return false
		}
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		b := make([]byte, 4)
		_, err := io.ReadFull(c, b)
		return err == nil && string(b) == "ping"
	}
	a, b := dial("127.0.0.11"), dial("127.0.0.12")
	if !talks(a) || !talks(b) {
		t.Fatal("no echo before the cut")
	}
	r.setCut("127.0.0.11", true)
	if talks(a) || talks(dial("127.0.0.11")) {
		t.Fatal("a cut source still talks")
	}
	if !talks(b) {
		t.Fatal("another source is cut too")
	}
	r.setCut("127.0.0.11", false)
	if !talks(dial("127.0.0.11")) {
		t.Fatal("an uncut source does not talk")
	}
	// What the cut held back arrives, in order, on the connection that was open.
	_ = a.SetReadDeadline(time.Now().Add(time.Second))
	held := make([]byte, 4)
	if _, err := io.ReadFull(a, held); err != nil || string(held) != "ping" {
		t.Fatalf("after the cut, the open connection reads %q, %v; want what was sent during it", held, err)
	}
	r.setCut("*", true)
	if talks(b) {
		t.Fatal("cut for every source, one still talks")
	}
}

func TestParseClusterNodes(t *testing.T) {
	t.Parallel()
	vs := parseClusterNodes(`07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 7 connected 0-5460 6000 [5461->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master,fail - 0 1426238316232 3 connected 10923-16383
`)
	if len(vs) != 3 {
		t.Fatalf("%d lines, want 3", len(vs))
	}
	me, ok := vs.self()
	if !ok || !me.master || me.epoch != 7 || me.addr != "127.0.0.1:30001" || len(me.slots) != 2 {
		t.Fatalf("myself: %+v", me)
	}
	if vs[0].master || vs[0].masterID != me.id || vs[0].addr != "127.0.0.1:30004" {
		t.Fatalf("replica: %+v", vs[0])
	}
	if !vs[2].has("fail") || vs.owner(6000) != "127.0.0.1:30001" || vs.owner(12000) != "127.0.0.1:30003" || vs.owner(5461) != "" {
		t.Fatalf("owners: %q %q %q", vs.owner(6000), vs.owner(12000), vs.owner(5461))
	}
}
