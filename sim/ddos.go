package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/dev"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/node"
	"github.com/vigil-dns/vigil/shard"
	"golang.org/x/net/ipv4"
)

// DDoSName is the name of the query-flood scenario, which runs on its own network (one agent
// runtime with the control and location roles) rather than from a script.
const DDoSName = "ddos"

// DDoSConfig configures the ddos scenario. The zero value of a field means its default,
// listed with the field.
type DDoSConfig struct {
	// Zones is the number of zones of the document. Default 40.
	Zones int
	// Fleet and ShardSize are the virtual name servers of the sharded layout: Fleet servers,
	// ShardSize per zone, no two zones sharing more than 2. Default 16 and 4.
	Fleet, ShardSize int
	// Budget is the queries a second each virtual name server answers. Default 5,000.
	Budget int
	// FloodRate is the queries a second sent to each of the victim's name servers. Default
	// 25,000 (five times the default budget).
	FloodRate int
	// FloodSenders is the number of sending goroutines per victim name server. Default 1.
	FloodSenders int
	// Flood is how long the flood lasts. Default 6s.
	Flood time.Duration
	// Before is how long the zones are measured before the flood starts. Default 2s.
	Before time.Duration
	// ProbeInterval is how often each zone is asked one query on each of its name servers.
	// Default 100ms.
	ProbeInterval time.Duration
	// ProbeTimeout is how long a probe waits for its answer before it counts as unanswered.
	// Default 1s.
	ProbeTimeout time.Duration
	// TryTimeout is how long a resolver's try of one name server waits before it tries the
	// zone's next server. Default 250ms.
	TryTimeout time.Duration
	// Unsharded also runs the same flood with every zone on the same ShardSize servers, for
	// comparison. Default off.
	Unsharded bool
	// DataDir holds the node's data directories (raft log, disk copy). Required.
	DataDir string
	// Timeline, when set, receives a line per step as the scenario runs.
	Timeline io.Writer
	// Logger receives the node's logs; nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with every default filled in.
func (c DDoSConfig) withDefaults() DDoSConfig {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Zones, 40)
	def(&c.Fleet, 16)
	def(&c.ShardSize, 4)
	def(&c.Budget, 5000)
	def(&c.FloodRate, 25000)
	def(&c.FloodSenders, 1)
	defDur(&c.Flood, 6*time.Second)
	defDur(&c.Before, 2*time.Second)
	defDur(&c.ProbeInterval, 100*time.Millisecond)
	defDur(&c.ProbeTimeout, time.Second)
	defDur(&c.TryTimeout, 250*time.Millisecond)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Bounds of DDoSConfig, so that a run stays bounded in time and traffic.
const (
	maxDDoSZones       = 200
	maxDDoSFleet       = 64
	maxDDoSFlood       = 60 * time.Second
	maxDDoSFloodRate   = 1_000_000
	maxDDoSSenders     = 16
	minDDoSProbeEvery  = 10 * time.Millisecond
	maxDDoSProbeWindow = 5 * time.Second
)

// validate reports a configuration out of bounds.
func (c DDoSConfig) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Zones < 2 || c.Zones > maxDDoSZones {
		bad("zones %d: want 2 to %d", c.Zones, maxDDoSZones)
	}
	if c.Fleet > maxDDoSFleet || c.ShardSize > c.Fleet || c.ShardSize < 3 {
		bad("fleet %d, shard size %d: want a shard size of 3 to the fleet, a fleet of at most %d", c.Fleet, c.ShardSize, maxDDoSFleet)
	}
	if c.Flood > maxDDoSFlood || c.Before > maxDDoSFlood {
		bad("flood %v, before %v: at most %v each", c.Flood, c.Before, maxDDoSFlood)
	}
	if c.FloodRate > maxDDoSFloodRate {
		bad("flood rate %d: at most %d a second per server", c.FloodRate, maxDDoSFloodRate)
	}
	if c.FloodSenders > maxDDoSSenders {
		bad("flood senders %d: at most %d per server", c.FloodSenders, maxDDoSSenders)
	}
	if c.ProbeInterval < minDDoSProbeEvery || c.ProbeTimeout > maxDDoSProbeWindow || c.TryTimeout > maxDDoSProbeWindow {
		bad("probe interval %v, timeout %v: at least %v and at most %v", c.ProbeInterval, c.ProbeTimeout, minDDoSProbeEvery, maxDDoSProbeWindow)
	}
	if c.DataDir == "" {
		bad("no data directory")
	}
	return errors.Join(errs...)
}

// DDoSResult is what the ddos scenario measured: the sharded layout and, when asked, the
// unsharded one under the same flood.
type DDoSResult struct {
	// Config is the configuration the scenario ran with, defaults filled in.
	Config DDoSConfig
	// Sharded is the run with shuffle sharding: Fleet servers, ShardSize per zone, overlap at
	// most 2.
	Sharded *DDoSRun
	// Unsharded is the run with every zone on the same servers, or nil.
	Unsharded *DDoSRun
}

// DDoSRun is one layout's run: the victim, the flood and every group's answers.
type DDoSRun struct {
	// Layout describes the name-server layout.
	Layout string
	// Victim is the flooded zone; VictimServers its name servers, which the flood targets.
	Victim        string
	VictimServers []int
	// Zones is the number of zones.
	Zones int
	// FloodSent is the number of flood queries sent; FloodTook how long sending them took.
	FloodSent int64
	FloodTook time.Duration
	// BudgetDrops is the number of queries the victim's servers dropped for their budget;
	// VictimAnswered the number of the victim zone's queries the location answered (flood and
	// probes).
	BudgetDrops, VictimAnswered float64
	// CPU is the CPU time (user and system) the whole process used while the flood lasted:
	// the flood's senders, the location and the probes together; 0 when unknown.
	CPU time.Duration
	// Load is the machine's load average (1, 5 and 15 minutes) when the flood started, or ""
	// where the system does not tell: other work on the machine takes cores from the run.
	Load string
	// Groups are the probes' figures, by group and phase.
	Groups []DDoSGroup
}

// Phases of a DDoSGroup.
const (
	PhaseBefore = "before"
	PhaseFlood  = "flood"
)

// DDoSGroup is the answers that one group of zones got on one kind of server in one phase.
type DDoSGroup struct {
	// Overlap is how many name servers the group's zones share with the victim; the victim
	// itself has Overlap equal to the shard size and Victim set.
	Overlap int
	Victim  bool
	// Shared says the figures are of queries to servers the victim also has.
	Shared bool
	// Resolver says the figures are of resolutions: a resolver tries the zone's servers in a
	// random order, each for TryTimeout, until one answers; its latency is the whole
	// resolution's.
	Resolver bool
	// Phase is PhaseBefore or PhaseFlood.
	Phase string
	// Zones and Servers are the number of zones and of (zone, server) pairs in the group.
	Zones, Servers int
	// Sent and Answered count the probes; latencies are of the answered ones.
	Sent, Answered     int
	P50, P99, Max      time.Duration
	latencies          []time.Duration
	zoneSet, serverSet map[string]bool
}

// AnsweredShare returns the share of the group's probes that were answered, 0 to 1.
func (g *DDoSGroup) AnsweredShare() float64 {
	if g.Sent == 0 {
		return 0
	}
	return float64(g.Answered) / float64(g.Sent)
}

// Name returns a short description of the group, e.g. "shares 1, unshared servers".
func (g *DDoSGroup) Name() string {
	kind := "unshared servers"
	switch {
	case g.Resolver:
		kind = "resolver"
	case g.Shared:
		kind = "shared servers"
	}
	if g.Victim {
		return "victim zone, " + kind
	}
	return fmt.Sprintf("shares %d, %s", g.Overlap, kind)
}

// Group returns the group of the run with the given overlap, kind and phase, or nil.
func (r *DDoSRun) Group(victim bool, overlap int, shared, resolver bool, phase string) *DDoSGroup {
	for i := range r.Groups {
		g := &r.Groups[i]
		if g.Victim == victim && g.Overlap == overlap && g.Shared == shared && g.Resolver == resolver && g.Phase == phase {
			return g
		}
	}
	return nil
}

// RunDDoS runs the ddos scenario: one agent runtime (package node) with the control role
// (raft with its BoltDB log, the name-server allocator) and the location role, hosting every
// virtual name server on its own loopback address, serves a document of many zones. One
// zone's name servers are flooded over UDP while every zone is asked, on each of its name
// servers, before and during the flood. With cfg.Unsharded the same runs again with every zone
// on the same servers.
func RunDDoS(ctx context.Context, cfg DDoSConfig) (DDoSResult, error) {
	cfg = cfg.withDefaults()
	res := DDoSResult{Config: cfg}
	if err := cfg.validate(); err != nil {
		return res, fmt.Errorf("sim: ddos: %w", err)
	}
	sharded := config.NameServerSettings{Domain: "ns.ddos.vigil.test.", Fleet: cfg.Fleet, ShardSize: cfg.ShardSize,
		MaxOverlap: 2, Mode: shard.ModeStateful}
	run, err := runDDoSLayout(ctx, cfg, sharded, filepath.Join(cfg.DataDir, "sharded"))
	res.Sharded = run
	if err != nil || !cfg.Unsharded {
		return res, err
	}
	unsharded := config.NameServerSettings{Domain: "ns.ddos.vigil.test.", Fleet: cfg.ShardSize, ShardSize: cfg.ShardSize,
		MaxOverlap: cfg.ShardSize, Mode: shard.ModeStateful}
	res.Unsharded, err = runDDoSLayout(ctx, cfg, unsharded, filepath.Join(cfg.DataDir, "unsharded"))
	return res, err
}

// ddosZone names zone i of the document.
func ddosZone(i int) string { return fmt.Sprintf("z%02d.ddos.vigil.test.", i) }

// ddosAnswer is the address zone i's www record holds, so that a probe can tell its zone's
// answer from any other.
func ddosAnswer(i int) netip.Addr { return netip.AddrFrom4([4]byte{192, 0, 2, byte(1 + i%250)}) }

// ddosDocument returns a document of n zones, each with one A record, sharded by ns.
func ddosDocument(n int, ns config.NameServerSettings) (*config.Document, error) {
	var b strings.Builder
	b.WriteString("regions: [us-east]\nzones:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: %s\n    record_sets:\n      - {name: www, type: A, records: [{value: %s}]}\n", ddosZone(i), ddosAnswer(i))
	}
	doc, err := config.Decode([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("sim: ddos document: %w", err)
	}
	doc.NameServers = ns
	return doc, nil
}

// ddosNode is the scenario's one node and what the scenario reads from it.
type ddosNode struct {
	node   *node.Node
	cancel context.CancelFunc
	done   chan error
}

// startDDoSNode starts a node with the control and location roles hosting every virtual name
// server of fleet on 127.0.1.<i+1> and applies doc through its control API.
func startDDoSNode(ctx context.Context, cfg DDoSConfig, doc *config.Document, dir string) (*ddosNode, error) {
	raftPort, err := freePort()
	if err != nil {
		return nil, err
	}
	key, err := gossip.ParseKey(dev.DemoKey)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	c := node.DefaultConfig()
	c.ID, c.Region, c.Roles, c.DataDir = "ddos-location", "us-east", node.RoleControl|node.RoleLocation, dir
	c.HTTPAddr, c.DNSAddr, c.EvalInterval = "off", "127.0.0.1:0", 100*time.Millisecond
	c.Gossip.Bind, c.Gossip.Keys, c.Gossip.Profile = "127.0.0.1:0", [][]byte{key}, gossip.ProfileLocal
	c.Control.RaftAddr, c.Control.APIAddr = fmt.Sprintf("127.0.0.1:%d", raftPort), "127.0.0.1:0"
	c.Control.Bootstrap, c.Control.WriteTokens = true, []string{nodesToken}
	c.Control.Timing = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond,
		LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
	c.Control.RaftLogLevel = slog.LevelWarn
	c.Token = nodesToken
	c.NameServers = map[int]string{}
	for i := range doc.NameServers.Fleet {
		c.NameServers[i] = fmt.Sprintf("127.0.1.%d:0", i+1)
	}
	c.NameServerBudget = cfg.Budget
	c.Registerer = prometheus.NewRegistry()
	c.Logger = cfg.Logger.With("node", c.ID)
	nd, err := node.New(c)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	dn := &ddosNode{node: nd, cancel: cancel, done: make(chan error, 1)}
	go func() { dn.done <- nd.Run(runCtx) }()
	body, err := json.Marshal(doc)
	if err != nil {
		_ = dn.stop()
		return nil, fmt.Errorf("sim: document: %w", err)
	}
	api := nd.Self().ControlAPI
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := putDocument(ctx, api, body)
		if err == nil {
			return dn, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = dn.stop()
			return nil, fmt.Errorf("sim: the voter took no document within 30s: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stop stops the node and waits until it has stopped (at most 20s).
func (d *ddosNode) stop() error {
	d.cancel()
	select {
	case err := <-d.done:
		return err
	case <-time.After(20 * time.Second):
		return errors.New("sim: the ddos node did not stop within 20s")
	}
}

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

// runDDoSLayout runs the scenario on one name-server layout.
func runDDoSLayout(ctx context.Context, cfg DDoSConfig, ns config.NameServerSettings, dir string) (*DDoSRun, error) {
	doc, err := ddosDocument(cfg.Zones, ns)
	if err != nil {
		return nil, err
	}
	layout := fmt.Sprintf("fleet %d, shard size %d, overlap at most %d (stateful allocator)", ns.Fleet, ns.ShardSize, min(ns.MaxOverlap, ns.ShardSize))
	if ns.Fleet == ns.ShardSize {
		layout = fmt.Sprintf("no sharding: every zone on the same %d servers", ns.Fleet)
	}
	timeline(cfg.Timeline, "layout: %s; %d zones", layout, cfg.Zones)
	dn, err := startDDoSNode(ctx, cfg, doc, dir)
	if err != nil {
		return nil, err
	}
	run := &DDoSRun{Layout: layout, Zones: cfg.Zones}
	err = func() error {
		fleet, err := shard.NewNameServers(ns)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		shards, err := awaitShards(ctx, dn.node, fleet, cfg.Zones)
		if err != nil {
			return err
		}
		const victim = 0
		run.Victim, run.VictimServers = ddosZone(victim), shards[victim]
		targets, err := ddosTargets(dn.node, shards, victim)
		if err != nil {
			return err
		}
		if err := awaitAnswers(ctx, targets, cfg.ProbeTimeout); err != nil {
			return err
		}
		names := fleet.Names(run.VictimServers)
		timeline(cfg.Timeline, "ready: victim %s on %s", run.Victim, strings.Join(names, ", "))
		return measure(ctx, cfg, dn.node, run, targets)
	}()
	if serr := dn.stop(); err == nil && serr != nil && ctx.Err() == nil {
		err = fmt.Errorf("sim: ddos node: %w", serr)
	}
	return run, err
}

// timeline writes one line to w, when set.
func timeline(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, "  "+format+"\n", args...)
	}
}

// awaitShards asks the node's main listener for every zone's NS records, as a resolver would
// learn them, until every zone has its ShardSize name servers (at most 30s), and returns each
// zone's server numbers.
func awaitShards(ctx context.Context, nd *node.Node, fleet *shard.NameServers, zones int) ([][]int, error) {
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
func ddosTargets(nd *node.Node, shards [][]int, victim int) ([]ddosTarget, error) {
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

// measure probes every target for cfg.Before, then floods the victim's servers for cfg.Flood
// while probing on, and fills run with the figures.
func measure(ctx context.Context, cfg DDoSConfig, nd *node.Node, run *DDoSRun, targets []ddosTarget) error {
	probers := make([]*prober, 0, len(targets))
	defer func() {
		for _, p := range probers {
			p.close()
		}
	}()
	series := make([]ddosTarget, 0, len(targets)+run.Zones)
	asks := make([]func(time.Time) ddosSample, 0, len(targets)+run.Zones)
	for _, t := range targets {
		p, err := newProber(t)
		if err != nil {
			return err
		}
		probers = append(probers, p)
		series = append(series, t)
		asks = append(asks, func(now time.Time) ddosSample { return p.ask(now, cfg.ProbeTimeout) })
	}
	// Each zone's resolver has its own sockets, one per name server.
	byZone := map[int][]*prober{}
	for _, t := range targets {
		p, err := newProber(t)
		if err != nil {
			return err
		}
		probers = append(probers, p)
		byZone[t.zone] = append(byZone[t.zone], p)
	}
	for z := range run.Zones {
		ps := byZone[z]
		if len(ps) == 0 {
			continue
		}
		meta := ps[0].t
		meta.server, meta.addr, meta.shared, meta.resolver = -1, "", false, true
		series = append(series, meta)
		asks = append(asks, func(now time.Time) ddosSample { return resolve(ps, now, cfg.TryTimeout) })
	}
	wait := max(cfg.ProbeTimeout, time.Duration(cfg.ShardSize)*cfg.TryTimeout)
	var victimAddrs []string
	for _, s := range run.VictimServers {
		victimAddrs = append(victimAddrs, nd.NameServerAddr(s))
	}
	dropsBefore, answeredBefore := victimCounters(nd, run)

	start := time.Now()
	floodAt := start.Add(cfg.Before)
	end := floodAt.Add(cfg.Flood)
	ctx, cancel := context.WithDeadline(ctx, end.Add(wait))
	defer cancel()
	samples := make([][]ddosSample, len(series))
	var wg sync.WaitGroup
	for i, ask := range asks {
		wg.Go(func() {
			// Each prober starts at its own offset in the interval, so that probes spread.
			next := start.Add(time.Duration(rand.Int64N(int64(cfg.ProbeInterval))))
			limit := int((end.Sub(start))/cfg.ProbeInterval) + 2
			for len(samples[i]) < limit {
				if !sleepUntil(ctx, next) {
					return
				}
				now := time.Now()
				if !now.Before(end) {
					return
				}
				samples[i] = append(samples[i], ask(now))
				next = next.Add(cfg.ProbeInterval)
				if next.Before(time.Now()) {
					next = time.Now() // a slow answer does not make the prober catch up in a burst
				}
			}
		})
	}
	timeline(cfg.Timeline, "probing %d (zone, server) pairs and resolving %d zones every %v; flood in %v", len(targets), len(series)-len(targets), cfg.ProbeInterval, cfg.Before)
	var sent atomic.Int64
	var floodErr error
	if sleepUntil(ctx, floodAt) {
		timeline(cfg.Timeline, "flood: %d q/s to each of %s for %v, %d sender(s) each", cfg.FloodRate, strings.Join(victimAddrs, ", "), cfg.Flood, cfg.FloodSenders)
		floodStart := time.Now()
		cpu0, ok0 := processCPU()
		run.Load = loadAverage()
		floodErr = flood(ctx, victimAddrs, "www."+run.Victim, cfg.FloodRate, cfg.FloodSenders, end, &sent)
		run.FloodTook = time.Since(floodStart)
		if cpu1, ok1 := processCPU(); ok0 && ok1 {
			run.CPU = cpu1 - cpu0
		}
	}
	wg.Wait()
	run.FloodSent = sent.Load()
	dropsAfter, answeredAfter := victimCounters(nd, run)
	run.BudgetDrops, run.VictimAnswered = dropsAfter-dropsBefore, answeredAfter-answeredBefore
	timeline(cfg.Timeline, "flood over: %d queries sent in %v (%.0f q/s per server); %.0f dropped by the budgets, %.0f of the victim's queries answered",
		run.FloodSent, run.FloodTook.Round(time.Millisecond), float64(run.FloodSent)/max(run.FloodTook.Seconds(), 1e-3)/float64(len(victimAddrs)),
		run.BudgetDrops, run.VictimAnswered)
	run.Groups = groupSamples(series, samples, floodAt, end)
	return floodErr
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

// sleepUntil waits until t and reports whether ctx is still alive.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// floodBatch is how many queries a flood sender writes with one system call.
const floodBatch = 16

// flood sends queries for name to each address at rate a second, split over senders
// goroutines per address, until end; sent counts them. The count is bounded by rate times
// the time to end (plus one batch per sender).
func flood(ctx context.Context, addrs []string, name string, rate, senders int, end time.Time, sent *atomic.Int64) error {
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeA)
	wire, err := q.Pack()
	if err != nil {
		return fmt.Errorf("sim: flood: %w", err)
	}
	per := float64(rate) / float64(senders)
	var wg sync.WaitGroup
	errs := make(chan error, len(addrs)*senders)
	for _, addr := range addrs {
		raddr, err := net.ResolveUDPAddr("udp", addr)
		if err != nil {
			return fmt.Errorf("sim: flood: %w", err)
		}
		for range senders {
			// The flood comes from its own loopback network, apart from the probes'.
			c, err := net.DialUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 66, 0, 1)}, raddr)
			if err != nil {
				errs <- fmt.Errorf("sim: flood: %w", err)
				continue
			}
			wg.Go(func() {
				defer c.Close()
				pc := ipv4.NewPacketConn(c)
				ms := make([]ipv4.Message, floodBatch)
				for i := range ms {
					ms[i].Buffers = [][]byte{wire}
				}
				start := time.Now()
				var n int64
				for ctx.Err() == nil {
					now := time.Now()
					if !now.Before(end) {
						return
					}
					due := int64(now.Sub(start).Seconds()*per) - n
					if due <= 0 {
						time.Sleep(200 * time.Microsecond)
						continue
					}
					k, err := pc.WriteBatch(ms[:min(due, floodBatch)], 0)
					if err != nil {
						// A flood does not care whether a datagram was refused; count it sent.
						k = max(k, 1)
					}
					n += int64(k)
					sent.Add(int64(k))
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// victimCounters reads from the node's metrics the queries the victim's servers dropped for
// their budget and the victim zone's answered queries.
func victimCounters(nd *node.Node, run *DDoSRun) (drops, answered float64) {
	mfs, err := nd.Gatherer().Gather()
	if err != nil {
		return 0, 0
	}
	listeners := map[string]bool{}
	for _, s := range run.VictimServers {
		listeners[fmt.Sprintf("ns-%d", s)] = true
	}
	label := func(m *dto.Metric, name string) string {
		for _, l := range m.GetLabel() {
			if l.GetName() == name {
				return l.GetValue()
			}
		}
		return ""
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "vigil_location_queries_dropped_total":
			for _, m := range mf.GetMetric() {
				if label(m, "reason") == "budget" && listeners[label(m, "listener")] {
					drops += m.GetCounter().GetValue()
				}
			}
		case "vigil_location_queries_total":
			for _, m := range mf.GetMetric() {
				if label(m, "zone") == run.Victim {
					answered += m.GetCounter().GetValue()
				}
			}
		}
	}
	return drops, answered
}

// groupSamples sorts the samples into groups by overlap, shared server and phase; a probe
// belongs to the phase it was sent in.
func groupSamples(targets []ddosTarget, samples [][]ddosSample, floodAt, end time.Time) []DDoSGroup {
	var groups []DDoSGroup
	find := func(t ddosTarget, phase string) *DDoSGroup {
		for i := range groups {
			g := &groups[i]
			if g.Victim == t.victim && g.Overlap == t.overlap && g.Shared == t.shared && g.Resolver == t.resolver && g.Phase == phase {
				return g
			}
		}
		groups = append(groups, DDoSGroup{Victim: t.victim, Overlap: t.overlap, Shared: t.shared, Resolver: t.resolver, Phase: phase,
			zoneSet: map[string]bool{}, serverSet: map[string]bool{}})
		return &groups[len(groups)-1]
	}
	for i, t := range targets {
		for _, s := range samples[i] {
			phase := PhaseBefore
			if !s.sent.Before(floodAt) {
				phase = PhaseFlood
			}
			if !s.sent.Before(end) {
				continue
			}
			g := find(t, phase)
			g.zoneSet[ddosZone(t.zone)] = true
			g.serverSet[t.addr+"/"+ddosZone(t.zone)] = true
			g.Sent++
			if s.answered {
				g.Answered++
				g.latencies = append(g.latencies, s.took)
			}
		}
	}
	for i := range groups {
		g := &groups[i]
		g.Zones, g.Servers = len(g.zoneSet), len(g.serverSet)
		slices.Sort(g.latencies)
		if n := len(g.latencies); n > 0 {
			g.P50, g.P99, g.Max = g.latencies[(n-1)/2], g.latencies[(n*99+99)/100-1], g.latencies[n-1]
		}
	}
	slices.SortFunc(groups, func(a, b DDoSGroup) int {
		key := func(g DDoSGroup) int {
			k := g.Overlap * 8
			if g.Victim {
				k = 1000
			}
			switch {
			case g.Shared:
				k += 2
			case g.Resolver:
				k += 4
			}
			if g.Phase == PhaseFlood {
				k++
			}
			return k
		}
		return key(a) - key(b)
	})
	return groups
}

// WriteReport writes the figures of every run as tables.
func (r DDoSResult) WriteReport(w io.Writer) error {
	c := r.Config
	fmt.Fprintf(w, "\nddos: %d zones; each virtual name server answers %d q/s; the flood sends %d q/s to each of the victim's servers for %v; probes every %v per (zone, server), %v timeout; each zone's resolver every %v, %v a try\n",
		c.Zones, c.Budget, c.FloodRate, c.Flood, c.ProbeInterval, c.ProbeTimeout, c.ProbeInterval, c.TryTimeout)
	for _, run := range []*DDoSRun{r.Sharded, r.Unsharded} {
		if run == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s\nvictim %s on %v; flood: %d queries in %v (%.0f q/s per server), %.0f dropped by the budgets, %.0f of the victim's queries answered\n",
			run.Layout, run.Victim, run.VictimServers, run.FloodSent, run.FloodTook.Round(time.Millisecond),
			float64(run.FloodSent)/max(run.FloodTook.Seconds(), 1e-3)/float64(max(len(run.VictimServers), 1)), run.BudgetDrops, run.VictimAnswered)
		if run.CPU > 0 {
			fmt.Fprintf(w, "CPU of the whole process (flood senders, location, probes) during the flood: %.2fs in %.2fs, %.2f cores busy of %d\n",
				run.CPU.Seconds(), run.FloodTook.Seconds(), run.CPU.Seconds()/max(run.FloodTook.Seconds(), 1e-3), runtime.NumCPU())
		}
		if run.Load != "" {
			fmt.Fprintf(w, "machine load average when the flood started: %s\n", run.Load)
		}
		fmt.Fprintf(w, "%-30s %5s %7s %-7s %7s %9s %9s %9s %9s\n", "group", "zones", "servers", "phase", "probes", "answered", "p50", "p99", "max")
		for i := range run.Groups {
			g := &run.Groups[i]
			fmt.Fprintf(w, "%-30s %5d %7d %-7s %7d %8.1f%% %9s %9s %9s\n", g.Name(), g.Zones, g.Servers, g.Phase, g.Sent,
				100*g.AnsweredShare(), fmtMs(g.P50), fmtMs(g.P99), fmtMs(g.Max))
		}
	}
	return nil
}

// fmtMs formats a latency in milliseconds.
func fmtMs(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}

// loadAverage returns the machine's load averages from /proc/loadavg, or "" where there is
// none.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// DDoSBounds is the claim a ddos run is checked against.
type DDoSBounds struct {
	// MinAnswered is the least share (0 to 1) of probes answered, during the flood, on the
	// servers of every zone that the victim does not have; and before the flood, everywhere.
	MinAnswered float64
	// MaxP99 bounds the 99th percentile of their answers' latency during the flood.
	MaxP99 time.Duration
	// MaxUnshardedAnswered is the most share of the other zones' probes the unsharded run may
	// answer during the flood: more means the flood did not reach them, and the comparison
	// shows nothing.
	MaxUnshardedAnswered float64
}

// Problems checks the result against b and returns what does not hold, or nothing. Every zone
// but the victim must also resolve (MinAnswered) within MaxP99 plus one TryTimeout per server
// it shares with the victim. Beyond b:
// the flood was sent (at least half its queries), the victim's servers dropped queries for
// their budgets and answered at most their budgets (so less than half the flood), shed some of
// the probes, some zones share 1 and 2 servers with the victim, and none shares more than 2.
func (r DDoSResult) Problems(b DDoSBounds) []string {
	var out []string
	bad := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	c := r.Config
	shed := func(name string, run *DDoSRun) {
		servers := float64(len(run.VictimServers))
		if want := int64(float64(c.FloodRate) * servers * c.Flood.Seconds() / 2); run.FloodSent < want {
			bad("%s: the flood sent only %d queries (want at least %d): this process got too little CPU", name, run.FloodSent, want)
		}
		// On a busy machine the kernel drops some of the flood too, when the location waits
		// for a core and its sockets' buffers fill: the budgets need not drop all the excess.
		if run.BudgetDrops == 0 || run.VictimAnswered > float64(run.FloodSent)/2 {
			bad("%s: %.0f of %d flood queries dropped by the budgets, %.0f of the victim's queries answered", name, run.BudgetDrops, run.FloodSent, run.VictimAnswered)
		}
		if most := servers * float64(c.Budget) * (run.FloodTook.Seconds() + c.ProbeTimeout.Seconds() + 0.1) * 1.1; run.VictimAnswered > most {
			bad("%s: the victim's servers answered %.0f queries, over their budgets' %.0f", name, run.VictimAnswered, most)
		}
		sent, answered := 0, 0
		for i := range run.Groups {
			if g := &run.Groups[i]; g.Phase == PhaseFlood && g.Shared {
				sent += g.Sent
				answered += g.Answered
			}
		}
		if sent == 0 || float64(answered) > 0.85*float64(sent) {
			bad("%s: the victim's servers answered %d of %d probes during the flood: they did not shed", name, answered, sent)
		}
	}
	if run := r.Sharded; run == nil {
		bad("no sharded run")
	} else {
		shed("sharded", run)
		overlaps := map[int]bool{}
		for i := range run.Groups {
			g := &run.Groups[i]
			if !g.Victim && g.Overlap > 2 && g.Phase == PhaseBefore && !g.Resolver && !g.Shared {
				bad("sharded: %d zones share %d servers with the victim, over the allocator's limit of 2", g.Zones, g.Overlap)
			}
			if g.Phase == PhaseBefore && g.AnsweredShare() < b.MinAnswered {
				bad("sharded, before the flood: %s answered %.1f%% of %d", g.Name(), 100*g.AnsweredShare(), g.Sent)
			}
			if g.Phase != PhaseFlood || g.Victim || g.Shared {
				continue
			}
			if g.Resolver {
				// A resolver may try each shared server once before an unshared one answers.
				most := time.Duration(g.Overlap)*c.TryTimeout + b.MaxP99
				if g.AnsweredShare() < b.MinAnswered || g.P99 > most {
					bad("sharded, flood: %s resolved %.1f%% of %d, p99 %v: want at least %.0f%%, p99 within %v",
						g.Name(), 100*g.AnsweredShare(), g.Sent, g.P99.Round(time.Microsecond), 100*b.MinAnswered, most)
				}
				continue
			}
			overlaps[g.Overlap] = true
			if g.Sent < g.Servers*int(c.Flood/c.ProbeInterval)/3 {
				bad("sharded, flood: %s: only %d probes over %d servers", g.Name(), g.Sent, g.Servers)
			}
			if g.AnsweredShare() < b.MinAnswered || g.P99 > b.MaxP99 {
				bad("sharded, flood: %s answered %.1f%% of %d, p99 %v: want at least %.0f%%, p99 within %v",
					g.Name(), 100*g.AnsweredShare(), g.Sent, g.P99.Round(time.Microsecond), 100*b.MinAnswered, b.MaxP99)
			}
		}
		if !overlaps[1] || !overlaps[2] {
			bad("sharded: no zone shares 1 or 2 servers with the victim: the run shows nothing")
		}
	}
	if run := r.Unsharded; run != nil {
		shed("unsharded", run)
		g := run.Group(false, c.ShardSize, true, false, PhaseFlood)
		switch {
		case g == nil || g.Sent < 100:
			bad("unsharded: too few probes of the other zones during the flood")
		case g.AnsweredShare() > b.MaxUnshardedAnswered:
			bad("unsharded, flood: the other zones answered %.1f%% of %d: the flood did not reach them", 100*g.AnsweredShare(), g.Sent)
		}
	}
	return out
}
