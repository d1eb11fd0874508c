package checker

import (
	"crypto/tls"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// Connection reuse, for the checks that ask for it (keep_alive; without it every probe opens
// a fresh connection). An HTTP/1.1 probe of an idempotent request (GET, HEAD, OPTIONS) may send
// its request on the connection its check's previous probe left open, when that probe's
// response said the connection stays open (HTTP/1.1 without Connection: close) and was read
// to its end with nothing after it. Most of a probe's cost on a fresh connection is the
// connect and the close (system calls that, on a nearby target, also do the target's TCP
// work); reusing the connection saves both, and over TLS the handshake too.
//
// What a probe tests does not weaken for long: a connection is reused only within
// maxConnAge of its dial, so every check opens a fresh connection (and a TLS check does a
// full handshake, with certificate verification) at least that often, and a server that
// stops accepting connections is seen within maxConnAge and an interval. A reused
// connection is never the cause of an unhealthy result: when it fails before the first byte
// of a response (the server closed it while idle), the probe runs again at once on a fresh
// connection, and judges that. A TLS connection whose certificates expired since its
// handshake is not reused.
const (
	// maxConnAge is how long after its dial a connection may still be reused.
	maxConnAge = 30 * time.Second
	// maxIdleConns bounds the idle connections a Prober holds: at most one per check, and
	// at most a quarter of the process's open-file limit (idleLimit), so that kept
	// connections never leave a probe unable to open one.
	maxIdleConns = 16384
)

// idleLimit is how many connections a Prober keeps at most, given the process's open-file
// limit nofile (0: unknown, then 1,024 at most).
func idleLimit(nofile uint64) int {
	if nofile == 0 {
		return 1024
	}
	return int(min(nofile/4, maxIdleConns))
}

// idleKey identifies what a kept connection may serve: the probes of one check (its
// configuration, which a change replaces) to one address.
type idleKey struct {
	check *config.Check
	addr  netip.AddrPort
}

// idleConn is a connection kept for the check's next probe.
type idleConn struct {
	conn    net.Conn // a *tls.Conn for https
	dialled time.Time
	expires time.Time
}

// idleEntry is a put in the sweep queue: the expiry the key was put with.
type idleEntry struct {
	key     idleKey
	expires time.Time
}

// idleConns holds kept connections, at most one per key, each until it expires. Expired
// connections are closed as later puts and takes pass by (the queue is in put order), and
// all of them by closeAll.
type idleConns struct {
	limit int // most connections kept; 0 means maxIdleConns
	mu    sync.Mutex
	conns map[idleKey]idleConn
	queue []idleEntry
	head  int
}

// take returns the connection kept for key, if one is and it may still be used at now.
func (ic *idleConns) take(key idleKey, now time.Time) (idleConn, bool) {
	ic.mu.Lock()
	c, ok := ic.conns[key]
	if ok {
		delete(ic.conns, key)
	}
	closing := ic.sweepLocked(now)
	ic.mu.Unlock()
	closeAll(closing)
	if ok && !now.Before(c.expires) {
		_ = c.conn.Close()
		return idleConn{}, false
	}
	return c, ok
}

// put keeps conn for key until expires (never past its dial's maxConnAge); it closes conn
// when it cannot be kept.
func (ic *idleConns) put(key idleKey, c idleConn, now time.Time) {
	if end := c.dialled.Add(maxConnAge); c.expires.After(end) {
		c.expires = end
	}
	if !now.Before(c.expires) {
		_ = c.conn.Close()
		return
	}
	ic.mu.Lock()
	closing := ic.sweepLocked(now)
	if old, ok := ic.conns[key]; ok {
		closing = append(closing, old.conn)
	} else if len(ic.conns) >= ic.max() {
		ic.mu.Unlock()
		closeAll(closing)
		_ = c.conn.Close()
		return
	}
	if ic.conns == nil {
		ic.conns = map[idleKey]idleConn{}
	}
	ic.conns[key] = c
	ic.queue = append(ic.queue, idleEntry{key, c.expires})
	ic.mu.Unlock()
	closeAll(closing)
}

// max is the most connections kept.
func (ic *idleConns) max() int {
	if ic.limit > 0 {
		return ic.limit
	}
	return maxIdleConns
}

// sweepLocked drops the expired connections at the front of the queue and returns them to
// close; an entry whose key was taken or put again since is only dropped.
func (ic *idleConns) sweepLocked(now time.Time) []net.Conn {
	var closing []net.Conn
	for ic.head < len(ic.queue) && !now.Before(ic.queue[ic.head].expires) {
		e := ic.queue[ic.head]
		ic.queue[ic.head] = idleEntry{}
		ic.head++
		if c, ok := ic.conns[e.key]; ok && c.expires.Equal(e.expires) {
			delete(ic.conns, e.key)
			closing = append(closing, c.conn)
		}
	}
	if ic.head > 1024 && ic.head*2 > len(ic.queue) {
		ic.queue = append(ic.queue[:0], ic.queue[ic.head:]...)
		ic.head = 0
	}
	return closing
}

// closeAll closes every kept connection.
func (ic *idleConns) closeAll() {
	ic.mu.Lock()
	var closing []net.Conn
	for _, c := range ic.conns {
		closing = append(closing, c.conn)
	}
	ic.conns, ic.queue, ic.head = nil, nil, 0
	ic.mu.Unlock()
	closeAll(closing)
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		_ = c.Close()
	}
}

// len is the number of kept connections.
func (ic *idleConns) len() int {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	return len(ic.conns)
}

// mayReuse reports whether a probe of c on hop h may reuse a connection and keep its own:
// the check asks for it (keep_alive), and this is the first request, of an idempotent
// method.
func (p *Prober) mayReuse(c *config.Check, h *hop, res *Result) bool {
	if !c.KeepAlive || res.Redirects > 0 {
		return false
	}
	return config.KeepAliveMethod(h.method)
}

// clock is the time kept connections are reckoned by: time.Now, or the test's clock.
func (p *Prober) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

// idleFor is how long a connection is kept after a probe of c: until a while after the
// check's next probe is due, late as a busy checker may start it.
func idleFor(c *config.Check) time.Duration {
	return 2*c.Interval.Std() + 5*time.Second
}

// certsValid reports whether every certificate the server showed on conn is still within its
// validity at now (always true without TLS).
func certsValid(conn net.Conn, now time.Time) bool {
	tc, ok := conn.(*tls.Conn)
	if !ok {
		return true
	}
	for _, cert := range tc.ConnectionState().PeerCertificates {
		if now.After(cert.NotAfter) || now.Before(cert.NotBefore) {
			return false
		}
	}
	return true
}

// Protocol memory. A server that speaks only HTTP/2 over TLS costs an https probe two
// connections when the probe offers http/1.1 first. The Prober remembers, for a while, the
// address and server name that showed it speaks only h2, and offers h2 alone to it; when
// the server then does not agree on h2, it is forgotten and the probe starts over with
// http/1.1.
const (
	// h2OnlyFor is how long a server is remembered as speaking only HTTP/2.
	h2OnlyFor = 10 * time.Minute
	// maxH2Only bounds the servers remembered.
	maxH2Only = 4096
)

// tlsTarget is a TLS server as a probe reaches it.
type tlsTarget struct {
	addr netip.AddrPort
	sni  string
}

// h2Memory remembers the TLS servers that speak only HTTP/2, each until it expires; when
// full, it forgets the expired ones and, if none is, starts over.
type h2Memory struct {
	off   bool // remember nothing
	mu    sync.Mutex
	until map[tlsTarget]time.Time
}

func (m *h2Memory) knows(t tlsTarget, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.until[t]
	if ok && !now.Before(u) {
		delete(m.until, t)
		return false
	}
	return ok
}

func (m *h2Memory) remember(t tlsTarget, now time.Time) {
	if m.off {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.until == nil {
		m.until = map[tlsTarget]time.Time{}
	}
	if _, ok := m.until[t]; !ok && len(m.until) >= maxH2Only {
		for k, u := range m.until {
			if !now.Before(u) {
				delete(m.until, k)
			}
		}
		if len(m.until) >= maxH2Only {
			clear(m.until)
		}
	}
	m.until[t] = now.Add(h2OnlyFor)
}

func (m *h2Memory) forget(t tlsTarget) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.until, t)
}
