package httpguard

import (
	"net"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/internal/netkey"
)

// Defaults of Limits' connection bounds.
const (
	// DefaultMaxConns bounds the connections an HTTP listener holds open at once.
	DefaultMaxConns = 4096
	// DefaultMaxConnsPerSource bounds the connections one network (a /24 for IPv4, a /56 for
	// IPv6) holds open at once: a sixty-fourth of DefaultMaxConns.
	DefaultMaxConnsPerSource = 64
)

// Listen wraps ln so that it holds at most l.MaxConns connections open at once, and at most
// l.MaxConnsPerSource from one network (a /24 for IPv4, a /56 for IPv6: netkey): a
// connection beyond is closed as soon as it is accepted, before a byte of it is read, and
// counted in vigil_http_connections_refused_total with the listener's name (reg may be nil).
// One network holding every connection it may, from however many of its addresses, leaves
// the others theirs.
func Listen(ln net.Listener, l Limits, reg prometheus.Registerer, name string) (net.Listener, error) {
	l = l.WithDefaults()
	refused := prometheus.NewCounter(prometheus.CounterOpts{
		Name:        "vigil_http_connections_refused_total",
		Help:        "Connections to an HTTP listener closed at once because it held its most in all or from the source's network (/24 IPv4, /56 IPv6).",
		ConstLabels: prometheus.Labels{"listener": name},
	})
	if reg != nil {
		if err := reg.Register(refused); err != nil {
			return nil, err
		}
	}
	return &limitListener{Listener: ln, max: l.MaxConns, perSource: l.MaxConnsPerSource, refused: refused, bySource: map[netkey.Key]int{}}, nil
}

type limitListener struct {
	net.Listener
	max, perSource int
	refused        prometheus.Counter

	mu       sync.Mutex
	total    int
	bySource map[netkey.Key]int // connections open by network
}

// Accept returns the next connection within the limits; those beyond are closed.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := netkey.OfAddr(c.RemoteAddr())
		l.mu.Lock()
		ok := l.total < l.max && l.bySource[src] < l.perSource
		if ok {
			l.total++
			l.bySource[src]++
		}
		l.mu.Unlock()
		if ok {
			return &countedConn{Conn: c, l: l, src: src}, nil
		}
		c.Close()
		l.refused.Inc()
	}
}

func (l *limitListener) release(src netkey.Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.bySource[src]--; l.bySource[src] <= 0 {
		delete(l.bySource, src)
	}
}

// countedConn gives its slot back when it is closed, once.
type countedConn struct {
	net.Conn
	l    *limitListener
	src  netkey.Key
	once sync.Once
}

// Close closes the connection and frees its slot.
func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.src) })
	return err
}
