package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/status"
)

// statusNodeCfg is the configuration of a node of the status tests' networks on loopback.
func statusNodeCfg(t *testing.T, id, region string, roles Roles, doc *config.Document, join []string) Config {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir, cfg.Version = id, region, roles, t.TempDir(), "test"
	cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile, cfg.Gossip.Join = "127.0.0.1:0", [][]byte{testKey}, gossip.ProfileLocal, join
	cfg.DNSAddr, cfg.HTTPAddr, cfg.Static = "127.0.0.1:0", "127.0.0.1:0", doc
	cfg.Logger = testLogger()
	return cfg
}

// TestStatusNetworkEndpointFailureShows runs an in-process network of three regions on
// loopback (real memberlist with an encryption key, real probes, real DNS server): a
// checker-and-location node in us-east serving the status API, and a checker in eu-west and in
// sa-east. The us-east endpoint is made unhealthy; the status API (and the page, when Chromium
// is there) shows it within its detection time, with every region's checker's vote as evidence.
func TestStatusNetworkEndpointFailureShows(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a three-node network for several seconds")
	}
	tgs := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	doc := demoDoc(t, tgs)
	for i := range doc.Checks {
		doc.Checks[i].CheckersPerRegion = 1
	}
	mk := func(id, region string, roles Roles, join []string) *Node {
		cfg := statusNodeCfg(t, id, region, roles, doc, join)
		cfg.Probe.AllowLoopback, cfg.EvalInterval, cfg.Registerer = true, 100*time.Millisecond, newReg()
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	loc := mk("loc-us", "us-east", RoleChecker|RoleLocation, nil)
	err := loc.MountStatus(func(o *status.Options) {
		if o.Location == nil || o.Checker == nil || o.History == nil || o.Gatherer == nil {
			t.Errorf("views of a checker+location node: %+v", o)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	eu := mk("chk-eu", "eu-west", RoleChecker, []string{loc.GossipAddr()})
	sa := mk("chk-sa", "sa-east", RoleChecker, []string{loc.GossipAddr()})
	for _, n := range []*Node{loc, eu, sa} {
		start(t, n)
	}
	client, err := status.NewClient(loc.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	eventually(t, 30*time.Second, "every region's checker heard and web-us-east healthy", func() (bool, string) {
		e, err := client.Check(ctx, "web-us-east")
		if err != nil {
			return false, err.Error()
		}
		return e.State == quorum.StateHealthy && e.Counts.Fresh == 3, e.Explanation
	})

	tgs["us-east"].down.Store(true)
	check := doc.Checks[slices.IndexFunc(doc.Checks, func(c config.Check) bool { return c.ID == "web-us-east" })]
	// Detection: failure threshold × interval of failed probes, up to an interval before the
	// first failing probe, an evaluation, gossip; plus slack for a machine shared with builds.
	bound := time.Duration(check.FailureThreshold+1)*check.Interval.Std() + check.Timeout.Std() + 5*time.Second
	// Every region's checker sees the endpoint fail: unhealthy by all three fresh votes.
	took := eventually(t, bound, "web-us-east unhealthy by every region's checker", func() (bool, string) {
		e, err := client.Check(ctx, "web-us-east")
		if err != nil {
			return false, err.Error()
		}
		return e.State == quorum.StateUnhealthy && e.Counts.Unhealthy == 3, e.Explanation
	})
	t.Logf("web-us-east unhealthy in the status API %s after the endpoint failed (failure threshold %d × interval %s; bound %s)",
		took.Round(10*time.Millisecond), check.FailureThreshold, check.Interval.Std(), bound)

	checkStatusEvidence(t, client)
	checkStatusReadyz(t, "http://"+loc.HTTPAddr()+"/readyz")
	checkStatusPage(t, "http://"+loc.HTTPAddr()+"/")
}

// checkStatusEvidence checks what loc-us's status API says once web-us-east is unhealthy by
// every region's checker: the votes, the list, the answer, the probes, the checkers heard, the
// members and the node.
func checkStatusEvidence(t *testing.T, client *status.Client) {
	t.Helper()
	ctx := context.Background()
	e, err := client.Check(ctx, "web-us-east")
	if err != nil {
		t.Fatal(err)
	}
	regions := map[string]string{}
	for _, v := range e.Votes {
		regions[v.Region] = v.Status.String() + " " + v.Reason
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
		if c.ID == "web-us-east" && (c.State != quorum.StateUnhealthy || c.Regions["eu-west"].State != status.CellUnhealthy) {
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
}

// checkStatusReadyz checks that the node's own /readyz at url (mounted before the API's) answers
// in the API's documented shape.
func checkStatusReadyz(t *testing.T, url string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var rd status.Readiness
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rd); err != nil {
		t.Fatalf("/readyz: %v\n%s", err, body)
	}
	if res.StatusCode != http.StatusOK && res.StatusCode != http.StatusServiceUnavailable || rd.Ready != (res.StatusCode == http.StatusOK) {
		t.Errorf("/readyz: %d %s", res.StatusCode, body)
	}
}

// checkStatusPage loads the status page at url in headless Chromium, when it is installed, and
// checks that the page's script draws web-us-east unhealthy.
func checkStatusPage(t *testing.T, url string) {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		bin, err := exec.LookPath(name)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
			"--no-first-run", "--disable-extensions", "--disable-background-networking",
			"--user-data-dir="+t.TempDir(), "--virtual-time-budget=10000", "--dump-dom", url)
		cmd.WaitDelay = 5 * time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium: %v\n%s", err, stderr.String())
		}
		row := regexp.MustCompile(`(?s)<tr[^>]*data-check="web-us-east"[^>]*>(.*?)</tr>`).FindStringSubmatch(stdout.String())
		if row == nil || !strings.Contains(row[1], `data-state="unhealthy" class="verdict"`) {
			t.Errorf("the page does not show web-us-east unhealthy: %q", row)
		}
		return
	}
}

// TestStatusNetworkViewFindsPeersOnOneHost: two locations on one host, each serving HTTP on a
// port of its own, find each other's verdicts through the address each advertises in its gossip
// metadata, with no PeerURL set (as `vigil agent` mounts the API).
func TestStatusNetworkViewFindsPeersOnOneHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two nodes for a few seconds")
	}
	doc := demoDoc(t, nil)
	mk := func(id, region string, join []string) *Node {
		n, err := New(statusNodeCfg(t, id, region, RoleLocation, doc, join))
		if err != nil {
			t.Fatal(err)
		}
		if err := n.MountStatus(nil); err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := mk("loc-a", "us-east", nil)
	b := mk("loc-b", "eu-west", []string{a.GossipAddr()})
	start(t, a)
	start(t, b)
	client, err := status.NewClient(a.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	want := "http://" + b.HTTPAddr()
	var last status.NetworkView
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
