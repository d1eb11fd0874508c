package location

import (
	"errors"
	"net"
	"net/netip"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// udpBatch is the most datagrams a UDP worker reads, or writes, with one system call
// (recvmmsg and sendmmsg on Linux; one at a time elsewhere).
const udpBatch = 32

// maxUDPQuery is the largest UDP query a worker reads whole; a longer one is cut, and then
// answered FORMERR or not at all.
const maxUDPQuery = 4096

// udpReceiveBuffer is the receive buffer asked for each UDP socket (SO_RCVBUF; Linux books
// twice as much, for its overhead). The queries that come while a socket's workers wait for
// a core (the scheduler, a GC pause) queue there: Linux's default of 208 KiB holds 160 to
// 250 small datagrams on loopback (each is booked at 0.8 to 1.25 KiB), 13 to 20 ms at
// 12,500 queries a second, and drops every query beyond; 4 MiB holds about 6,500.
const udpReceiveBuffer = 4 << 20

// batchConn reads and writes batches of datagrams.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// newBatchConn wraps a UDP socket for batched reads and writes.
func newBatchConn(c *net.UDPConn) batchConn {
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() != nil {
		return ipv4.NewPacketConn(c)
	}
	return ipv6.NewPacketConn(c)
}

// serveUDP is one UDP worker of listener l on its socket c: it reads a batch of queries,
// answers each and writes the responses in a batch, until the socket closes. Its buffers are
// fixed at start. On Linux serveMmsg does so without an allocation per datagram; elsewhere
// (or when it cannot) golang.org/x/net reads and writes the batches.
func (s *Server) serveUDP(l *listener, c *net.UDPConn) {
	if s.serveMmsg(l, c) {
		return
	}
	conn := newBatchConn(c)
	scr := newScratch()
	in := make([]ipv4.Message, udpBatch)
	out := make([]ipv4.Message, udpBatch)
	outBufs := make([][]byte, udpBatch)
	for i := range in {
		in[i].Buffers = [][]byte{make([]byte, maxUDPQuery)}
		outBufs[i] = make([]byte, 0, s.udpSize)
	}
	for {
		n, err := conn.ReadBatch(in, 0)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		k := 0
		for i := range n {
			m := &in[i]
			from, ok := m.Addr.(*net.UDPAddr)
			if !ok {
				continue
			}
			if !s.admit(l) {
				continue
			}
			start := time.Now()
			addr, _ := netip.AddrFromSlice(from.IP)
			resp, oc := s.answer(scr, m.Buffers[0][:m.N], Request{From: addr, NameServer: l.index})
			if resp != nil {
				outBufs[k] = append(outBufs[k][:0], resp...)
				out[k] = ipv4.Message{Buffers: [][]byte{outBufs[k]}, Addr: from}
				k++
			}
			s.metrics.observe(l.label, &oc, time.Since(start))
		}
		for sent := 0; sent < k; {
			w, err := conn.WriteBatch(out[sent:k], 0)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				// One destination refused (an ICMP error, say): skip that datagram.
				w = max(w, 1)
			}
			sent += w
		}
	}
}
