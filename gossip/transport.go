package gossip

import (
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
)

// countingTransport wraps a memberlist transport and counts the bytes it carries. One
// goroutine forwards what arrives; it ends at Shutdown.
type countingTransport struct {
	inner    memberlist.NodeAwareTransport
	sent     prometheus.Counter
	received prometheus.Counter
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	done     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
	heard    heardFrom
	// guard admits inbound streams and packets; admitting tracks the streams whose first
	// message is being read, to close them at Shutdown.
	guard     *guard
	admitting sync.WaitGroup
	pendingMu sync.Mutex
	pending   map[*guardedConn]struct{}
	closed    bool // Shutdown began: no stream is admitted any more; guarded by pendingMu
}

var _ memberlist.NodeAwareTransport = (*countingTransport)(nil)

// shim gives a plain transport the node-aware methods, as memberlist itself does.
type shim struct{ memberlist.Transport }

// WriteToAddress implements memberlist.NodeAwareTransport.
func (s shim) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	return s.WriteTo(b, a.Addr)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (s shim) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	return s.DialTimeout(a.Addr, timeout)
}

func newCountingTransport(t memberlist.Transport, m *metrics, g *guard) *countingTransport {
	inner, ok := t.(memberlist.NodeAwareTransport)
	if !ok {
		inner = shim{t}
	}
	c := &countingTransport{
		inner:    inner,
		sent:     m.sentBytes,
		received: m.receivedBytes,
		packetCh: make(chan *memberlist.Packet),
		streamCh: make(chan net.Conn),
		done:     make(chan struct{}),
		guard:    g,
		pending:  map[*guardedConn]struct{}{},
	}
	g.start = c.startAdmit
	c.wg.Add(1)
	go c.forward()
	return c
}

func (c *countingTransport) forward() {
	defer c.wg.Done()
	for {
		select {
		case p := <-c.inner.PacketCh():
			c.received.Add(float64(len(p.Buf)))
			if !c.guard.admitPacket(p) {
				continue
			}
			if p.From != nil {
				c.heard.add(p.From.String())
			}
			select {
			case c.packetCh <- p:
			case <-c.done:
				return
			}
		case conn := <-c.inner.StreamCh():
			if gc := c.guard.take(conn); gc != nil {
				c.startAdmit(gc)
			}
		case <-c.done:
			return
		}
	}
}

// startAdmit admits a stream on a goroutine of its own (the guard bounds how many), then
// hands it to memberlist. A stream that waited for its slot is started when another closes.
func (c *countingTransport) startAdmit(gc *guardedConn) {
	c.pendingMu.Lock()
	if c.closed {
		c.pendingMu.Unlock()
		gc.Close()
		return
	}
	c.pending[gc] = struct{}{}
	c.admitting.Add(1)
	c.pendingMu.Unlock()
	go func() {
		defer c.admitting.Done()
		ok := c.guard.admit(gc)
		c.pendingMu.Lock()
		delete(c.pending, gc)
		c.pendingMu.Unlock()
		if !ok {
			return
		}
		select {
		case c.streamCh <- &countingConn{Conn: gc, t: c}:
		case <-c.done:
			gc.Close()
		}
	}()
}

// FinalAdvertiseAddr implements memberlist.Transport.
func (c *countingTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return c.inner.FinalAdvertiseAddr(ip, port)
}

// WriteTo implements memberlist.Transport, counting the bytes sent.
func (c *countingTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	c.sent.Add(float64(len(b)))
	return c.inner.WriteTo(b, addr)
}

// WriteToAddress implements memberlist.NodeAwareTransport, counting the bytes sent.
func (c *countingTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	c.sent.Add(float64(len(b)))
	return c.inner.WriteToAddress(b, a)
}

// PacketCh implements memberlist.Transport.
func (c *countingTransport) PacketCh() <-chan *memberlist.Packet { return c.packetCh }

// StreamCh implements memberlist.Transport.
func (c *countingTransport) StreamCh() <-chan net.Conn { return c.streamCh }

// DialTimeout implements memberlist.Transport.
func (c *countingTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return c.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport, counting the stream.
func (c *countingTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	conn, err := c.inner.DialAddressTimeout(a, timeout)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, t: c}, nil
}

// Shutdown implements memberlist.Transport and stops the forwarder. The inner transport's
// listeners may be blocked handing over a packet or stream: they are drained, and what they
// hand over is discarded, until the inner transport has shut down.
func (c *countingTransport) Shutdown() error {
	c.once.Do(func() { close(c.done) })
	c.wg.Wait()
	c.pendingMu.Lock()
	c.closed = true
	for gc := range c.pending {
		gc.Conn.Close()
	}
	c.pendingMu.Unlock()
	c.guard.closeWaiting()
	c.admitting.Wait()
	stop := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case <-c.inner.PacketCh():
			case conn := <-c.inner.StreamCh():
				conn.Close()
			case <-stop:
				return
			}
		}
	}()
	err := c.inner.Shutdown()
	close(stop)
	<-drained
	return err
}

// countingConn counts a stream's bytes in both directions.
type countingConn struct {
	net.Conn
	t *countingTransport
}

// Read counts received bytes.
func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.t.received.Add(float64(n))
	return n, err
}

// Write counts sent bytes.
func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.t.sent.Add(float64(n))
	return n, err
}
