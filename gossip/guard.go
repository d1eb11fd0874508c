package gossip

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/internal/netkey"
)

// The defaults of InboundLimits.
const (
	// DefaultMaxInboundStreams bounds the inbound gossip streams open at once.
	DefaultMaxInboundStreams = 64
	// DefaultMaxInboundStreamsPerSource bounds the inbound streams of one source network (a
	// /24 for IPv4, a /56 for IPv6): a quarter of DefaultMaxInboundStreams. Nodes of one
	// region often share a /24 and all push/pull with each other, so the share is a network's,
	// not a host's: one /24 cannot hold more than a quarter, and the others keep the rest.
	DefaultMaxInboundStreamsPerSource = 16
	// DefaultMaxStreamBytes bounds the size of one inbound stream message (a push/pull state
	// or a reliable message). memberlist's own bound is 20 MiB.
	DefaultMaxStreamBytes = 8 << 20
	// DefaultMaxBufferedBytes bounds the bytes of inbound stream messages held before they
	// are authenticated, over all streams; one source network may hold half of it.
	DefaultMaxBufferedBytes = 32 << 20
	// DefaultStreamReadTimeout bounds the time an inbound stream takes to deliver its first
	// message.
	DefaultStreamReadTimeout = 5 * time.Second
)

// memberlist's wire constants (net.go, security.go of memberlist v0.7.0): the message type
// of an encrypted stream message, the label header's type, the encryption versions and the
// sizes around an AES-GCM payload.
const (
	mlEncryptMsg   = 10
	mlHasLabelMsg  = 244
	mlMaxEncVer    = 1
	mlNonceSize    = 12
	mlTagSize      = 16
	mlStreamHeader = 5 // type byte and big-endian uint32 length
)

// Reasons an inbound stream or packet is refused before memberlist sees it.
const (
	refusedTotal   = "streams_total"
	refusedSource  = "streams_per_source"
	refusedBudget  = "buffered_bytes"
	refusedSize    = "oversized"
	refusedTimeout = "read_timeout"
	refusedAuth    = "unauthenticated"
	refusedWait    = "queue_timeout"
)

// Streams over a limit wait for a slot rather than being refused at once, up to these: a
// node's pages of a row come as a stream each, back to back (eight of them for a row of a
// million checks), and a location slowed by its collector, with the checkers of one host (one
// source) sending their rows at once, refused the pages beyond four every time, so that one
// checker's row never arrived whole and the checker stayed stale at the location. A waiting
// stream holds its socket only: nothing of it is read until it takes a slot.
const (
	// queuedPerSlot is how many streams of a source may wait per stream slot of a source.
	queuedPerSlot = 4
	// waitReadTimeouts is how long a stream may wait for a slot, in stream read timeouts.
	waitReadTimeouts = 2
)

// guard admits inbound gossip streams and packets: it bounds the streams open at once (in
// all and per source network, a /24 for IPv4 and a /56 for IPv6, so that the many addresses
// of one host or subnet share one allowance; a bounded queue of streams waits for a slot),
// the bytes buffered before authentication (in all and per source network) and the time to
// read them, and, in an encrypted pool, authenticates every stream's first message and
// every packet with the keyring before memberlist buffers or logs anything of it. What it
// refuses is counted and logged at most once per logEvery.
type guard struct {
	keyring  *memberlist.Keyring // nil: an unencrypted pool, nothing to authenticate
	limits   InboundLimits
	refused  *prometheus.CounterVec
	log      *slog.Logger
	logEvery time.Duration
	now      func() time.Time

	// start starts admitting a stream that waited for its slot (countingTransport.startAdmit).
	start func(*guardedConn)

	mu        sync.Mutex
	streams   int
	perSource map[netkey.Key]int      // streams open, by source network
	waiting   map[netkey.Key][]waiter // streams waiting for a slot, by source network, oldest first
	queued    int                     // streams waiting, over all sources
	buffered  int
	bySource  map[netkey.Key]int // bytes buffered per source network
	quiet     map[string]int     // refusals not yet logged, by reason
	lastLog   time.Time
}

func newGuard(cfg *Config, kr *memberlist.Keyring, m *metrics, log *slog.Logger) *guard {
	return &guard{
		keyring:   kr,
		limits:    cfg.Inbound,
		refused:   m.refused,
		log:       log,
		logEvery:  10 * time.Second,
		now:       cfg.Now,
		perSource: map[netkey.Key]int{},
		waiting:   map[netkey.Key][]waiter{},
		bySource:  map[netkey.Key]int{},
		quiet:     map[string]int{},
	}
}

// source is the host of a remote address, for the log. The unit of the per-source limits is
// its network (netkey.OfAddr).
func source(a net.Addr) string {
	if a == nil {
		return ""
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// refuse counts a refusal and logs the refusals of the last logEvery at most once per
// logEvery, so that junk cannot flood the log.
func (g *guard) refuse(kind, reason string, from net.Addr) {
	g.refused.WithLabelValues(kind, reason).Inc()
	g.mu.Lock()
	g.quiet[kind+" "+reason]++
	now := g.now()
	if now.Sub(g.lastLog) < g.logEvery {
		g.mu.Unlock()
		return
	}
	g.lastLog = now
	counts := make([]any, 0, 2*len(g.quiet)+2)
	for k, v := range g.quiet {
		counts = append(counts, k, v)
	}
	clear(g.quiet)
	g.mu.Unlock()
	g.log.Warn("gossip: refused inbound messages (counted in vigil_gossip_inbound_refused_total; logged at most every "+g.logEvery.String()+")",
		append(counts, "last_from", source(from))...)
}

// admitPacket reports whether a packet may go to memberlist: in an encrypted pool, only a
// packet that a key of the keyring authenticates.
func (g *guard) admitPacket(p *memberlist.Packet) bool {
	if g.keyring == nil {
		return true
	}
	if err := authenticate(g.keyring.GetKeys(), p.Buf, nil); err != nil {
		g.refuse("packet", refusedAuth, p.From)
		return false
	}
	return true
}

// waiter is a stream waiting for a slot, since when.
type waiter struct {
	gc    *guardedConn
	since time.Time
}

// openStream takes a stream slot for gc, or queues it to wait for one (queued), or refuses
// it with the limit that is reached (reason).
func (g *guard) openStream(gc *guardedConn) (ok, queued bool, reason string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	src := gc.src
	switch {
	case g.streams < g.limits.MaxStreams && g.perSource[src] < g.limits.MaxStreamsPerSource:
		g.streams++
		g.perSource[src]++
		return true, false, ""
	case len(g.waiting[src]) < queuedPerSlot*g.limits.MaxStreamsPerSource && g.queued < g.limits.MaxStreams:
		g.waiting[src] = append(g.waiting[src], waiter{gc: gc, since: time.Now()})
		g.queued++
		return false, true, ""
	case g.streams >= g.limits.MaxStreams:
		return false, false, refusedTotal
	}
	return false, false, refusedSource
}

// closeStream gives a slot of the network src back, and hands the slots free to the streams
// waiting: src's first, then any other network's (those waiting for a total slot).
func (g *guard) closeStream(src netkey.Key) {
	g.mu.Lock()
	g.streams--
	if g.perSource[src]--; g.perSource[src] <= 0 {
		delete(g.perSource, src)
	}
	var ready, late []*guardedConn
	ready, late = g.dequeue(src, ready, late)
	for other := range g.waiting {
		if g.streams >= g.limits.MaxStreams {
			break
		}
		ready, late = g.dequeue(other, ready, late)
	}
	g.mu.Unlock()
	for _, gc := range late {
		g.refuse("stream", refusedWait, gc.RemoteAddr())
		gc.Conn.Close()
	}
	for _, gc := range ready {
		g.start(gc)
	}
}

// dequeue gives the waiting streams of src the slots free, oldest first, appending them to
// ready, and those that waited too long to late. Called with g.mu held.
func (g *guard) dequeue(src netkey.Key, ready, late []*guardedConn) ([]*guardedConn, []*guardedConn) {
	q := g.waiting[src]
	expired := time.Now().Add(-waitReadTimeouts * g.limits.StreamReadTimeout)
	for len(q) > 0 && g.streams < g.limits.MaxStreams && g.perSource[src] < g.limits.MaxStreamsPerSource {
		w := q[0]
		q[0] = waiter{}
		q = q[1:]
		g.queued--
		if w.since.Before(expired) {
			late = append(late, w.gc)
			continue
		}
		g.streams++
		g.perSource[src]++
		ready = append(ready, w.gc)
	}
	if len(q) == 0 {
		delete(g.waiting, src)
	} else {
		g.waiting[src] = q
	}
	return ready, late
}

// closeWaiting closes the streams waiting for a slot (the transport shuts down).
func (g *guard) closeWaiting() {
	g.mu.Lock()
	waiting := g.waiting
	g.waiting, g.queued = map[netkey.Key][]waiter{}, 0
	g.mu.Unlock()
	for _, q := range waiting {
		for _, w := range q {
			w.gc.Conn.Close()
		}
	}
}

// reserve takes n bytes of the buffer budget for the network src; one network may hold at
// most half.
func (g *guard) reserve(src netkey.Key, n int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.buffered+n > g.limits.MaxBufferedBytes || g.bySource[src]+n > g.limits.MaxBufferedBytes/2 {
		return false
	}
	g.buffered += n
	g.bySource[src] += n
	return true
}

func (g *guard) release(src netkey.Key, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.buffered -= n
	if g.bySource[src] -= n; g.bySource[src] <= 0 {
		delete(g.bySource, src)
	}
}

// take takes a stream slot for conn and returns the guarded stream; or it queues the stream
// to wait for a slot (guard.start admits it then) or, over the limits of the streams waiting
// too, refuses it, having closed conn: nil in both cases. It does not block.
func (g *guard) take(conn net.Conn) *guardedConn {
	gc := &guardedConn{Conn: conn, r: conn, g: g, src: netkey.OfAddr(conn.RemoteAddr())}
	ok, queued, reason := g.openStream(gc)
	switch {
	case ok:
		return gc
	case !queued:
		g.refuse("stream", reason, conn.RemoteAddr())
		conn.Close()
	}
	return nil
}

// admit, in an encrypted pool, reads and authenticates the stream's first message within
// the read timeout, and makes the stream replay it to memberlist before the rest. It
// reports false, having closed the stream, when the stream is refused. The stream gives its
// slot and the buffered bytes back when closed.
func (g *guard) admit(gc *guardedConn) bool {
	if g.keyring == nil {
		return true
	}
	msg, reason, err := g.readFirst(gc.Conn, gc.src)
	if err != nil {
		g.refuse("stream", reason, gc.RemoteAddr())
		gc.Close()
		return false
	}
	gc.held = len(msg)
	gc.r = io.MultiReader(bytes.NewReader(msg), gc.Conn)
	return true
}

var errRefused = errors.New("gossip: inbound stream refused")

// readFirst reads an encrypted stream's first message, header included, with the budget
// reserved for its body, and authenticates it. On success the budget stays reserved (the
// guardedConn gives it back); on failure it is given back and the reason returned.
func (g *guard) readFirst(conn net.Conn, src netkey.Key) ([]byte, string, error) {
	// The deadline is on the socket's clock, not the node's (which tests may fake).
	if err := conn.SetReadDeadline(time.Now().Add(g.limits.StreamReadTimeout)); err != nil {
		return nil, refusedTimeout, fmt.Errorf("gossip: stream deadline: %w", err)
	}
	var head [mlStreamHeader]byte
	if _, err := io.ReadFull(conn, head[:]); err != nil {
		return nil, refusedTimeout, fmt.Errorf("gossip: stream header: %w", err)
	}
	if head[0] != mlEncryptMsg {
		// A label header or a plaintext message: this pool runs without labels, encrypted.
		return nil, refusedAuth, errRefused
	}
	size := int(binary.BigEndian.Uint32(head[1:]))
	if size > g.limits.MaxStreamBytes {
		return nil, refusedSize, errRefused
	}
	total := mlStreamHeader + size
	if !g.reserve(src, total) {
		return nil, refusedBudget, errRefused
	}
	msg := make([]byte, total)
	copy(msg, head[:])
	if _, err := io.ReadFull(conn, msg[mlStreamHeader:]); err != nil {
		g.release(src, total)
		return nil, refusedTimeout, fmt.Errorf("gossip: stream body: %w", err)
	}
	// The header is the authenticated data (memberlist: type, length, label).
	if err := authenticate(g.keyring.GetKeys(), msg[mlStreamHeader:], msg[:mlStreamHeader]); err != nil {
		g.release(src, total)
		return nil, refusedAuth, err
	}
	// memberlist sets its own deadline; a peer that already closed its end (a reliable
	// message is written, then closed) makes some connections refuse this, harmlessly.
	_ = conn.SetReadDeadline(time.Time{})
	return msg, "", nil
}

// authenticate reports whether one of keys opens payload, memberlist's encrypted form
// ([version][nonce][ciphertext and tag]) with data as the additional data. It decrypts into
// a scratch buffer and keeps nothing.
func authenticate(keys [][]byte, payload, data []byte) error {
	if len(payload) < 1+mlNonceSize+mlTagSize || payload[0] > mlMaxEncVer {
		return errRefused
	}
	nonce := payload[1 : 1+mlNonceSize]
	sealed := payload[1+mlNonceSize:]
	for _, k := range keys {
		block, err := aes.NewCipher(k)
		if err != nil {
			continue
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			continue
		}
		if _, err := aead.Open(nil, nonce, sealed, data); err == nil {
			return nil
		}
	}
	return errRefused
}

// guardedConn is an admitted inbound stream: it reads the replayed first message, then the
// connection, and gives its slot and buffered bytes back once closed.
type guardedConn struct {
	net.Conn
	r    io.Reader
	g    *guard
	src  netkey.Key // the source's network
	held int
	once sync.Once
}

// Read reads the replayed message, then the connection.
func (c *guardedConn) Read(b []byte) (int, error) { return c.r.Read(b) }

// Close closes the connection and gives the slot and the buffered bytes back.
func (c *guardedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		if c.held > 0 {
			c.g.release(c.src, c.held)
		}
		c.g.closeStream(c.src)
	})
	return err
}
