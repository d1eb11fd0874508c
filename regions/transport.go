package regions

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// packetQueue is how many packets wait for a transport's reader before more are dropped, as
// a socket's receive buffer would.
const packetQueue = 4096

// Port is the port every simulated node advertises.
const Port = 7946

// Transport is an in-memory memberlist.NodeAwareTransport on a Network: packets and streams go
// straight to the transport at the destination address, through the link between the two
// regions. It starts no goroutine of its own beyond one timer per delayed packet.
type Transport struct {
	net      *Network
	region   string
	addr     simAddr
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	done     chan struct{}
	once     sync.Once

	dropped atomic.Uint64
}

var _ memberlist.NodeAwareTransport = (*Transport)(nil)

type simAddr struct{ hostport string }

// Network implements net.Addr.
func (a simAddr) Network() string { return "sim" }

// String implements net.Addr.
func (a simAddr) String() string { return a.hostport }

// NewTransport returns a transport for one node of region, with a fresh address in it.
func (n *Network) NewTransport(region string) (*Transport, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.known(region); err != nil {
		return nil, err
	}
	n.hosts++
	if n.hosts > 250*250 {
		return nil, errors.New("regions: too many simulated hosts")
	}
	h := n.hosts - 1
	ip := net.IPv4(10, byte(n.regions[region]), byte(h/250), byte(h%250+1))
	t := &Transport{
		net:      n,
		region:   region,
		addr:     simAddr{net.JoinHostPort(ip.String(), strconv.Itoa(Port))},
		packetCh: make(chan *memberlist.Packet, packetQueue),
		streamCh: make(chan net.Conn),
		done:     make(chan struct{}),
	}
	n.byAddr[t.addr.hostport] = t
	return t, nil
}

// Restart returns a new transport at the address of t, which must have shut down: a process
// restarted on the same host and port, as its peers still know it.
func (n *Network) Restart(t *Transport) (*Transport, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.byAddr[t.addr.hostport]; ok {
		return nil, fmt.Errorf("regions: %s is still in use", t.addr.hostport)
	}
	nt := &Transport{
		net:      n,
		region:   t.region,
		addr:     t.addr,
		packetCh: make(chan *memberlist.Packet, packetQueue),
		streamCh: make(chan net.Conn),
		done:     make(chan struct{}),
	}
	n.byAddr[nt.addr.hostport] = nt
	return nt, nil
}

// Addr returns the transport's address, host:port, for others to join.
func (t *Transport) Addr() string { return t.addr.hostport }

// Region returns the transport's region.
func (t *Transport) Region() string { return t.region }

// Dropped returns how many packets addressed to this transport were dropped because its
// queue was full or it had shut down.
func (t *Transport) Dropped() uint64 { return t.dropped.Load() }

// FinalAdvertiseAddr implements memberlist.Transport: the transport's own address.
func (t *Transport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	host, _, err := net.SplitHostPort(t.addr.hostport)
	if err != nil {
		return nil, 0, fmt.Errorf("regions: %w", err)
	}
	return net.ParseIP(host), Port, nil
}

// WriteTo implements memberlist.Transport.
func (t *Transport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress implements memberlist.NodeAwareTransport. Like UDP, a packet lost on a cut
// or lossy link is not an error.
func (t *Transport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	now := time.Now()
	dest, err := t.peer(a.Addr)
	if err != nil {
		// Like UDP to a host that is gone: the packet is sent and lost.
		return now, nil
	}
	ok, delay := t.net.packet(t.region, dest.region)
	if !ok {
		return now, nil
	}
	p := &memberlist.Packet{Buf: append([]byte(nil), b...), From: t.addr}
	if delay <= 0 {
		dest.deliver(p)
	} else {
		time.AfterFunc(delay, func() { dest.deliver(p) })
	}
	return now, nil
}

func (t *Transport) deliver(p *memberlist.Packet) {
	select {
	case <-t.done:
		t.dropped.Add(1)
		return
	default:
	}
	p.Timestamp = time.Now()
	select {
	case t.packetCh <- p:
	default:
		t.dropped.Add(1)
	}
}

// PacketCh implements memberlist.Transport.
func (t *Transport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

// DialTimeout implements memberlist.Transport.
func (t *Transport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport. A dial over a cut link waits
// for the timeout and fails, as a dial into a black hole does.
func (t *Transport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	dest, err := t.peer(a.Addr)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ok, rtt := t.net.connect(t.region, dest.region)
	if !ok {
		time.Sleep(timeout)
		return nil, fmt.Errorf("regions: dial %s from %s: %w", a.Addr, t.region, os.ErrDeadlineExceeded)
	}
	if rtt >= timeout {
		time.Sleep(timeout)
		return nil, fmt.Errorf("regions: dial %s from %s: %w", a.Addr, t.region, os.ErrDeadlineExceeded)
	}
	if rtt > 0 {
		time.Sleep(rtt)
	}
	l, r := net.Pipe()
	local := &streamConn{Conn: l, net: t.net, from: t.region, to: dest.region, local: t.addr, remote: dest.addr}
	remote := &streamConn{Conn: r, net: t.net, from: dest.region, to: t.region, local: dest.addr, remote: t.addr}
	timer := time.NewTimer(timeout - rtt)
	defer timer.Stop()
	select {
	case dest.streamCh <- remote:
		return local, nil
	case <-dest.done:
	case <-t.done:
	case <-timer.C:
	}
	local.Close()
	remote.Close()
	return nil, fmt.Errorf("regions: dial %s from %s: connection refused", a.Addr, t.region)
}

// streamConn is one end of a simulated stream. Every write crosses the link again, so a cut
// made while a stream is open breaks it, as a partition breaks a TCP connection in flight;
// without this, a push/pull that began before a cut would go on carrying state across it.
//
// Its ends carry the simulated addresses, as a TCP connection's carry the peers' (a pipe's
// would be "pipe" at every node, one source for the whole network to the gossip guard's
// per-source limits).
type streamConn struct {
	net.Conn
	net           *Network
	from, to      string
	local, remote simAddr
}

// LocalAddr implements net.Conn: this end's simulated address.
func (c *streamConn) LocalAddr() net.Addr { return c.local }

// RemoteAddr implements net.Conn: the other end's simulated address.
func (c *streamConn) RemoteAddr() net.Addr { return c.remote }

// Write sends b, or closes the stream when the link is cut in either direction.
func (c *streamConn) Write(b []byte) (int, error) {
	if ok, _ := c.net.connect(c.from, c.to); !ok {
		c.Conn.Close()
		return 0, fmt.Errorf("regions: stream from %s to %s: link cut: %w", c.from, c.to, net.ErrClosed)
	}
	return c.Conn.Write(b)
}

// StreamCh implements memberlist.Transport.
func (t *Transport) StreamCh() <-chan net.Conn { return t.streamCh }

// Shutdown implements memberlist.Transport: the address stops receiving and is freed.
func (t *Transport) Shutdown() error {
	t.once.Do(func() {
		close(t.done)
		t.net.mu.Lock()
		if t.net.byAddr[t.addr.hostport] == t {
			delete(t.net.byAddr, t.addr.hostport)
		}
		t.net.mu.Unlock()
	})
	return nil
}

func (t *Transport) peer(addr string) (*Transport, error) {
	t.net.mu.Lock()
	dest, ok := t.net.byAddr[addr]
	t.net.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("regions: no route to %s", addr)
	}
	return dest, nil
}
