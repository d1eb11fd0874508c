package abuse

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
)

// publicAddr stands in for a public address: the checkers' policy allows exactly this
// loopback address, as an operator's allow-list would a public one; every other loopback
// address stays refused.
const publicAddr = "127.0.0.2"

// reservedTargets are addresses in every range the checker refuses by default, with the
// IPv4 ones also embedded in IPv6 (mapped, NAT64, 6to4).
var reservedTargets = []string{
	"0.0.0.0", "0.1.2.3", "10.0.0.1", "10.255.255.254", "100.64.0.1", "100.127.255.254",
	"127.0.0.1", "127.0.0.53", "127.255.255.254", "169.254.169.254", "169.254.0.1",
	"172.16.0.1", "172.31.255.254", "192.0.0.170", "192.0.2.1", "192.31.196.1", "192.52.193.1",
	"192.88.99.1", "192.168.0.1", "192.168.255.254", "192.175.48.1", "198.18.0.1",
	"198.19.255.254", "198.51.100.1", "203.0.113.1", "224.0.0.1", "239.255.255.250",
	"240.0.0.1", "255.255.255.255",
	"::", "::1", "64:ff9b:1::1", "100::1", "2001::1", "2001:db8::1", "3fff::1", "5f00::1",
	"fc00::1", "fd00::1", "fd00:ec2::254", "fe80::1", "fec0::1", "ff02::1",
	"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:192.168.1.1",
	"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::a00:1", "2002:7f00:1::1",
	"2002:a9fe:a9fe::1", "2002:c0a8:101::1",
	// IPv4-compatible and IPv4-translated forms, and IPv6 outside global unicast.
	"::a9fe:a9fe", "::7f00:1", "::a00:1", "::ffff:0:a9fe:a9fe", "::ffff:0:7f00:1",
	"::ffff:0:c0a8:101", "::2", "::808:808", "4000::1", "8000::1", "e000::1", "2620:4f:8000::1",
}

// countingListener accepts TCP connections on loopback and counts them: a stand-in for a
// service in private space. It answers HTTP requests with 200.
type countingListener struct {
	net.Listener
	accepted atomic.Int64
}

func (c *countingListener) Accept() (net.Conn, error) {
	conn, err := c.Listener.Accept()
	if err == nil {
		c.accepted.Add(1)
	}
	return conn, err
}

// serveHTTP starts an HTTP server on addr with h and returns its counting listener.
func serveHTTP(t *testing.T, addr string, h http.Handler) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, ln, h)
}

// serveOn serves h on ln until the test ends, counting its connections.
func serveOn(t *testing.T, ln net.Listener, h http.Handler) *countingListener {
	cl := &countingListener{Listener: ln}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(cl)
	t.Cleanup(func() { srv.Close() })
	return cl
}

// listenSamePort listens on one port free on both addresses a and b: a port the system gives
// on a may be taken on b by another test's listener, so it tries again (at most 50 times).
func listenSamePort(t *testing.T, a, b string) (net.Listener, net.Listener) {
	t.Helper()
	var last error
	for range 50 {
		la, err := net.Listen("tcp", net.JoinHostPort(a, "0"))
		if err != nil {
			t.Fatal(err)
		}
		port := strconv.Itoa(la.Addr().(*net.TCPAddr).Port)
		lb, err := net.Listen("tcp", net.JoinHostPort(b, port))
		if err == nil {
			return la, lb
		}
		la.Close()
		last = err
	}
	t.Fatalf("no port free on both %s and %s: %v", a, b, last)
	return nil, nil
}

// privateNetwork is a Dialer standing in for the network: a dial to publicAddr connects
// there; a dial to any other address is a connection into private space, recorded and
// connected to the private stand-in listener.
type privateNetwork struct {
	private string // the stand-in listener's address
	mu      sync.Mutex
	dialled map[string]int
}

func (p *privateNetwork) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil, fmt.Errorf("private network: %w", err)
	}
	if ap.Addr().Unmap().String() == publicAddr {
		return d.DialContext(ctx, network, address)
	}
	p.mu.Lock()
	p.dialled[ap.Addr().String()]++
	p.mu.Unlock()
	return d.DialContext(ctx, network, p.private)
}

// resolver is a DNS server on loopback (miekg/dns, a real UDP socket) that answers names of
// the form a-<address with - for . and :>.abuse.test (A or AAAA as the address is),
// rebind.abuse.test alternately with publicAddr and 127.0.0.1, and localhost.abuse.test with
// 127.0.0.1; TTL 0. Its Resolver is a net.Resolver that asks only it.
type resolver struct {
	addr    string
	rebinds atomic.Int64
}

func startResolver(t *testing.T) *resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &resolver{addr: pc.LocalAddr().String()}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(r.serve)}
	go srv.ActivateAndServe()
	t.Cleanup(func() { srv.Shutdown() })
	return r
}

func (r *resolver) serve(w dns.ResponseWriter, q *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	if len(q.Question) == 1 {
		name := strings.ToLower(q.Question[0].Name)
		var addr netip.Addr
		switch {
		case name == "rebind.abuse.test.":
			if r.rebinds.Add(1)%2 == 1 {
				addr = netip.MustParseAddr(publicAddr)
			} else {
				addr = netip.MustParseAddr("127.0.0.1")
			}
		case name == "localhost.abuse.test.":
			addr = netip.MustParseAddr("127.0.0.1")
		case strings.HasPrefix(name, "a-") && strings.HasSuffix(name, ".abuse.test."):
			label := strings.TrimSuffix(strings.TrimPrefix(name, "a-"), ".abuse.test.")
			if a, err := netip.ParseAddr(strings.ReplaceAll(strings.ReplaceAll(label, "--", ":"), "-", ".")); err == nil {
				addr = a
			} else if a, err := netip.ParseAddr(strings.ReplaceAll(label, "-", ":")); err == nil {
				addr = a
			}
		}
		hdr := dns.RR_Header{Name: q.Question[0].Name, Class: dns.ClassINET, Ttl: 0}
		switch {
		case !addr.IsValid():
			m.Rcode = dns.RcodeNameError
		case addr.Is4() && q.Question[0].Qtype == dns.TypeA:
			hdr.Rrtype = dns.TypeA
			m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: addr.AsSlice()})
		case !addr.Is4() && q.Question[0].Qtype == dns.TypeAAAA:
			hdr.Rrtype = dns.TypeAAAA
			m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: addr.AsSlice()})
		}
	}
	_ = w.WriteMsg(m)
}

// Resolver returns a net.Resolver that sends every query to this server.
func (r *resolver) Resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, r.addr)
	}}
}

// nameOf is the resolver's name for addr.
func nameOf(addr string) string {
	a := netip.MustParseAddr(addr)
	if a.Is4() {
		return "a-" + strings.ReplaceAll(addr, ".", "-") + ".abuse.test"
	}
	return "a-" + strings.ReplaceAll(a.StringExpanded(), ":", "-") + ".abuse.test"
}

func probeCheck(id string, proto config.Protocol, host string, port, ipVersion int, follow bool, path string) *config.Check {
	return &config.Check{
		ID: id, Protocol: proto, Target: config.Target{Host: host, Port: port}, IPVersion: ipVersion,
		Path: path, FollowRedirects: follow, Interval: config.Duration(time.Second), Timeout: config.Duration(2 * time.Second),
	}
}

// tally counts probe outcomes by reason.
type tally map[checker.Reason]int

func (t tally) String() string {
	var parts []string
	for r, n := range t {
		parts = append(parts, fmt.Sprintf("%s %d", r, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// TestAbuseSSRF: checks try to make a checker connect into private space: targets in every
// reserved range (as IP literals and as names that resolve to them, over HTTP and TCP), DNS
// rebinding (a resolver on loopback that answers the allowed address, then 127.0.0.1), and
// redirects from an allowed target into private space with follow_redirects on. What got
// through is every connection opened to a private address: counted by listeners standing in
// for the private services (127.0.0.1 for loopback; for every other range a dialer that
// stands in for the network and hands the connection to a counting listener). Each attack
// also runs as a control with a policy that allows everything: it must reach the listeners.
func TestAbuseSSRF(t *testing.T) {
	res := startResolver(t)
	privateLn, publicLn := listenSamePort(t, "127.0.0.1", publicAddr)
	private := serveOn(t, privateLn, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("secret"))
	}))
	port := private.Addr().(*net.TCPAddr).Port
	p := strconv.Itoa(port)
	redirects := []string{
		"http://127.0.0.1:" + p + "/", "http://[::1]:" + p + "/", "http://[::ffff:127.0.0.1]:" + p + "/",
		"http://localhost.abuse.test:" + p + "/", "http://rebind.abuse.test:" + p + "/", "http://127.1:" + p + "/",
		"http://2130706433:" + p + "/", "http://0x7f000001:" + p + "/", "http://localhost:" + p + "/",
		"http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/latest/meta-data/",
		"http://10.0.0.1/", "http://192.168.1.1/admin", "http://100.64.0.1/", "http://[fd00::1]/",
		"http://[64:ff9b::a9fe:a9fe]/", "http://[2002:a9fe:a9fe::1]/", "https://10.0.0.1/",
		"http://" + nameOf("169.254.169.254") + "/", "http://" + nameOf("10.0.0.1") + ":8080/",
	}

	// The allowed ("public") target on the same port as the private one, so that a
	// rebinding changes the address only. It redirects /r/<i> to redirects[i].
	public := serveOn(t, publicLn, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if i, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/r/")); err == nil && i >= 0 && i < len(redirects) {
			http.Redirect(w, r, redirects[i], http.StatusFound)
			return
		}
		w.Write([]byte("ok"))
	}))

	allowPublic := checker.AddressPolicy{Allow: []netip.Prefix{netip.MustParsePrefix(publicAddr + "/32")}}
	allowAll := checker.AddressPolicy{AllowLoopback: true, Allow: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0")}}

	// attacks runs every attack with policy, through the stand-in network (which sees every
	// address) and through the checker's own dialer (whose Control applies the policy at
	// connect time; only loopback attacks, so that nothing leaves the machine); it returns
	// the number of probes, the connections opened into private space, and the outcomes.
	attacks := func(policy checker.AddressPolicy) (probes, through int, reasons tally) {
		reasons = tally{}
		network := &privateNetwork{private: private.Addr().String(), dialled: map[string]int{}}
		standIn := checker.NewProber(checker.ProberOptions{Dialer: network, Resolver: res.Resolver(), Addresses: policy})
		own := checker.NewProber(checker.ProberOptions{Resolver: res.Resolver(), Addresses: policy})
		acceptedBefore := private.accepted.Load()
		run := func(pr *checker.Prober, c *config.Check) {
			r := pr.Probe(context.Background(), c)
			probes++
			reasons[r.Reason]++
		}
		for _, addr := range reservedTargets {
			ipv := 4
			if !netip.MustParseAddr(addr).Is4() {
				ipv = 6
			}
			for _, proto := range []config.Protocol{config.ProtocolHTTP, config.ProtocolTCP} {
				run(standIn, probeCheck("literal", proto, addr, 80, ipv, false, "/"))
				run(standIn, probeCheck("name", proto, nameOf(addr), 80, ipv, false, "/"))
			}
		}
		for _, pr := range []*checker.Prober{standIn, own} {
			for range 10 {
				run(pr, probeCheck("rebind", config.ProtocolHTTP, "rebind.abuse.test", port, 4, false, "/"))
			}
			for range 5 {
				run(pr, probeCheck("rebind-tcp", config.ProtocolTCP, "rebind.abuse.test", port, 4, false, ""))
			}
		}
		for i, loc := range redirects {
			run(standIn, probeCheck("redirect", config.ProtocolHTTP, publicAddr, port, 4, true, "/r/"+strconv.Itoa(i)))
			if u := strings.TrimPrefix(loc, "http://"); strings.HasPrefix(u, "127.") || strings.HasPrefix(u, "[::") || strings.HasPrefix(u, "localhost") || strings.HasPrefix(u, "rebind") {
				run(own, probeCheck("redirect", config.ProtocolHTTP, publicAddr, port, 4, true, "/r/"+strconv.Itoa(i)))
			}
		}
		return probes, int(private.accepted.Load() - acceptedBefore), reasons
	}

	publicBefore := public.accepted.Load()
	probes, through, reasons := attacks(allowPublic)
	publicHits := public.accepted.Load() - publicBefore
	ctlProbes, ctlThrough, ctlReasons := attacks(allowAll)

	// What config validation refuses statically: a check's target address is judged by each
	// checker's own policy (an operator may allow a private range); validation refuses only
	// what no policy can make an endpoint (unspecified, multicast, broadcast, 0.0.0.0/8).
	static := 0
	for _, addr := range reservedTargets {
		doc := fmt.Sprintf("regions: [a, b, c]\nchecks:\n  - id: x\n    protocol: tcp\n    target: {host: %q, port: 80}\n", addr)
		if _, err := config.Parse([]byte(doc)); err != nil {
			static++
		}
	}

	t.Logf("outcomes: %s; the allowed target accepted %d connections (rebinding's allowed answers and redirect first hops)", reasons, publicHits)
	t.Logf("control (policy allows everything): %d probes, %d connections into private space, outcomes: %s", ctlProbes, ctlThrough, ctlReasons)
	t.Logf("config validation refused %d of %d checks with a reserved target address (those no policy makes an endpoint; the rest is each checker's policy)", static, len(reservedTargets))
	row(t, fmt.Sprintf("SSRF: checks aimed into private space: %d addresses in every reserved range the checker refuses (loopback with loopback off, RFC 1918, link-local incl. 169.254.169.254, CGNAT, ULA, IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64, 6to4, IPv6 outside 2000::/3, documentation, multicast, ...) as literals and as names, HTTP and TCP; DNS rebinding (a loopback resolver answering the allowed address, then 127.0.0.1); %d redirects from an allowed target into private space (follow_redirects on)", len(reservedTargets), len(redirects)),
		fmt.Sprintf("%d probes", probes),
		fmt.Sprintf("%d connections into private space (control with everything allowed: %d of %d probes connected)", through, ctlThrough, ctlProbes))
	if through != 0 {
		t.Errorf("got through: %d connections into private space", through)
	}
	if publicHits == 0 {
		t.Error("the allowed target was never reached: the attacks did not run")
	}
	if ctlThrough < probes/2 {
		t.Errorf("control: only %d of %d probes reached private space with everything allowed, so the test cannot fail", ctlThrough, ctlProbes)
	}
}
