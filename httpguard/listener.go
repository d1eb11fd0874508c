package httpguard

import (
	"net"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Limits' connection bounds.
const (
	// DefaultMaxConns bounds the connections an HTTP listener holds open at once.
	DefaultMaxConns = 4096
	// DefaultMaxConnsPerSource bounds the connections one IP address holds open at once.
	DefaultMaxConnsPerSource = 64
)

// Listen wraps ln so that it holds at most l.MaxConns connections open at once, and at most
// l.MaxConnsPerSource from one IP address: a connection beyond is closed as soon as it is
// accepted, before a byte of it is read, and counted in vigil_http_connections_refused_total
// with the listener's name (reg may be nil). One source holding every connection it may
// leaves the others theirs.
func Listen(ln net.Listener, l Limits, reg prometheus.Registerer, name string) (net.Listener, error) {
	l = l.WithDefaults()
	refused := prometheus.NewCounter(prometheus.CounterOpts{
		Name:        "vigil_http_connections_refused_total",
		Help:        "Connections to an HTTP listener closed at once because it held its most in all or from the source.",
		ConstLabels: prometheus.Labels{"listener": name},
	})
	if reg != nil {
		if err := reg.Register(refused); err != nil {
			return nil, err
		}
	}
	return &limitListener{Listener: ln, max: l.MaxConns, perSource: l.MaxConnsPerSource, refused: refused, bySource: map[string]int{}}, nil
}

type limitListener struct {
	net.Listener
	max, perSource int
	refused        prometheus.Counter

	mu       sync.Mutex
	total    int
	bySource map[string]int
}

// Accept returns the next connection within the limits; those beyond are closed.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := sourceIP(c.RemoteAddr())
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

func (l *limitListener) release(src string) {
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
	src  string
	once sync.Once
}

// Close closes the connection and frees its slot.
func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.src) })
	return err
}

// sourceIP returns the IP address of a remote address (the whole address when it has none).
func sourceIP(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}
