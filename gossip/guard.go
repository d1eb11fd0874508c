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
)

// The defaults of InboundLimits.
const (
	// DefaultMaxInboundStreams bounds the inbound gossip streams open at once.
	DefaultMaxInboundStreams = 64
	// DefaultMaxInboundStreamsPerSource bounds the inbound streams of one source address.
	DefaultMaxInboundStreamsPerSource = 4
	// DefaultMaxStreamBytes bounds the size of one inbound stream message (a push/pull state
	// or a reliable message). memberlist's own bound is 20 MiB.
	DefaultMaxStreamBytes = 8 << 20
	// DefaultMaxBufferedBytes bounds the bytes of inbound stream messages held before they
	// are authenticated, over all streams; one source may hold half of it.
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
)

// guard admits inbound gossip streams and packets: it bounds the streams open at once (in
// all and per source address), the bytes buffered before authentication and the time to
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

	mu        sync.Mutex
	streams   int
	perSource map[string]int
	buffered  int
	bySource  map[string]int // bytes buffered per source
	quiet     map[string]int // refusals not yet logged, by reason
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
		perSource: map[string]int{},
		bySource:  map[string]int{},
		quiet:     map[string]int{},
	}
}

// source is the host of a remote address, the unit of the per-source limits.
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

// openStream takes a stream slot for src; false when the total or the source's limit is
// reached.
func (g *guard) openStream(src string) (bool, string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.streams >= g.limits.MaxStreams:
		return false, refusedTotal
	case g.perSource[src] >= g.limits.MaxStreamsPerSource:
		return false, refusedSource
	}
	g.streams++
	g.perSource[src]++
	return true, ""
}

func (g *guard) closeStream(src string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.streams--
	if g.perSource[src]--; g.perSource[src] <= 0 {
		delete(g.perSource, src)
	}
}

// reserve takes n bytes of the buffer budget for src; one source may hold at most half.
func (g *guard) reserve(src string, n int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.buffered+n > g.limits.MaxBufferedBytes || g.bySource[src]+n > g.limits.MaxBufferedBytes/2 {
		return false
	}
	g.buffered += n
	g.bySource[src] += n
	return true
}

func (g *guard) release(src string, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.buffered -= n
	if g.bySource[src] -= n; g.bySource[src] <= 0 {
		delete(g.bySource, src)
	}
}

// take takes a stream slot for conn; it returns the guarded stream, or nil, having closed
// conn, when the total or the source's limit is reached. It does not block.
func (g *guard) take(conn net.Conn) *guardedConn {
	src := source(conn.RemoteAddr())
	if ok, reason := g.openStream(src); !ok {
		g.refuse("stream", reason, conn.RemoteAddr())
		conn.Close()
		return nil
	}
	return &guardedConn{Conn: conn, r: conn, g: g, src: src}
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
func (g *guard) readFirst(conn net.Conn, src string) ([]byte, string, error) {
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
	src  string
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
