package location

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/internal/netkey"
)

// listener is one address the server answers on, UDP and TCP, with its own workers, budget
// and TCP connection limit: the main listener (index -1) or a virtual name server.
type listener struct {
	index   int
	label   string
	udp     *net.UDPConn   // the first of udps: its address is the listener's
	udps    []*net.UDPConn // every UDP socket of the port (SO_REUSEPORT), each read by its workers
	tcp     *net.TCPListener
	workers int
	budget  *budget
	// overBudget counts the queries the budget dropped: looked up once, so that a flood's
	// dropped queries cost no label lookup each.
	overBudget prometheus.Counter
	conns      chan struct{} // one token per TCP connection being served
	mu         sync.Mutex
	perClient  map[netkey.Key]int // TCP connections being served, by client network
}

// takeClient takes one of the TCP slots of the client's network; false when the network
// holds max already.
func (l *listener) takeClient(a netkey.Key, max int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perClient[a] >= max {
		return false
	}
	l.perClient[a]++
	return true
}

func (l *listener) releaseClient(a netkey.Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.perClient[a]--; l.perClient[a] <= 0 {
		delete(l.perClient, a)
	}
}

// Listen binds the main listener and one listener per virtual name server, UDP and TCP on
// the same port each. It is called by Run; call it first to learn the bound addresses.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listeners != nil {
		return nil
	}
	main, err := s.bind(-1, s.cfg.Addr, s.cfg.Workers, s.cfg.Budget)
	if err != nil {
		return err
	}
	ls := []*listener{main}
	indices := make([]int, 0, len(s.cfg.NameServers))
	for i := range s.cfg.NameServers {
		indices = append(indices, i)
	}
	sort.Ints(indices)
	for _, i := range indices {
		l, err := s.bind(i, s.cfg.NameServers[i], s.cfg.NameServerWorkers, s.cfg.NameServerBudget)
		if err != nil {
			for _, l := range ls {
				l.close()
			}
			return err
		}
		ls = append(ls, l)
	}
	for _, l := range ls {
		for _, c := range l.udps {
			if err := setUDPBuffers(c); err != nil {
				s.log.Warn("location: UDP receive buffer", "listener", l.label, "err", err)
			}
		}
	}
	s.listeners = ls
	return nil
}

// bind opens the UDP and TCP sockets of one listener on the same port.
func (s *Server) bind(index int, addr string, workers, rate int) (*listener, error) {
	l := &listener{index: index, label: listenerLabel(index), workers: workers,
		budget: newBudget(rate), conns: make(chan struct{}, s.cfg.MaxTCPConns), perClient: map[netkey.Key]int{}}
	l.overBudget = s.metrics.dropped.WithLabelValues(l.label, dropBudget)
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("location: listener %s: %w", l.label, err)
	}
	// With port 0 the kernel picks the UDP port, which TCP may find taken: try a few times.
	for attempt := 0; ; attempt++ {
		if l.udp, err = net.ListenUDP("udp", ua); err != nil {
			return nil, fmt.Errorf("location: listener %s: %w", l.label, err)
		}
		port := l.udp.LocalAddr().(*net.UDPAddr).Port
		ta := &net.TCPAddr{IP: ua.IP, Port: port, Zone: ua.Zone}
		if l.tcp, err = net.ListenTCP("tcp", ta); err == nil {
			l.udps = []*net.UDPConn{l.udp}
			n := s.udpSockets()
			if n <= 1 {
				return l, nil
			}
			if err = s.reusePort(l, &net.UDPAddr{IP: ua.IP, Port: port, Zone: ua.Zone}, n); err == nil {
				return l, nil
			}
			l.tcp.Close()
			if ua.Port != 0 || attempt == 4 {
				return nil, fmt.Errorf("location: listener %s: %w", l.label, err)
			}
			continue
		}
		l.udp.Close()
		if ua.Port != 0 || attempt == 4 {
			return nil, fmt.Errorf("location: listener %s: %w", l.label, err)
		}
	}
}

// udpSockets returns the number of UDP sockets of each listener.
func (s *Server) udpSockets() int {
	if s.cfg.UDPSockets > 0 {
		return s.cfg.UDPSockets
	}
	return defaultUDPSockets()
}

// UDPSockets returns the number of UDP sockets bound at the main listener's port (after
// Listen; 0 before): Config.UDPSockets, or 1 where SO_REUSEPORT could not be set.
func (s *Server) UDPSockets() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.listeners) == 0 {
		return 0
	}
	return len(s.listeners[0].udps)
}

// reusePort replaces the listener's one UDP socket, bound at ua, by n bound there with
// SO_REUSEPORT. The first socket was bound without it, so that the port the kernel picked
// is one no other socket shares; it is closed only now, and the sockets that replace it are
// bound at once. When that fails (no SO_REUSEPORT here, or a socket took the port in
// between) the listener has one socket, bound again; the error says that this failed too.
func (s *Server) reusePort(l *listener, ua *net.UDPAddr, n int) error {
	lc := net.ListenConfig{Control: setReusePort}
	l.udp.Close()
	var conns []*net.UDPConn
	var err error
	for range n {
		var pc net.PacketConn
		if pc, err = lc.ListenPacket(context.Background(), "udp", ua.String()); err != nil {
			break
		}
		conns = append(conns, pc.(*net.UDPConn))
	}
	if err == nil {
		l.udp, l.udps = conns[0], conns
		return nil
	}
	for _, c := range conns {
		c.Close()
	}
	s.log.Warn("location: one UDP socket for the listener", "listener", l.label, "err", err)
	if l.udp, err = net.ListenUDP("udp", ua); err != nil {
		return err
	}
	l.udps = []*net.UDPConn{l.udp}
	return nil
}

// admit spends one query of l's budget and reports whether there was one; a query over the
// budget is counted and gets no response. Under a flood this runs for every query read, so
// it costs no allocation and no label lookup.
func (s *Server) admit(l *listener) bool {
	if l.budget == nil || l.budget.take(s.now()) {
		return true
	}
	l.overBudget.Inc()
	return false
}

// close closes the listener's sockets.
func (l *listener) close() {
	for _, c := range l.udps {
		c.Close()
	}
	l.tcp.Close()
}

// Addr returns the main listener's address (UDP and TCP share it), or the zero value before
// Listen.
func (s *Server) Addr() netip.AddrPort { return s.listenerAddr(-1) }

// NameServerAddr returns the address virtual name server index listens on, or the zero value
// when this location does not host it or has not listened yet.
func (s *Server) NameServerAddr(index int) netip.AddrPort { return s.listenerAddr(index) }

func (s *Server) listenerAddr(index int) netip.AddrPort {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.listeners {
		if l.index == index {
			return l.udp.LocalAddr().(*net.UDPAddr).AddrPort()
		}
	}
	return netip.AddrPort{}
}

// Serve answers on the sockets Listen bound until ctx ends, then closes them and returns when
// every worker and connection has stopped. The server may then Listen and Serve again.
func (s *Server) Serve(ctx context.Context) error {
	s.mu.Lock()
	ls := s.listeners
	s.mu.Unlock()
	if ls == nil {
		return errors.New("location: serve before listen")
	}
	var wg sync.WaitGroup
	for _, l := range ls {
		// The workers spread over the sockets, at least one each.
		for i := range max(l.workers, len(l.udps)) {
			c := l.udps[i%len(l.udps)]
			wg.Go(func() { s.serveUDP(l, c) })
		}
		wg.Go(func() { s.serveTCP(ctx, l, &wg) })
	}
	wg.Go(func() { s.xfr.run(ctx) })
	s.log.Info("location: serving", "addr", s.Addr().String(), "name_servers", len(ls)-1)
	<-ctx.Done()
	for _, l := range ls {
		l.close()
	}
	wg.Wait()
	s.mu.Lock()
	s.listeners = nil
	s.mu.Unlock()
	return nil
}

// serveTCP accepts connections until the socket closes, serving at most MaxTCPConns at once;
// each served connection is added to wg.
func (s *Server) serveTCP(ctx context.Context, l *listener, wg *sync.WaitGroup) {
	for {
		c, err := l.tcp.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors, say: wait a little rather than spin.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		from := netkey.OfAddr(c.RemoteAddr())
		if !l.takeClient(from, s.cfg.MaxTCPConnsPerClient) {
			c.Close()
			s.metrics.dropped.WithLabelValues(l.label, dropTCPClient).Inc()
			continue
		}
		select {
		case l.conns <- struct{}{}:
		default:
			l.releaseClient(from)
			c.Close()
			s.metrics.dropped.WithLabelValues(l.label, dropTCPConns).Inc()
			continue
		}
		wg.Go(func() {
			defer func() { <-l.conns; l.releaseClient(from) }()
			stop := context.AfterFunc(ctx, func() { c.Close() })
			defer stop()
			s.serveConn(l, c)
		})
	}
}

// serveConn answers the queries of one TCP connection, in order, until the client closes it,
// sends something unreadable, stays idle past the timeout, or the connection reaches its
// lifetime or its number of queries.
func (s *Server) serveConn(l *listener, c *net.TCPConn) {
	defer c.Close()
	scr := s.scratch.Get().(*scratch)
	defer s.scratch.Put(scr)
	var from netip.Addr
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		from = a.AddrPort().Addr()
	}
	var lenBuf [2]byte
	query := make([]byte, 0, 512)
	end := time.Now().Add(s.cfg.TCPConnLifetime)
	for range s.cfg.TCPQueriesPerConn {
		deadline := time.Now().Add(s.cfg.TCPIdleTimeout)
		if deadline.After(end) {
			deadline = end
		}
		if err := c.SetReadDeadline(deadline); err != nil {
			return
		}
		if _, err := io.ReadFull(c, lenBuf[:]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(lenBuf[:]))
		if cap(query) < n {
			query = make([]byte, n)
		}
		query = query[:n]
		if _, err := io.ReadFull(c, query); err != nil {
			return
		}
		if !s.admit(l) {
			continue
		}
		if isTransferQuery(query) {
			// AXFR and IXFR answer with many messages (xfr.go).
			if !s.serveTransfer(c, query, from, l) {
				return
			}
			continue
		}
		start := time.Now()
		out, oc := s.answer(scr, query, Request{From: from, TCP: true, NameServer: l.index})
		s.metrics.observe(l.label, &oc, time.Since(start))
		if out == nil {
			continue
		}
		binary.BigEndian.PutUint16(lenBuf[:], uint16(len(out)))
		if err := c.SetWriteDeadline(time.Now().Add(s.cfg.TCPIdleTimeout)); err != nil {
			return
		}
		bufs := net.Buffers{lenBuf[:], out}
		if _, err := bufs.WriteTo(c); err != nil {
			return
		}
	}
}
