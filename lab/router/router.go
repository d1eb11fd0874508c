package router

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/regions"
)

// Bounds of the router's work: packets held per peer at once, and the largest packet.
const (
	queueLen   = 4096
	packetSize = 65535
)

// Peer is another region's router.
type Peer struct {
	// Region is the peer's region.
	Region string
	// Subnet is the region's network: packets to it go to this peer.
	Subnet netip.Prefix
	// Endpoint is the peer router's UDP address on the network the routers share.
	Endpoint netip.AddrPort
	// Latency is the default one-way delay of packets to the peer.
	Latency time.Duration
}

// Config configures one region's router.
type Config struct {
	// Region is this router's region.
	Region string
	// Listen is the UDP address the router receives its peers' packets on.
	Listen netip.AddrPort
	// Peers are the other regions' routers.
	Peers []Peer
	// Logger receives the logs; default slog.Default().
	Logger *slog.Logger
}

// Router carries packets between its region's device and its peers, with the faults in force.
type Router struct {
	cfg    Config
	dev    io.ReadWriteCloser
	conn   *net.UDPConn
	queues map[string]chan held

	mu     sync.Mutex
	faults *Faults
	stats  map[regions.Link]*Stats
}

// Stats count what happened to the packets one router sent in one direction.
type Stats struct {
	// Sent counts packets sent to the peer; Cut those dropped by a cut; Lost those dropped
	// by loss; Overflow those dropped because the queue was full.
	Sent, Cut, Lost, Overflow uint64
}

// held is one packet waiting for its time.
type held struct {
	due  time.Time
	data []byte
}

// New returns a router between dev (the region's side: IPv4 packets, one per read and
// write) and its peers, listening on cfg.Listen.
func New(cfg Config, dev io.ReadWriteCloser) (*Router, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	names := []string{cfg.Region}
	defaults := map[regions.Link]time.Duration{}
	queues := map[string]chan held{}
	stats := map[regions.Link]*Stats{}
	for _, p := range cfg.Peers {
		if p.Region == cfg.Region || queues[p.Region] != nil {
			return nil, fmt.Errorf("router: peer %q named twice or as this region", p.Region)
		}
		names = append(names, p.Region)
		queues[p.Region] = make(chan held, queueLen)
		defaults[regions.Link{From: cfg.Region, To: p.Region}] = p.Latency
		defaults[regions.Link{From: p.Region, To: cfg.Region}] = p.Latency
		stats[regions.Link{From: cfg.Region, To: p.Region}] = &Stats{}
	}
	// Links between two peers are not this router's to carry: it keeps their faults (every
	// router gets every command) but shows only the directions it sends.
	conn, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.Listen))
	if err != nil {
		return nil, fmt.Errorf("router: listen %s: %w", cfg.Listen, err)
	}
	return &Router{cfg: cfg, dev: dev, conn: conn, queues: queues,
		faults: NewFaults(names, defaults), stats: stats}, nil
}

// Addr returns the UDP address the router listens on.
func (r *Router) Addr() netip.AddrPort { return r.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Apply changes the faults by one command (see Faults.Apply) and returns the table.
func (r *Router) Apply(args []string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.faults.Apply(args); err != nil {
		return nil, err
	}
	r.cfg.Logger.Info("router: faults changed", "command", args, "active", r.faults.Active())
	return r.faults.Lines(r.cfg.Region), nil
}

// Lines returns the directions this router sends, with their latency and faults.
func (r *Router) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.faults.Lines(r.cfg.Region)
}

// Stats returns the counters of the directions this router sends.
func (r *Router) Stats() map[regions.Link]Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[regions.Link]Stats, len(r.stats))
	for d, s := range r.stats {
		out[d] = *s
	}
	return out
}

// Run carries packets until ctx ends, then closes the device and the socket.
func (r *Router) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for _, p := range r.cfg.Peers {
		wg.Go(func() { r.send(p, stop) })
	}
	errs := make(chan error, 2)
	go func() { errs <- r.fromDevice() }()
	go func() { errs <- r.fromPeers() }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	close(stop)
	r.dev.Close()
	r.conn.Close()
	wg.Wait()
	return err
}

// fromDevice queues each packet the region sends to a peer's subnet, or drops it by the
// faults in force.
func (r *Router) fromDevice() error {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x5eed))
	buf := make([]byte, packetSize)
	for {
		n, err := r.dev.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) || errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("router: read device: %w", err)
		}
		if n < 20 || buf[0]>>4 != 4 {
			continue // IPv4 only
		}
		dst := netip.AddrFrom4([4]byte(buf[16:20]))
		var peer *Peer
		for i := range r.cfg.Peers {
			if r.cfg.Peers[i].Subnet.Contains(dst) {
				peer = &r.cfg.Peers[i]
				break
			}
		}
		if peer == nil {
			continue
		}
		d := regions.Link{From: r.cfg.Region, To: peer.Region}
		r.mu.Lock()
		l, st := r.faults.Of(d), r.stats[d]
		switch {
		case l.Cut:
			st.Cut++
		case l.Loss > 0 && rng.Float64()*100 < l.Loss:
			st.Lost++
		default:
			select {
			case r.queues[peer.Region] <- held{due: time.Now().Add(l.Delay), data: append([]byte(nil), buf[:n]...)}:
			default:
				st.Overflow++
			}
		}
		r.mu.Unlock()
	}
}

// send sends the packets queued for peer p, each when it is due, until stop.
func (r *Router) send(p Peer, stop <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	q := r.queues[p.Region]
	for {
		var h held
		select {
		case <-stop:
			return
		case h = <-q:
		}
		if wait := time.Until(h.due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-stop:
				return
			case <-timer.C:
			}
		}
		if _, err := r.conn.WriteToUDPAddrPort(h.data, p.Endpoint); err == nil {
			r.mu.Lock()
			r.stats[regions.Link{From: r.cfg.Region, To: p.Region}].Sent++
			r.mu.Unlock()
		}
	}
}

// fromPeers writes each packet a peer router sent into the device.
func (r *Router) fromPeers() error {
	known := map[netip.Addr]bool{}
	for _, p := range r.cfg.Peers {
		known[p.Endpoint.Addr()] = true
	}
	buf := make([]byte, packetSize)
	for {
		n, from, err := r.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("router: read peers: %w", err)
		}
		if !known[from.Addr().Unmap()] || n < 20 {
			continue
		}
		if _, err := r.dev.Write(buf[:n]); err != nil {
			r.cfg.Logger.Debug("router: write device", "err", err)
		}
	}
}
