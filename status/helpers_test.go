package status

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/location/routing"
	"github.com/vigil-dns/vigil/quorum"
)

// t0 is the tests' "now" at the location.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// testLocation is a LocationView over real data: the demo configuration, reports the test
// constructs, verdicts computed by quorum.Evaluate and quorum.Combine, and answers from a real
// location.Server (no sockets: Explain reads its snapshot and verdicts).
type testLocation struct {
	doc      *config.Document
	now      time.Time
	reports  map[string][]quorum.Report // by check id
	expected map[string][]string        // by check id
	prev     map[string]quorum.Verdict  // the verdict before the current one
	verdicts map[string]quorum.Verdict
	server   *location.Server
}

// newTestLocation loads examples/demo.yaml and a location server for its zones.
func newTestLocation(t testing.TB) *testLocation {
	t.Helper()
	doc, err := config.Load("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := location.New(location.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := location.NewSnapshot(doc.Zones, map[string][]location.NameServer{
		"demo.vigil.test.": location.ShardNameServers([]int{3, 97, 1024, 2047}, doc.NameServers.Domain, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetSnapshot(snap)
	return &testLocation{doc: doc, now: t0, reports: map[string][]quorum.Report{}, expected: map[string][]string{},
		prev: map[string]quorum.Verdict{}, verdicts: map[string]quorum.Verdict{}, server: srv}
}

// report builds a report of checker id (region from its prefix: us, eu, sa) heard ago before
// the location's now.
func (l *testLocation) report(id string, healthy bool, reason string, ago time.Duration) quorum.Report {
	region := map[string]string{"us": "us-east", "eu": "eu-west", "sa": "sa-east"}[id[:2]]
	return quorum.Report{Checker: id, Region: region, Healthy: healthy, Reason: reason,
		Latency: 12 * time.Millisecond, Sequence: 7, LastProgress: l.now.Add(-ago)}
}

// evaluate computes every check's verdict at l.now, as a location does, and installs the
// served-as-healthy map in the DNS server.
func (l *testLocation) evaluate() {
	served := map[string]bool{}
	for _, c := range l.doc.Checks {
		if c.Protocol == config.ProtocolCalculated {
			continue
		}
		l.prev[c.ID] = l.verdicts[c.ID]
		v := quorum.Evaluate(quorum.PolicyFor(c, l.doc.Quorum), l.reports[c.ID], l.expected[c.ID], l.prev[c.ID], l.now)
		l.verdicts[c.ID] = v
		served[c.ID] = v.Serving()
	}
	for _, c := range l.doc.Checks {
		if c.Protocol != config.ProtocolCalculated {
			continue
		}
		l.prev[c.ID] = l.verdicts[c.ID]
		v := quorum.Combine(c.MinHealthy, l.children(c), c.Inverted, c.Disabled, l.prev[c.ID], l.now)
		l.verdicts[c.ID] = v
		served[c.ID] = v.Serving()
	}
	l.server.SetVerdicts(served)
}

func (l *testLocation) children(c config.Check) []quorum.Verdict {
	var out []quorum.Verdict
	for _, id := range c.Children {
		out = append(out, l.verdicts[id])
	}
	return out
}

func (l *testLocation) check(id string) (config.Check, bool) {
	i := slices.IndexFunc(l.doc.Checks, func(c config.Check) bool { return c.ID == id })
	if i < 0 {
		return config.Check{}, false
	}
	return l.doc.Checks[i], true
}

// Verdicts implements LocationView.
func (l *testLocation) Verdicts() []CheckVerdict {
	var out []CheckVerdict
	for _, c := range l.doc.Checks {
		if v, ok := l.verdicts[c.ID]; ok {
			out = append(out, CheckVerdict{ID: c.ID, Verdict: v.Summary(), Calculated: c.Protocol == config.ProtocolCalculated})
		}
	}
	return out
}

// Explain implements LocationView with quorum.Explain and quorum.ExplainCombined.
func (l *testLocation) Explain(id string) (quorum.Explanation, bool) {
	c, ok := l.check(id)
	if !ok {
		return quorum.Explanation{}, false
	}
	if c.Protocol == config.ProtocolCalculated {
		return quorum.ExplainCombined(c.MinHealthy, c.Children, l.children(c), c.Inverted, c.Disabled, l.prev[id], l.now), true
	}
	return quorum.Explain(quorum.PolicyFor(c, l.doc.Quorum), l.reports[id], l.expected[id], l.prev[id], l.now), true
}

// Zones implements LocationView from the location server's snapshot.
func (l *testLocation) Zones() []location.ZoneState { return l.server.Snapshot().ZoneStates() }

// HealthSetsOf implements HealthSetsView from the real location server's snapshot.
func (l *testLocation) HealthSetsOf(id string) []location.SetName {
	return l.server.Snapshot().HealthSetsOf(id)
}

// Checkers implements LocationView with quorum.HeardFrom.
func (l *testLocation) Checkers() []quorum.HeardChecker {
	var all []quorum.Report
	for _, c := range l.doc.Checks {
		all = append(all, l.reports[c.ID]...)
	}
	return quorum.HeardFrom(all, l.doc.Quorum.FreshnessWindow.Std(), l.now)
}

// Answer implements LocationView with location.Server.Explain and a fixed random draw.
func (l *testLocation) Answer(name, rtype string) (routing.Result, error) {
	return l.server.Explain(name, rtype, 1)
}

// demoScenario sets the demo's reports: two checkers in each of three regions.
//   - web-us-east: every fresh checker says healthy; sa-east's two withdrew (isolated).
//   - web-eu-west: every checker says HTTP 503: unhealthy.
//   - web-sa-east: both reports (sa-3, sa-4, heard of nowhere else) are stale and nothing
//     was held: unknown.
//   - web-majority (calculated, 2 of 3): us healthy, eu unhealthy, sa unknown (counted
//     healthy): healthy.
func demoScenario(l *testLocation) {
	l.reports["web-us-east"] = []quorum.Report{
		l.report("us-1", true, "ok", time.Second), l.report("us-2", true, "ok", 2*time.Second),
		l.report("eu-1", true, "ok", time.Second), l.report("eu-2", true, "ok", time.Second),
		// sa-1 and sa-2 withdrew theirs (isolated): gossip deleted them, the location holds none.
	}
	l.expected["web-us-east"] = []string{"us-1", "us-2", "eu-1", "eu-2", "sa-1", "sa-2"}
	var eu []quorum.Report
	for _, id := range []string{"us-1", "us-2", "eu-1", "eu-2", "sa-1", "sa-2"} {
		eu = append(eu, l.report(id, false, "status: HTTP 503", time.Second))
	}
	l.reports["web-eu-west"] = eu
	l.expected["web-eu-west"] = []string{"us-1", "eu-1", "sa-1", "ap-9"}
	l.reports["web-sa-east"] = []quorum.Report{
		l.report("sa-3", true, "ok", time.Minute), l.report("sa-4", true, "ok", 2*time.Minute),
	}
	l.evaluate()
}

// testNode is a NodeView of fixed facts about a node (what the node package tracks).
type testNode struct {
	mu      sync.Mutex
	ready   Readiness
	members []Member
}

func newTestNode() *testNode {
	n := &testNode{ready: Readiness{Ready: true}}
	for i, id := range []string{"us-1", "us-2", "eu-1", "eu-2", "sa-1", "sa-2"} {
		region := map[string]string{"us": "us-east", "eu": "eu-west", "sa": "sa-east"}[id[:2]]
		n.members = append(n.members, Member{ID: id, Region: region, Roles: []string{"checker"},
			Addr: "127.0.0.1:" + strconv.Itoa(7946+i), State: "alive"})
	}
	n.members = append(n.members, Member{ID: "loc-us", Region: "us-east", Roles: []string{"location"}, Addr: "127.0.0.1:7960", State: "alive"})
	return n
}

func (n *testNode) Identity() Identity {
	return Identity{ID: "loc-us", Region: "us-east", Roles: []string{"location"}, Version: "test-1.2.3", Started: t0.Add(-time.Hour)}
}

func (n *testNode) Members() []Member {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.members)
}

func (n *testNode) Config() state.WatcherStatus {
	return state.WatcherStatus{Source: state.SourceDisk, Index: 42, Message: "running from the copy on disk (index 42): no voter has answered yet"}
}

func (n *testNode) Readiness() Readiness {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ready
}

// testChecker is a CheckerView over a real checker.Checker probing real HTTP servers, with
// the latest result of each check kept from OnResult, as the node keeps it.
type testChecker struct {
	c      *checker.Checker
	checks []config.Check
	mu     sync.Mutex
	last   map[string]checker.Result
}

// Probes implements CheckerView.
func (tc *testChecker) Probes() []Probe {
	reports := tc.c.Reports()
	tc.mu.Lock()
	defer tc.mu.Unlock()
	var out []Probe
	for _, c := range tc.checks {
		p := Probe{Check: c}
		for i := range reports {
			if reports[i].CheckID == c.ID {
				p.Report = &reports[i]
			}
		}
		if r, ok := tc.last[c.ID]; ok {
			p.Last = &r
		}
		out = append(out, p)
	}
	return out
}

// Self implements CheckerView.
func (tc *testChecker) Self() checker.SelfHealth { return tc.c.Self() }

// startChecker runs a real checker with two HTTP checks on loopback: "up" answers 200 and
// "down" answers 503. It returns once both have a report (at most 15s).
func startChecker(t *testing.T) *testChecker {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	t.Cleanup(up.Close)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	mk := func(id, url string) config.Check {
		c := config.DefaultCheck()
		c.ID, c.Protocol = id, config.ProtocolHTTP
		host, port := hostPort(t, url)
		c.Target = config.Target{Host: host, Port: port}
		c.Path = "/"
		c.Interval = config.Duration(time.Second)
		c.Timeout = config.Duration(500 * time.Millisecond)
		c.FailureThreshold, c.SuccessThreshold = 1, 1
		return c
	}
	tc := &testChecker{last: map[string]checker.Result{}}
	tc.checks = []config.Check{mk("up", up.URL), mk("down", down.URL)}
	c, err := checker.New(checker.Options{
		Name:   "us-1",
		Prober: checker.ProberOptions{Addresses: checker.AddressPolicy{AllowLoopback: true}},
		OnResult: func(id string, r checker.Result) {
			tc.mu.Lock()
			tc.last[id] = r
			tc.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tc.c = c
	if err := c.SetChecks(tc.checks); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	deadline := time.Now().Add(15 * time.Second)
	for len(c.Reports()) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no reports within 15s: %+v", c.Reports())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return tc
}

func hostPort(t *testing.T, url string) (string, int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(req.URL.Port())
	if err != nil {
		t.Fatal(err)
	}
	return req.URL.Hostname(), port
}
