package tlsconf

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-dns/vigil/internal/netkey"
)

// Defaults of ListenerLimits.
const (
	// DefaultMaxHandshakes bounds the handshakes in progress on a listener.
	DefaultMaxHandshakes = 256
	// DefaultMaxHandshakesPerSource bounds the handshakes in progress from one network (a
	// /24 for IPv4, a /56 for IPv6): a sixteenth of DefaultMaxHandshakes.
	DefaultMaxHandshakesPerSource = 16
	// DefaultHandshakeTimeout bounds one handshake, from the accept.
	DefaultHandshakeTimeout = 5 * time.Second
)

// ListenerLimits bound what clients that have not finished their handshake can cost. The
// zero value of a field means its default.
type ListenerLimits struct {
	// MaxHandshakes bounds the handshakes in progress; a connection beyond is closed at once.
	MaxHandshakes int
	// MaxHandshakesPerSource bounds the handshakes in progress from one network, a /24 for
	// IPv4 and a /56 for IPv6 (netkey), so that the many addresses of one host or subnet
	// share one allowance. It is kept below MaxHandshakes (lowered to MaxHandshakes-1), so
	// that one network always leaves a slot to the others.
	MaxHandshakesPerSource int
	// HandshakeTimeout bounds one handshake; a client that has not finished it is cut off.
	HandshakeTimeout time.Duration
}

func (l ListenerLimits) withDefaults() ListenerLimits {
	if l.MaxHandshakes <= 0 {
		l.MaxHandshakes = DefaultMaxHandshakes
	}
	if l.MaxHandshakesPerSource <= 0 {
		l.MaxHandshakesPerSource = DefaultMaxHandshakesPerSource
	}
	if l.MaxHandshakes > 1 {
		l.MaxHandshakesPerSource = min(l.MaxHandshakesPerSource, l.MaxHandshakes-1)
	}
	if l.HandshakeTimeout <= 0 {
		l.HandshakeTimeout = DefaultHandshakeTimeout
	}
	return l
}

// Listener accepts TCP connections and hands out only those whose TLS handshake (with its
// verification of the client's certificate) succeeded within the limits. Handshakes run
// concurrently, so a slow or silent client holds up nobody; a failed one is closed and
// counted, never logged.
type Listener struct {
	inner   net.Listener
	cfg     *tls.Config
	lim     ListenerLimits
	metrics *Metrics
	name    string

	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	mu        sync.Mutex
	total     int
	perSource map[netkey.Key]int // handshakes in progress by network
	pending   map[net.Conn]struct{}

	refused, failed, accepted atomic.Uint64
}

// NewListener wraps inner: a connection is handed out by Accept once its handshake with cfg
// succeeded. name labels the listener's metrics (m may be nil).
func NewListener(inner net.Listener, cfg *tls.Config, lim ListenerLimits, name string, m *Metrics) *Listener {
	l := &Listener{
		inner: inner, cfg: cfg, lim: lim.withDefaults(), metrics: m, name: name,
		conns: make(chan net.Conn), done: make(chan struct{}),
		perSource: map[netkey.Key]int{}, pending: map[net.Conn]struct{}{},
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

// Accept returns the next connection whose handshake succeeded.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Addr returns the listener's address.
func (l *Listener) Addr() net.Addr { return l.inner.Addr() }

// Close stops accepting, cuts off the handshakes in progress and waits for them.
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.inner.Close()
		l.mu.Lock()
		for c := range l.pending {
			c.Close()
		}
		l.mu.Unlock()
		l.wg.Wait()
	})
	return err
}

// Counts returns the connections handed out, refused over a limit, and whose handshake
// failed.
func (l *Listener) Counts() (accepted, refused, failed uint64) {
	return l.accepted.Load(), l.refused.Load(), l.failed.Load()
}

func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	backoff := 5 * time.Millisecond
	for {
		c, err := l.inner.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select { // a transient error (too many open files): wait a little
			case <-l.done:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = 5 * time.Millisecond
		src := netkey.OfAddr(c.RemoteAddr())
		if !l.admit(c, src) {
			c.Close()
			l.refused.Add(1)
			l.metrics.refused(l.name)
			continue
		}
		l.wg.Add(1)
		go l.handshake(c, src)
	}
}

// admit counts a handshake from the network src in, unless a limit is reached.
func (l *Listener) admit(c net.Conn, src netkey.Key) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.done:
		return false
	default:
	}
	if l.total >= l.lim.MaxHandshakes || l.perSource[src] >= l.lim.MaxHandshakesPerSource {
		return false
	}
	l.total++
	l.perSource[src]++
	l.pending[c] = struct{}{}
	return true
}

func (l *Listener) release(c net.Conn, src netkey.Key) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.perSource[src]--; l.perSource[src] <= 0 {
		delete(l.perSource, src)
	}
	delete(l.pending, c)
}

func (l *Listener) handshake(raw net.Conn, src netkey.Key) {
	defer l.wg.Done()
	ctx, cancel := context.WithTimeout(context.Background(), l.lim.HandshakeTimeout)
	defer cancel()
	tc := tls.Server(raw, l.cfg)
	err := tc.HandshakeContext(ctx)
	l.release(raw, src)
	if err != nil {
		raw.Close()
		l.failed.Add(1)
		l.metrics.failed(l.name)
		return
	}
	select {
	case l.conns <- tc:
		l.accepted.Add(1)
	case <-l.done:
		tc.Close()
	}
}
