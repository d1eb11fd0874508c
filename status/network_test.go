package status

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/node"
	"github.com/vigil-dns/vigil/quorum"
)

// netKey is the pool key of the test network.
var netKey = []byte("vigil-status-test-key-0123456789")

// endpoint is a real HTTP endpoint that can be made to fail.
type endpoint struct {
	srv  *httptest.Server
	down atomic.Bool
}

func newEndpoint(t *testing.T) *endpoint {
	t.Helper()
	e := &endpoint{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if e.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(e.srv.Close)
	return e
}

// runNode starts n until the test ends, and checks that it stops within a bound.
func runNode(t *testing.T, n *node.Node) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- n.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("node run: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("node did not stop within 20s")
		}
	})
}

// TestNetworkEndpointFailureShows runs an in-process network of three regions on loopback (real
// memberlist with an encryption key, real probes, real DNS server): a checker-and-location node
// in us-east serving the status API, and a checker in eu-west and in sa-east. The us-east
// endpoint is made unhealthy; the status API (and the page, when Chromium is there) shows it
// within its detection time, with every region's checker's vote as evidence.
func TestNetworkEndpointFailureShows(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-node network for several seconds")
	}
	eps := map[string]*endpoint{"us-east": newEndpoint(t), "eu-west": newEndpoint(t), "sa-east": newEndpoint(t)}
	doc, err := config.Load("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range doc.Checks {
		c := &doc.Checks[i]
		c.CheckersPerRegion = 1
		for region, ep := range eps {
			if c.ID == "web-"+region {
				c.Target.Port = ep.srv.Listener.Addr().(*net.TCPAddr).Port
			}
		}
	}

	mk := func(id, region string, roles node.Roles, join []string) (*node.Node, *prometheus.Registry) {
		reg := prometheus.NewRegistry()
		cfg := node.DefaultConfig()
		cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir, cfg.Version = id, region, roles, t.TempDir(), "test"
		cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile, cfg.Gossip.Join = "127.0.0.1:0", [][]byte{netKey}, gossip.ProfileLocal, join
		cfg.DNSAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
		cfg.Static, cfg.Probe.AllowLoopback, cfg.EvalInterval = doc, true, 100*time.Millisecond
		cfg.Logger, cfg.Registerer = slog.New(slog.DiscardHandler), reg
		n, err := node.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return n, reg
	}
	loc, reg := mk("loc-us", "us-east", node.RoleChecker|node.RoleLocation, nil)
	opts := ForNode(loc)
	if opts.Location == nil || opts.Checker == nil {
		t.Fatalf("views of a checker+location node: %+v", opts)
	}
	opts.Gatherer, opts.Registerer = reg, reg
	api, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := loc.Handle("/", api); err != nil {
		t.Fatal(err)
	}
	eu, _ := mk("chk-eu", "eu-west", node.RoleChecker, []string{loc.GossipAddr()})
	sa, _ := mk("chk-sa", "sa-east", node.RoleChecker, []string{loc.GossipAddr()})
	for _, n := range []*node.Node{loc, eu, sa} {
		runNode(t, n)
	}
	client, err := NewClient(loc.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// poll asks the API until cond holds, for at most within; it returns how long it took.
	poll := func(what string, within time.Duration, cond func() (bool, string)) time.Duration {
		t.Helper()
		start := time.Now()
		var last string
		for time.Since(start) < within {
			ok, msg := cond()
			if ok {
				return time.Since(start)
			}
			last = msg
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s: not within %s; last: %s", what, within, last)
		return 0
	}
	poll("every region's checker heard and web-us-east healthy", 30*time.Second, func() (bool, string) {
		e, err := client.Check(ctx, "web-us-east")
		if err != nil {
			return false, err.Error()
		}
		return e.State == quorum.StateHealthy && e.Counts.Fresh == 3, e.Explanation
	})

	eps["us-east"].down.Store(true)
	check := doc.Checks[slices.IndexFunc(doc.Checks, func(c config.Check) bool { return c.ID == "web-us-east" })]
	// Detection: failure threshold × interval of failed probes, up to an interval before the
	// first failing probe, an evaluation, gossip; plus slack for a machine shared with builds.
	bound := time.Duration(check.FailureThreshold+1)*check.Interval.Std() + check.Timeout.Std() + 5*time.Second
	// Every region's checker sees the endpoint fail: unhealthy by all three fresh votes.
	took := poll("web-us-east unhealthy by every region's checker", bound, func() (bool, string) {
		e, err := client.Check(ctx, "web-us-east")
		if err != nil {
			return false, err.Error()
		}
		return e.State == quorum.StateUnhealthy && e.Counts.Unhealthy == 3, e.Explanation
	})
	t.Logf("web-us-east unhealthy in the status API %s after the endpoint failed (failure threshold %d × interval %s; bound %s)",
		took.Round(10*time.Millisecond), check.FailureThreshold, check.Interval.Std(), bound)

	e, err := client.Check(ctx, "web-us-east")
	if err != nil {
		t.Fatal(err)
	}
	regions := map[string]string{}
	for _, v := range e.Votes {
		regions[v.Region] = v.Status + " " + v.Reason
	}
	for _, r := range []string{"us-east", "eu-west", "sa-east"} {
		if !strings.HasPrefix(regions[r], "unhealthy status") {
			t.Errorf("vote of %s: %q (all votes %+v)", r, regions[r], e.Votes)
		}
	}
	l, err := client.Verdicts(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(l.Regions, []string{"eu-west", "sa-east", "us-east"}) {
		t.Errorf("regions %v", l.Regions)
	}
	for _, c := range l.Checks {
		if c.ID == "web-us-east" && (c.State != quorum.StateUnhealthy || c.Regions["eu-west"].State != CellUnhealthy) {
			t.Errorf("list: %+v", c)
		}
	}
	an, err := client.Answer(ctx, "www.demo.vigil.test", "A")
	if err != nil || an.Rule != "secondary" || !slices.Equal(an.Values, []string{"198.51.100.1"}) {
		t.Errorf("answer: %+v %v", an, err)
	}
	p, err := client.Probes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var probed []string
	for _, pr := range p.Probes {
		probed = append(probed, pr.Check+"="+pr.Status)
		// Through a node, a probe shows its check as configured, not only its id.
		if pr.Target == "" || pr.Protocol == "" || pr.Interval == 0 {
			t.Errorf("probe of %s without its configuration: %+v", pr.Check, pr)
		}
	}
	if !slices.Contains(probed, "web-us-east=unhealthy") || !p.Self.Healthy {
		t.Errorf("probes of loc-us: %v self %+v", probed, p.Self)
	}
	hs, err := client.Checkers(ctx)
	if err != nil || len(hs.Checkers) != 3 {
		t.Errorf("checkers: %+v %v", hs, err)
	}
	ms, err := client.Members(ctx)
	if err != nil || len(ms.Members) != 3 {
		t.Errorf("members: %+v %v", ms, err)
	}
	info, err := client.Node(ctx)
	if err != nil || info.Config.Source != "static" || info.Version != "test" {
		t.Errorf("node: %+v %v", info, err)
	}

	// The node's own /readyz (mounted before the API's) answers in the API's documented shape.
	res, err := http.Get("http://" + loc.HTTPAddr() + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var rd Readiness
	decodeStrict(t, body, &rd)
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusServiceUnavailable || rd.Ready != (res.StatusCode == http.StatusOK) {
		t.Errorf("/readyz: %d %s", res.StatusCode, body)
	}

	// The page, as a browser draws it from this node.
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		bin, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		dom := string(runChromium(t, bin, "http://"+loc.HTTPAddr()+"/", "--dump-dom"))
		row := regexp.MustCompile(`(?s)<tr[^>]*data-check="web-us-east"[^>]*>(.*?)</tr>`).FindStringSubmatch(dom)
		if row == nil || !strings.Contains(row[1], `data-state="unhealthy" class="verdict"`) {
			t.Errorf("the page does not show web-us-east unhealthy: %q", row)
		}
		break
	}
}

// TestHostPortURL: a member is asked at the HTTP address it advertises, its missing host taken
// from its gossip address; a member of an earlier build, which advertises none, at this node's
// port.
func TestHostPortURL(t *testing.T) {
	url := HostPortURL("7701")
	for _, c := range []struct {
		m    Member
		want string
	}{
		{Member{Addr: "10.0.0.1:7946"}, "http://10.0.0.1:7701"},
		{Member{Addr: "10.0.0.1:7946", HTTP: ":8081"}, "http://10.0.0.1:8081"},
		{Member{Addr: "10.0.0.1:7946", HTTP: "192.0.2.9:8082"}, "http://192.0.2.9:8082"},
		{Member{Addr: "[2001:db8::1]:7946", HTTP: ":8083"}, "http://[2001:db8::1]:8083"},
		{Member{Addr: "no port"}, ""},
		{Member{Addr: "10.0.0.1:7946", HTTP: "no port"}, ""},
	} {
		if got := url(c.m); got != c.want {
			t.Errorf("%+v: %q, want %q", c.m, got, c.want)
		}
	}
	if got := HostPortURL("")(Member{Addr: "10.0.0.1:7946"}); got != "" {
		t.Errorf("no port known: %q", got)
	}
}

// TestNetworkViewFindsPeersOnOneHost: two locations on one host, each serving HTTP on a port
// of its own, find each other's verdicts through the address each advertises in its gossip
// metadata, with no PeerURL set (as `vigil agent` mounts the API).
func TestNetworkViewFindsPeersOnOneHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two nodes for a few seconds")
	}
	doc, err := config.Load("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(id, region string, join []string) *node.Node {
		cfg := node.DefaultConfig()
		cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir, cfg.Version = id, region, node.RoleLocation, t.TempDir(), "test"
		cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile, cfg.Gossip.Join = "127.0.0.1:0", [][]byte{netKey}, gossip.ProfileLocal, join
		cfg.DNSAddr, cfg.HTTPAddr, cfg.Static = "127.0.0.1:0", "127.0.0.1:0", doc
		cfg.Logger = slog.New(slog.DiscardHandler)
		n, err := node.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := Mount(n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := mk("loc-a", "us-east", nil)
	b := mk("loc-b", "eu-west", []string{a.GossipAddr()})
	runNode(t, a)
	runNode(t, b)
	client, err := NewClient(a.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	want := "http://" + b.HTTPAddr()
	var last NetworkView
	for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(200 * time.Millisecond) {
		v, err := client.Network(context.Background(), "", "", "", 10)
		if err != nil {
			t.Fatal(err)
		}
		last = v
		for _, l := range v.Locations {
			if l.ID == "loc-b" && l.Reachable && l.URL == want {
				return
			}
		}
	}
	t.Fatalf("loc-b not reached at %s within 20s: %+v", want, last.Locations)
}
