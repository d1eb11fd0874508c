package abuse

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/internal/httpguard"
	"github.com/vigil-dns/vigil/internal/tlsconf"
	"github.com/vigil-dns/vigil/location"
)

// The floods of many sources below come from many addresses of one network, 127.0.1.0/24
// (on Linux every address of 127.0.0.0/8 is a source of its own, as every address of a /64
// is to an IPv6 host), while the legitimate client asks from 127.0.0.1, another /24. Each
// has a control: the same flood from as many networks, one address each, which is what a
// limit keyed by address saw of the one-network flood (an allowance per address) and what
// these limits did before they were keyed by network; it must shut the legitimate client out.

// floodSources returns n source addresses: n addresses of 127.0.1.0/24, or with spread one
// address in each of n networks (127.0.1.1, 127.0.2.1, ...). None is in 127.0.0.0/24.
func floodSources(n int, spread bool) []net.IP {
	srcs := make([]net.IP, n)
	for i := range srcs {
		if spread {
			srcs[i] = net.IPv4(127, 0, byte(1+i), 1)
		} else {
			srcs[i] = net.IPv4(127, 0, 1, byte(1+i))
		}
	}
	return srcs
}

// floodWhat names the flood's sources for a row.
func floodWhat(n int, spread bool) string {
	if spread {
		return fmt.Sprintf("%d networks (one address each)", n)
	}
	return fmt.Sprintf("%d addresses of 127.0.1.0/24", n)
}

// silentFlood holds perSrc TCP connections from each of srcs to addr until the deadline,
// sending nothing: each waits for the server to close it (refused at once, or cut off by a
// timeout) and dials again. Every connection loop is bounded by the deadline and by 10,000
// dials. It returns the dials.
func silentFlood(addr string, srcs []net.IP, perSrc int, until time.Time) (dials int64) {
	var wg sync.WaitGroup
	for _, src := range srcs {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: time.Second}
		for range perSrc {
			wg.Go(func() {
				buf := make([]byte, 512)
				for range 10000 {
					if !time.Now().Before(until) {
						return
					}
					c, err := d.Dial("tcp", addr)
					if err != nil {
						time.Sleep(50 * time.Millisecond)
						continue
					}
					atomic.AddInt64(&dials, 1)
					_ = c.SetReadDeadline(until)
					for { // until the server closes it or the flood ends
						if _, err := c.Read(buf); err != nil {
							break
						}
					}
					c.Close()
					time.Sleep(50 * time.Millisecond) // a refused dial costs the machine, not the server
				}
			})
		}
	}
	wg.Wait()
	return dials
}

// during runs the flood in the background, waits warmup for it to take what it can, then
// calls legit until the flood ends, and waits for the flood; it returns the flood's dials.
func during(warmup, lasts time.Duration, flood func(until time.Time) int64, legit func(until time.Time)) (dials int64) {
	until := time.Now().Add(warmup + lasts)
	done := make(chan struct{})
	go func() { defer close(done); dials = flood(until) }()
	time.Sleep(warmup)
	legit(until)
	<-done
	return dials
}

// everyUntil calls try every interval until the deadline, at most max times, and returns
// how many calls there were and how many reported success.
func everyUntil(interval time.Duration, until time.Time, max int, try func() bool) (tried, ok int) {
	for tried < max && time.Now().Before(until) {
		next := time.Now().Add(interval)
		tried++
		if try() {
			ok++
		}
		time.Sleep(time.Until(next))
	}
	return tried, ok
}

// TestAbuseManySourcesDNSTCP: 8 addresses of one network hold 8 DNS over TCP connections
// each (64, a location listener's every slot), asking a query every 500 ms so that the idle
// timeout never fires and redialling whatever is closed, for 5 s, while a client of another
// network asks over TCP every 100 ms. Keyed by network, the flood gets the 8 slots of
// 127.0.1.0/24 and the other client every answer; the control, the same flood from 8
// networks, takes every slot (the finding: 0 of 50 answered).
func TestAbuseManySourcesDNSTCP(t *testing.T) {
	const (
		addrs, perAddr = 8, 8
		ask            = 500 * time.Millisecond
		lasts          = 5 * time.Second
	)
	q := tcpQuery(t)
	run := func(spread bool) (dials int64, asked, answered int, refused float64) {
		addr, reg := startLocationWith(t, location.Config{}) // the defaults: 64 slots, 8 per network
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { dials, _ = hog(addr, floodSources(addrs, spread), addrs*perAddr, ask, q, stop) })
		time.Sleep(500 * time.Millisecond) // the hog takes what it can first
		time.AfterFunc(lasts, func() { close(stop) })
		asked, answered = legitTCP(addr, stop)
		wg.Wait()
		refused = counter(t, reg, "vigil_location_queries_dropped_total", map[string]string{"reason": "tcp_conns_per_client"}) +
			counter(t, reg, "vigil_location_queries_dropped_total", map[string]string{"reason": "tcp_conns"})
		return
	}
	dials, asked, answered, refused := run(false)
	_, cAsked, cAnswered, _ := run(true)
	row(t, fmt.Sprintf("DNS over TCP from many addresses of one network: %s keep %d connections each at a location's TCP port (64 slots per listener, defaults), asking every %v, redialling for %v; a client of another network (127.0.0.1) asks over TCP every 100 ms meanwhile", floodWhat(addrs, false), perAddr, ask, lasts),
		fmt.Sprintf("%s flood dials, %d legitimate queries", itoa(int(dials)), asked),
		fmt.Sprintf("legitimate queries answered %d of %d; flood connections refused at once %s (control, the same flood from %s, as keyed by address: %d of %d answered)",
			answered, asked, itoa(int(refused)), floodWhat(addrs, true), cAnswered, cAsked))
	if asked < 20 || answered != asked {
		t.Errorf("got through: %d of %d legitimate TCP queries unanswered", asked-answered, asked)
	}
	if cAnswered > cAsked/2 {
		t.Errorf("control: %d of %d legitimate queries answered under the flood from %d networks: the flood is not a flood", cAnswered, cAsked, addrs)
	}
}

// TestAbuseManySourcesTLS: 16 addresses of one network each hold 16 TCP connections to a
// TLS listener without starting the handshake (256, the listener's every handshake slot),
// redialling whenever the 5 s handshake timeout cuts them off, for 6 s, while a client of
// another network with a certificate of the CA asks every 100 ms on a new connection: the
// control API (GET /v1/state with an operator's certificate) and the raft port (a stale
// AppendEntries with a voter's certificate, answered without effect). Keyed by network, the
// flood gets the 16 handshakes of 127.0.1.0/24; the control, the same flood from 16
// networks, takes every slot (the finding: 2 of 54 API requests answered).
func TestAbuseManySourcesTLS(t *testing.T) {
	const (
		addrs, perAddr = 16, 16
		lasts          = 6 * time.Second
	)
	p := newPKI(t)
	for _, target := range []struct {
		name, row string
		start     func(t *testing.T) (addr string, legit func() bool)
	}{
		{"api", "control API; the client: GET /v1/state with an operator's certificate", func(t *testing.T) (string, func() bool) {
			api := tlsVoter(t, p).Self().ControlAPI
			op := p.store(t, p.dir, "op").ClientConfig(tlsconf.Peer{})
			return strings.TrimPrefix(api, "https://"), func() bool {
				c := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: op, DisableKeepAlives: true}}
				resp, err := c.Get(api + "/v1/state")
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == http.StatusOK
			}
		}},
		{"raft", "raft port; the client: a stale AppendEntries with a voter's certificate", func(t *testing.T) (string, func() bool) {
			addr := tlsRaftVoter(t, p)
			peer := p.store(t, p.dir, "v1").ClientConfig(tlsconf.Peer{Roles: []string{tlsconf.RoleControl}, SkipHostname: true})
			return addr, func() bool { return staleAppend(t, peer, addr) }
		}},
	} {
		t.Run(target.name, func(t *testing.T) {
			addr, legit := target.start(t)
			if !waitFor(15*time.Second, legit) {
				t.Fatalf("%s: the legitimate client is not answered before the flood", target.name)
			}
			run := func(spread bool) (dials int64, tried, ok int) {
				dials = during(500*time.Millisecond, lasts,
					func(until time.Time) int64 { return silentFlood(addr, floodSources(addrs, spread), perAddr, until) },
					func(until time.Time) { tried, ok = everyUntil(100*time.Millisecond, until, 100, legit) })
				// The flood's connections are closed: the listener frees its slots.
				waitFor(5*time.Second, legit)
				return dials, tried, ok
			}
			dials, tried, ok := run(false)
			_, cTried, cOK := run(true)
			row(t, fmt.Sprintf("TLS handshakes from many addresses of one network: %s hold %d silent connections each at a voter's %s (256 handshakes at once, 16 per network, defaults), redialling when the 5 s handshake timeout cuts them off, for %v; a client of another network (127.0.0.1) asks every 100 ms on a new connection meanwhile", floodWhat(addrs, false), perAddr, target.row, lasts),
				fmt.Sprintf("%s flood dials, %d legitimate requests", itoa(int(dials)), tried),
				fmt.Sprintf("legitimate requests answered %d of %d (control, the same flood from %s, as keyed by address: %d of %d answered)", ok, tried, floodWhat(addrs, true), cOK, cTried))
			if tried < 20 || ok != tried {
				t.Errorf("got through: %d of %d legitimate requests unanswered", tried-ok, tried)
			}
			if cOK > cTried/2 {
				t.Errorf("control: %d of %d legitimate requests answered under the flood from %d networks: the flood is not a flood", cOK, cTried, addrs)
			}
		})
	}
}

// tlsRaftVoter runs a voter whose raft transport takes mutual TLS (the listener's default
// limits) and returns its raft address once it leads.
func tlsRaftVoter(t *testing.T, p pkiSet) string {
	t.Helper()
	st := p.store(t, p.dir, "v0")
	m, err := tlsconf.NewMetrics(prometheus.NewRegistry(), st)
	if err != nil {
		t.Fatal(err)
	}
	n, err := control.NewServer(control.ServerConfig{
		ID: "v0", DataDir: filepath.Join(t.TempDir(), "control"), RaftAddr: "127.0.0.1:0", RaftTLS: st, TLSMetrics: m,
		Timing: control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond},
		Logger: logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	if err := n.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(10*time.Second, n.IsLeader) {
		t.Fatal("the voter did not lead")
	}
	return n.RaftAddr()
}

// staleAppend sends one AppendEntries of term 0 to the raft port at addr on a new TLS
// connection with cfg, within a second: raft answers it (a stale term changes nothing). It
// reports whether an answer came.
func staleAppend(t *testing.T, cfg *tls.Config, addr string) bool {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransport(&rawStream{Listener: ln, cfg: cfg}, 1, time.Second, io.Discard)
	defer tr.Close()
	h := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("v1"), Addr: []byte(tr.LocalAddr())}
	var resp raft.AppendEntriesResponse
	return tr.AppendEntries("v0", raft.ServerAddress(addr), &raft.AppendEntriesRequest{RPCHeader: h, Term: 0}, &resp) == nil
}

// TestAbuseManySourcesGossip: 16 addresses of one network each hold 20 TCP connections to an
// encrypted node's gossip port without sending a byte (a stream slot each, or a place in the
// queue for one; 64 streams and 64 waiting at most), redialling whenever the 5 s stream read
// timeout cuts them off, for 6 s, while a node with the key on another network joins the
// target every 120 ms (a push/pull stream each). Keyed by network, the flood gets the 4
// stream slots and the 16 places in the queue of 127.0.1.0/24; the control, the same flood
// from 16 networks, takes every slot and every place (the finding: 0 of 41 joins).
func TestAbuseManySourcesGossip(t *testing.T) {
	const (
		addrs, perAddr = 16, 20
		lasts          = 6 * time.Second
	)
	keys := [][]byte{poolKey}
	pool := &gossipPool{t: t}
	run := func(spread bool) (dials int64, tried, ok int) {
		target, _ := pool.start(fmt.Sprintf("target-%v", spread), gossip.RoleLocation, keys, false)
		joiner, _ := pool.start(fmt.Sprintf("joiner-%v", spread), gossip.RoleChecker, keys, false)
		join := func() bool { n, err := joiner.Join(target.Addr()); return err == nil && n == 1 }
		if !waitFor(5*time.Second, join) {
			t.Fatal("the legitimate node does not join before the flood")
		}
		dials = during(500*time.Millisecond, lasts,
			func(until time.Time) int64 {
				return silentFlood(target.Addr(), floodSources(addrs, spread), perAddr, until)
			},
			func(until time.Time) { tried, ok = everyUntil(120*time.Millisecond, until, 100, join) })
		return dials, tried, ok
	}
	dials, tried, ok := run(false)
	_, cTried, cOK := run(true)
	row(t, fmt.Sprintf("gossip streams from many addresses of one network: %s hold %d silent connections each at an encrypted node's gossip port (%d streams, %d per network, defaults), redialling when the 5 s read timeout cuts them off, for %v; a node with the key on another network (127.0.0.1) joins every 120 ms meanwhile", floodWhat(addrs, false), perAddr, gossip.DefaultMaxInboundStreams, gossip.DefaultMaxInboundStreamsPerSource, lasts),
		fmt.Sprintf("%s flood dials, %d joins", itoa(int(dials)), tried),
		fmt.Sprintf("joins that went through %d of %d (control, the same flood from %s, as keyed by address: %d of %d)", ok, tried, floodWhat(addrs, true), cOK, cTried))
	if tried < 10 || ok != tried {
		t.Errorf("got through: %d of %d joins failed", tried-ok, tried)
	}
	if cOK > cTried/2 {
		t.Errorf("control: %d of %d joins went through under the flood from %d networks: the flood is not a flood", cOK, cTried, addrs)
	}
}

// TestAbuseManySourcesHTTP: 64 addresses of one network open 300 connections to the
// agent's control API and 300 to its HTTP listener and hold them with half a request header;
// a client of another network then asks each listener 20 times. Keyed by network, the
// flood keeps 16 connections per listener (-http-max-conns-per-source 16 of
// -http-max-conns 128) and the other client every answer; the control, the same flood from
// 20 networks, holds every connection.
func TestAbuseManySourcesHTTP(t *testing.T) {
	const n, tries, addrs = 300, 20, 64
	run := func(srcs []net.IP) (open, answered int) {
		a := startAgent(t, httpguard.Limits{MaxConns: 128, MaxConnsPerSource: 16})
		for _, l := range []struct{ base, path string }{{a.api, "/v1/state"}, {a.http, "/healthz"}} {
			conns, o := connFlood(t, strings.TrimPrefix(l.base, "http://"), srcs, n)
			open = max(open, o)
			answered += legitGets(l.base, l.path, tries, http.StatusOK)
			for _, c := range conns {
				c.Close()
			}
		}
		return open, answered
	}
	open, answered := run(floodSources(addrs, false))
	ctlOpen, ctlAnswered := run(floodSources(20, true))
	row(t, fmt.Sprintf("HTTP connections from many addresses of one network: %d connections to the agent's control API and %d to its HTTP listener from %s, each holding half a request header; meanwhile %d requests to each from 127.0.0.1; -http-max-conns-per-source 16, -http-max-conns 128", n, n, floodWhat(addrs, false), tries),
		fmt.Sprintf("%d connections, %d requests", 2*n, 2*tries),
		fmt.Sprintf("connections held open at most %d per listener (bound 16 per network); the other network's requests answered %d of %d (control, the same connections from %s: %d held, %d of %d answered)",
			open, answered, 2*tries, floodWhat(20, true), ctlOpen, ctlAnswered, 2*tries))
	if open > 16 || answered != 2*tries {
		t.Errorf("held %d connections (bound 16 per network), other network answered %d of %d", open, answered, 2*tries)
	}
	if ctlAnswered > tries {
		t.Errorf("control: from 20 networks the other network still got %d of %d answers: the flood is not a flood", ctlAnswered, 2*tries)
	}
}
