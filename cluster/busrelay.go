package cluster

import (
	"net"
	"sync"
	"time"
)

// busRelay forwards one cluster node's bus port and can blackhole it per source.
//
// Why not a toxiproxy proxy, as for every other link: a cluster node announces one bus
// address that every other node connects to, so a toxic on it cuts the node's inbound
// bus from everyone, and cuts nothing of its outbound bus. Redis Cluster takes any
// packet received from a node as proof that it is alive (data_received), so a primary
// cut off that way goes on pinging the others, is never marked failing, and no replica
// is promoted. To cut a primary off from the other nodes in both directions, the relay
// of every other node must drop what comes from that primary alone. Each data node
// sends from an address of its own (bind-source-addr, one of 127.0.0.0/8), by which
// the relay knows the sender.
//
// A cut connection stays open and carries nothing: the relay stops reading it, so its
// bytes wait in the kernel and then the sender, as behind a switch that drops every
// packet while TCP retransmits. When the cut is lifted they arrive in order. (Dropping
// them, as toxiproxy's timeout toxic does, would leave a stream with a hole in it after
// the heal: the cluster bus then reads garbage until the link is dropped, which made a
// healed cluster take up to 20 s to settle.)
type busRelay struct {
	ln       net.Listener
	upstream string

	mu    sync.Mutex
	cut   map[string]bool // source IP whose connections carry nothing; "*": every source
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// newBusRelay listens on 127.0.0.1 (a port of its own) and relays to upstream.
func newBusRelay(upstream string) (*busRelay, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &busRelay{ln: ln, upstream: upstream, cut: map[string]bool{}, conns: map[net.Conn]struct{}{}}
	r.wg.Add(1)
	go r.serve()
	return r, nil
}

// Addr is the address the relay listens on.
func (r *busRelay) Addr() string { return r.ln.Addr().String() }

// setCut holds back (cut true) or lets through the bytes of connections from source IP
// src ("*": all), in both directions, on connections open now and later.
func (r *busRelay) setCut(src string, cut bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if cut {
		r.cut[src] = true
	} else {
		delete(r.cut, src)
	}
}

// uncutAll lets everything through again.
func (r *busRelay) uncutAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.cut)
}

func (r *busRelay) closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns == nil
}

func (r *busRelay) isCut(src string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cut["*"] || r.cut[src]
}

func (r *busRelay) serve() {
	defer r.wg.Done()
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		src, _, _ := net.SplitHostPort(c.RemoteAddr().String())
		up, err := net.Dial("tcp", r.upstream)
		if err != nil {
			c.Close()
			continue
		}
		if !r.track(c, up) {
			return
		}
		r.wg.Add(2)
		go r.pipe(up, c, src)
		go r.pipe(c, up, src)
	}
}

// track registers both ends of a relayed connection, so that close ends them; false
// if the relay is closed already.
func (r *busRelay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		r.conns[c] = struct{}{}
	}
	return true
}

// pipe copies from to to until either fails or the relay closes, holding what it reads
// while src is cut (and so reading no more); then it closes both.
func (r *busRelay) pipe(to, from net.Conn, src string) {
	defer r.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		// A read in progress when the cut came: its bytes wait too.
		for r.isCut(src) && !r.closed() {
			time.Sleep(5 * time.Millisecond)
		}
		if r.closed() {
			err = net.ErrClosed
		} else if n > 0 {
			if _, werr := to.Write(buf[:n]); werr != nil {
				err = werr
			}
		}
		if err != nil {
			to.Close()
			from.Close()
			r.mu.Lock()
			if r.conns != nil {
				delete(r.conns, to)
				delete(r.conns, from)
			}
			r.mu.Unlock()
			return
		}
	}
}

// close stops the relay and closes every connection; it waits for its goroutines. It
// is idempotent.
func (r *busRelay) close() {
	r.ln.Close()
	r.mu.Lock()
	for c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.mu.Unlock()
	r.wg.Wait()
}
