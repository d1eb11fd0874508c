package sim

// The ddos scenario's DNS client: the (zone, server) pairs it asks, a prober per pair over its
// own UDP socket, and a zone's resolution over its servers.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/checker/shard"
)

// ddosTarget is one (zone, name server) pair that probes ask.
type ddosTarget struct {
	zone    int
	server  int
	addr    string
	overlap int  // servers the zone shares with the victim
	victim  bool // the zone is the victim
	shared  bool // the victim has this server too
	// resolver marks a zone's resolver rather than one server's probes: server is -1.
	resolver bool
}

// ddosSample is one probe: when it was sent, how long its answer took and whether it came.
type ddosSample struct {
	sent     time.Time
	took     time.Duration
	answered bool
}

// awaitShards asks the node's main listener for every zone's NS records, as a resolver would
// learn them, until every zone has its ShardSize name servers (at most 30s), and returns each
// zone's server numbers.
func awaitShards(ctx context.Context, nd *agent.Node, fleet *shard.NameServers, zones int) ([][]int, error) {
	client := &dns.Client{Net: "udp", Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	out := make([][]int, zones)
	for i := 0; i < zones; {
		servers, err := zoneServers(client, nd.DNSAddr(), fleet, ddosZone(i))
		if err == nil && len(servers) == fleet.ShardSize() {
			out[i] = servers
			i++
			continue
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("sim: zone %s has no name-server shard within 30s (%v, %v)", ddosZone(i), servers, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("sim: %w", ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	return out, nil
}

// zoneServers returns the numbers of the virtual name servers in zone's apex NS records.
func zoneServers(client *dns.Client, addr string, fleet *shard.NameServers, zone string) ([]int, error) {
	q := new(dns.Msg)
	q.SetQuestion(zone, dns.TypeNS)
	r, _, err := client.Exchange(q, addr)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, rr := range r.Answer {
		if ns, ok := rr.(*dns.NS); ok {
			i, err := fleet.Index(ns.Ns)
			if err != nil {
				return nil, err
			}
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out, nil
}

// ddosTargets returns every (zone, server) pair, with its overlap with the victim.
func ddosTargets(nd *agent.Node, shards [][]int, victim int) ([]ddosTarget, error) {
	var out []ddosTarget
	for z, servers := range shards {
		overlap := 0
		for _, s := range servers {
			if slices.Contains(shards[victim], s) {
				overlap++
			}
		}
		for _, s := range servers {
			addr := nd.NameServerAddr(s)
			if addr == "" {
				return nil, fmt.Errorf("sim: the node does not host name server %d", s)
			}
			out = append(out, ddosTarget{zone: z, server: s, addr: addr, overlap: overlap, victim: z == victim,
				shared: slices.Contains(shards[victim], s)})
		}
	}
	return out, nil
}

// awaitAnswers asks each target once, retrying for at most 30s, until each has answered.
func awaitAnswers(ctx context.Context, targets []ddosTarget, timeout time.Duration) error {
	deadline := time.Now().Add(30 * time.Second)
	for _, t := range targets {
		for {
			p, err := newProber(t)
			if err != nil {
				return err
			}
			ok := p.ask(time.Now(), timeout).answered
			p.close()
			if ok {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("sim: %s gets no answer from name server %d at %s within 30s", ddosZone(t.zone), t.server, t.addr)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("sim: %w", ctx.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// prober asks one (zone, server) pair, over its own UDP socket.
type prober struct {
	t     ddosTarget
	conn  *net.UDPConn
	query dns.Msg
	want  netip.Addr
	buf   []byte
}

// newProber opens a socket to t.
func newProber(t ddosTarget) (*prober, error) {
	raddr, err := net.ResolveUDPAddr("udp", t.addr)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	c, err := net.DialUDP("udp", nil, raddr)
	if err != nil {
		return nil, fmt.Errorf("sim: probe: %w", err)
	}
	p := &prober{t: t, conn: c, want: ddosAnswer(t.zone), buf: make([]byte, 1500)}
	p.query.SetQuestion("www."+ddosZone(t.zone), dns.TypeA)
	return p, nil
}

func (p *prober) close() { p.conn.Close() }

// ask sends one query and waits up to timeout for its answer: NOERROR with the zone's
// address. A late answer to an earlier query is skipped.
func (p *prober) ask(now time.Time, timeout time.Duration) ddosSample {
	s := ddosSample{sent: now}
	p.query.Id = dns.Id()
	wire, err := p.query.Pack()
	if err != nil {
		return s
	}
	if _, err := p.conn.Write(wire); err != nil {
		return s
	}
	if err := p.conn.SetReadDeadline(now.Add(timeout)); err != nil {
		return s
	}
	var r dns.Msg
	for {
		n, err := p.conn.Read(p.buf)
		if err != nil {
			return s
		}
		if r.Unpack(p.buf[:n]) != nil || r.Id != p.query.Id {
			continue
		}
		s.took = time.Since(now)
		if s.took > timeout {
			// Read past its deadline (this process waited for a core): a resolver would
			// have given up.
			return s
		}
		if r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1 {
			if a, ok := r.Answer[0].(*dns.A); ok {
				addr, _ := netip.AddrFromSlice(a.A)
				s.answered = addr.Unmap() == p.want
			}
		}
		return s
	}
}

// resolve is one resolution of a zone: its servers' probers tried in a random order, each
// for tryTimeout, until one answers. Its latency is from the first try to the answer.
func resolve(ps []*prober, now time.Time, tryTimeout time.Duration) ddosSample {
	s := ddosSample{sent: now}
	for _, i := range rand.Perm(len(ps)) {
		if a := ps[i].ask(time.Now(), tryTimeout); a.answered {
			s.answered, s.took = true, time.Since(now)
			return s
		}
	}
	return s
}
