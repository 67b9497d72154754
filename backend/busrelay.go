package backend

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
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

// newBusRelay listens on listen and relays to upstream.
func newBusRelay(listen, upstream string) (*busRelay, error) {
	ln, err := net.Listen("tcp", listen)
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

// RelayServer runs named relays in a process of their own and serves their cuts over
// HTTP: the docker backend runs it in a container on the run's network, where the data
// nodes tell each other apart by their container addresses. A sender is named by its
// data node's name and resolved (by the network's DNS) when it is cut.
type RelayServer struct {
	mu     sync.Mutex
	relays map[string]*busRelay
	cutIPs map[[2]string]string // (relay, sender name) -> the address cut for it
}

// RelaySpec is one relay of a RelayServer: listen address and upstream.
type RelaySpec struct{ Name, Listen, Upstream string }

// NewRelayServer starts the relays; on error it closes those it started.
func NewRelayServer(specs []RelaySpec) (*RelayServer, error) {
	s := &RelayServer{relays: map[string]*busRelay{}, cutIPs: map[[2]string]string{}}
	for _, sp := range specs {
		if _, dup := s.relays[sp.Name]; dup || sp.Name == "" {
			s.Close()
			return nil, fmt.Errorf("cluster: relay name %q empty or repeated", sp.Name)
		}
		r, err := newBusRelay(sp.Listen, sp.Upstream)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("cluster: relay %s: %w", sp.Name, err)
		}
		s.relays[sp.Name] = r
	}
	return s, nil
}

// Close stops every relay.
func (s *RelayServer) Close() {
	for _, r := range s.relays {
		r.close()
	}
}

// Handler serves POST /cut?relay=R&from=NAME&cut=true|false (from "*": every sender)
// and POST /uncut-all.
func (s *RelayServer) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /cut", func(w http.ResponseWriter, req *http.Request) {
		q := req.URL.Query()
		if err := s.cut(req.Context(), q.Get("relay"), q.Get("from"), q.Get("cut") == "true"); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	})
	mux.HandleFunc("POST /uncut-all", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, r := range s.relays {
			r.uncutAll()
		}
		clear(s.cutIPs)
	})
	mux.HandleFunc("GET /health", func(http.ResponseWriter, *http.Request) {})
	return mux
}

func (s *RelayServer) cut(ctx context.Context, relay, from string, cut bool) error {
	r := s.relays[relay]
	if r == nil {
		return fmt.Errorf("no relay %q", relay)
	}
	key := [2]string{relay, from}
	s.mu.Lock()
	ip, known := s.cutIPs[key]
	s.mu.Unlock()
	switch {
	case from == "*":
		ip = "*"
	case !cut && known:
		// Lifted by the address it was cut for: the sender may be down, or have
		// another address, by now.
	case !cut:
		return nil
	default:
		addrs, err := net.DefaultResolver.LookupHost(ctx, from)
		if err != nil || len(addrs) == 0 {
			return fmt.Errorf("resolve sender %q: %v", from, err)
		}
		ip = addrs[0]
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.setCut(ip, cut)
	if cut {
		s.cutIPs[key] = ip
	} else {
		delete(s.cutIPs, key)
	}
	return nil
}

// RemoteRelays is a RelayServer's HTTP API as BusCuts.
type RemoteRelays struct{ URL string }

func (r RemoteRelays) Cut(ctx context.Context, to, from string, cut bool) error {
	q := url.Values{"relay": {to}, "from": {from}, "cut": {strconv.FormatBool(cut)}}
	return r.post(ctx, "/cut?"+q.Encode())
}

func (r RemoteRelays) UncutAll(ctx context.Context) error { return r.post(ctx, "/uncut-all") }

func (r RemoteRelays) post(ctx context.Context, path string) error {
	return controlRequest(ctx, "bus relays", 5*time.Second, http.MethodPost, r.URL+path, "")
}
