package location

import (
	"errors"
	"net"
	"net/netip"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsghdr is struct mmsghdr of recvmmsg(2) and sendmmsg(2): a message header and the bytes
// the call moved (its padding is Go's as C's).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// mmsgConn reads and writes batches of datagrams of one UDP socket with recvmmsg and
// sendmmsg, into buffers and address slots fixed at start: no allocation per datagram. A
// response goes to the address its query came from, the very bytes the kernel wrote.
type mmsgConn struct {
	rc     syscall.RawConn
	in     [udpBatch]mmsghdr
	inIov  [udpBatch]unix.Iovec
	names  [udpBatch]unix.RawSockaddrInet6
	bufs   [udpBatch][]byte
	out    [udpBatch]mmsghdr
	outIov [udpBatch]unix.Iovec
	// The system calls' results, set by readFn and writeFn, made once so that a call
	// allocates no closure.
	n, from, k      int
	err             error
	readFn, writeFn func(fd uintptr) bool
}

func newMmsgConn(c *net.UDPConn) (*mmsgConn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	m := &mmsgConn{rc: rc}
	for i := range m.in {
		m.bufs[i] = make([]byte, maxUDPQuery)
		m.inIov[i].Base = &m.bufs[i][0]
		m.inIov[i].SetLen(maxUDPQuery)
		m.in[i].hdr.Iov = &m.inIov[i]
		m.in[i].hdr.SetIovlen(1)
		m.in[i].hdr.Name = (*byte)(unsafe.Pointer(&m.names[i]))
	}
	m.readFn = func(fd uintptr) bool {
		n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&m.in[0])), udpBatch, 0, 0, 0)
		for e == unix.EINTR {
			n, _, e = unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&m.in[0])), udpBatch, 0, 0, 0)
		}
		switch e {
		case 0:
			m.n, m.err = int(n), nil
		case unix.EAGAIN:
			return false // wait until the socket is readable
		default:
			m.n, m.err = 0, e
		}
		return true
	}
	m.writeFn = func(fd uintptr) bool {
		n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&m.out[m.from])), uintptr(m.k-m.from), 0, 0, 0)
		for e == unix.EINTR {
			n, _, e = unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&m.out[m.from])), uintptr(m.k-m.from), 0, 0, 0)
		}
		switch e {
		case 0:
			m.n, m.err = int(n), nil
		case unix.EAGAIN:
			return false
		default:
			m.n, m.err = 0, e
		}
		return true
	}
	return m, nil
}

// read reads up to udpBatch datagrams and returns how many.
func (m *mmsgConn) read() (int, error) {
	for i := range m.in {
		m.in[i].hdr.Namelen = unix.SizeofSockaddrInet6
		m.in[i].hdr.Flags = 0
	}
	if err := m.rc.Read(m.readFn); err != nil {
		return 0, err
	}
	return m.n, m.err
}

// datagram returns datagram i of the last read and the address it came from.
func (m *mmsgConn) datagram(i int) ([]byte, netip.Addr, bool) {
	h := &m.in[i]
	sa := &m.names[i]
	var from netip.Addr
	switch {
	case sa.Family == unix.AF_INET6 && h.hdr.Namelen >= unix.SizeofSockaddrInet6:
		from = netip.AddrFrom16(sa.Addr).Unmap()
	case sa.Family == unix.AF_INET && h.hdr.Namelen >= unix.SizeofSockaddrInet4:
		from = netip.AddrFrom4((*unix.RawSockaddrInet4)(unsafe.Pointer(sa)).Addr)
	default:
		return nil, from, false
	}
	return m.bufs[i][:min(int(h.n), maxUDPQuery)], from, true
}

// reply queues resp, which must stay unchanged until write, as response k to datagram i of
// the last read.
func (m *mmsgConn) reply(k, i int, resp []byte) {
	m.outIov[k].Base = unsafe.SliceData(resp)
	m.outIov[k].SetLen(len(resp))
	m.out[k].hdr = unix.Msghdr{Name: m.in[i].hdr.Name, Namelen: m.in[i].hdr.Namelen, Iov: &m.outIov[k]}
	m.out[k].hdr.SetIovlen(1)
}

// write sends the responses queued from from to k, and returns how many went.
func (m *mmsgConn) write(from, k int) (int, error) {
	m.from, m.k = from, k
	if err := m.rc.Write(m.writeFn); err != nil {
		return 0, err
	}
	return m.n, m.err
}

// setUDPBuffers sets c's receive buffer to udpReceiveBuffer: with SO_RCVBUFFORCE when the
// process may (CAP_NET_ADMIN), which passes over net.core.rmem_max, else with SO_RCVBUF,
// which that bounds.
func setUDPBuffers(c *net.UDPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, udpReceiveBuffer) == nil {
			return
		}
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, udpReceiveBuffer)
	}); err != nil {
		return err
	}
	return serr
}

// serveMmsg serves the UDP worker of listener l on socket c with recvmmsg and sendmmsg, and
// reports true when the socket closed; false when it could not start, and then serveUDP
// serves.
func (s *Server) serveMmsg(l *listener, c *net.UDPConn) bool {
	m, err := newMmsgConn(c)
	if err != nil {
		return false
	}
	scr := newScratch()
	var outBufs [udpBatch][]byte
	for i := range outBufs {
		outBufs[i] = make([]byte, 0, s.udpSize)
	}
	for {
		n, err := m.read()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return true
			}
			if errors.Is(err, unix.ENOSYS) {
				return false
			}
			continue
		}
		k := 0
		for i := range n {
			query, from, ok := m.datagram(i)
			if !ok || !s.admit(l) {
				continue
			}
			start := time.Now()
			resp, oc := s.answer(scr, query, Request{From: from, NameServer: l.index})
			if resp != nil {
				outBufs[k] = append(outBufs[k][:0], resp...)
				m.reply(k, i, outBufs[k])
				k++
			}
			s.metrics.observe(l.label, &oc, time.Since(start))
		}
		for sent := 0; sent < k; {
			w, err := m.write(sent, k)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return true
				}
				// One destination refused (an ICMP error, say): skip that datagram.
				w = max(w, 1)
			}
			sent += w
		}
	}
}
