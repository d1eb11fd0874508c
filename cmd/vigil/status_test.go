package main

import (
	"encoding/json"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/location/routing"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/status"
)

// demoLocation is a status.LocationView of the demo configuration: verdicts computed by quorum
// from the reports given, answers from a real location server.
type demoLocation struct {
	doc      *config.Document
	now      time.Time
	reports  map[string][]quorum.Report
	verdicts map[string]quorum.Verdict
	srv      *location.Server
}

func newDemoLocation(t *testing.T, reports map[string][]quorum.Report, now time.Time) *demoLocation {
	t.Helper()
	doc, err := config.Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := location.New(location.Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := location.NewSnapshot(doc.Zones, map[string][]location.NameServer{
		"demo.vigil.test.": location.ShardNameServers([]int{1, 2}, doc.NameServers.Domain, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.SetSnapshot(snap)
	l := &demoLocation{doc: doc, now: now, reports: reports, verdicts: map[string]quorum.Verdict{}, srv: srv}
	served := map[string]bool{}
	for _, c := range doc.Checks {
		if c.Protocol != config.ProtocolCalculated {
			v := quorum.Evaluate(quorum.PolicyFor(c, doc.Quorum), reports[c.ID], nil, quorum.Verdict{}, now)
			l.verdicts[c.ID] = v
			served[c.ID] = v.Serving()
		}
	}
	srv.SetVerdicts(served)
	return l
}

func (l *demoLocation) Verdicts() []status.CheckVerdict {
	var out []status.CheckVerdict
	for id, v := range l.verdicts {
		out = append(out, status.CheckVerdict{ID: id, Verdict: v.Summary()})
	}
	return out
}

func (l *demoLocation) Explain(id string) (quorum.Explanation, bool) {
	for _, c := range l.doc.Checks {
		if c.ID == id && c.Protocol != config.ProtocolCalculated {
			return quorum.Explain(quorum.PolicyFor(c, l.doc.Quorum), l.reports[id], nil, quorum.Verdict{}, l.now), true
		}
	}
	return quorum.Explanation{}, false
}

func (l *demoLocation) Zones() []location.ZoneState { return l.srv.Snapshot().ZoneStates() }

func (l *demoLocation) Checkers() []quorum.HeardChecker {
	var all []quorum.Report
	for _, rs := range l.reports {
		all = append(all, rs...)
	}
	return quorum.HeardFrom(all, l.doc.Quorum.FreshnessWindow.Std(), l.now)
}

func (l *demoLocation) Answer(name, rtype string) (routing.Result, error) {
	return l.srv.Explain(name, rtype, 1)
}

// demoNode is a status.NodeView of fixed facts.
type demoNode struct{}

func (demoNode) Identity() status.Identity {
	return status.Identity{ID: "loc-1", Region: "us-east", Roles: []string{"location"}, Version: "v9.9.9"}
}
func (demoNode) Members() []status.Member {
	return []status.Member{{ID: "loc-1", Region: "us-east", Roles: []string{"location"}, Addr: "127.0.0.1:7946", State: "alive"}}
}
func (demoNode) Config() state.WatcherStatus {
	return state.WatcherStatus{Source: state.SourceControlPlane, Index: 17, Message: "running from the control plane (index 17)"}
}
func (demoNode) Readiness() status.Readiness {
	return status.Readiness{Ready: true}
}

func TestStatusCommand(t *testing.T) {
	now := time.Now()
	r := func(id, region string, healthy bool, reason string) quorum.Report {
		return quorum.Report{Checker: id, Region: region, Healthy: healthy, Reason: reason, Latency: 30 * time.Millisecond, LastProgress: now.Add(-time.Second)}
	}
	loc := newDemoLocation(t, map[string][]quorum.Report{
		"web-us-east": {r("us-1", "us-east", false, "timeout"), r("eu-1", "eu-west", false, "timeout"), r("sa-1", "sa-east", false, "timeout")},
		"web-eu-west": {r("us-1", "us-east", true, "ok"), r("eu-1", "eu-west", true, "ok")},
	}, now)
	api, err := status.New(status.Options{Node: demoNode{}, Location: loc})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")

	for _, tc := range []struct {
		args []string
		code int
		out  []string // in stdout (exit 0) or stderr
	}{
		{[]string{"status", "--addr", addr, "verdicts"}, 0, []string{"web-us-east  unhealthy", "web-eu-west  healthy", "web-sa-east  unknown"}},
		{[]string{"status", "check", "web-us-east", "--addr", addr}, 0, []string{
			"check web-us-east: unhealthy", "0 of 3 fresh reports are healthy", "sa-1     sa-east  unhealthy  timeout  30ms"}},
		{[]string{"status", "--addr", addr, "answer", "www.demo.vigil.test", "A"}, 0, []string{
			"failover policy, rule secondary", "answer: 198.51.100.1"}},
		{[]string{"status", "--addr", addr, "checkers"}, 0, []string{"us-1     us-east  fresh"}},
		{[]string{"status", "--addr", addr, "members"}, 0, []string{"configuration: running from the control plane (index 17)\n", "version v9.9.9"}},
		{[]string{"status", "--addr", addr, "check", "nope"}, 1, []string{`no check "nope" at this location (HTTP 404)`}},
		{[]string{"status", "--addr", addr, "verdicts", "sick"}, 1, []string{"invalid state", "HTTP 400"}},
		{[]string{"status", "--addr", addr, "probes"}, 1, []string{"not a checker"}},
		// A location runs no answer verifier: the error says so and where to ask instead.
		{[]string{"status", "--addr", addr, "verification"}, 1, []string{
			"this node runs no answer verification: it is a location; ask a checker started with -verify-interval",
			"vigil status -addr CHECKER:7701 verification"}},
		{[]string{"status", "--addr", closedAddr(t), "verdicts"}, 1, []string{"vigil status: Get ",
			"\n  fix: no node's status API answers at 127.0.0.1:", "give -addr its -http address"}},
		{[]string{"status", "bogus"}, 2, []string{`unknown view "bogus"`}},
		{[]string{"status", "check"}, 2, []string{"wrong number of arguments"}},
		{[]string{"status"}, 2, []string{"usage: vigil status"}},
	} {
		code, stdout, stderr := runValidateCmd(t, tc.args...)
		out := stdout
		if tc.code != 0 {
			out = stderr
		}
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d\nstdout %s\nstderr %s", tc.args, code, tc.code, stdout, stderr)
			continue
		}
		for _, w := range tc.out {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
	}

	code, stdout, stderr := runValidateCmd(t, "status", "--json", "--addr", addr, "verdicts", "unhealthy")
	var l status.VerdictList
	if err := json.Unmarshal([]byte(stdout), &l); code != 0 || err != nil || len(l.Checks) != 1 || l.Checks[0].ID != "web-us-east" {
		t.Errorf("--json: exit %d, %v, %+v, stderr %s", code, err, l, stderr)
	}
}

// closedAddr returns a loopback address where nothing listens.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// checkerOnlyNode is a node that runs a checker and no location.
type checkerOnlyNode struct{ demoNode }

func (checkerOnlyNode) Identity() status.Identity {
	return status.Identity{ID: "us-1", Region: "us-east", Roles: []string{"checker"}}
}

// idleChecker is a checker with nothing assigned.
type idleChecker struct{}

func (idleChecker) Probes() []status.Probe   { return nil }
func (idleChecker) Self() checker.SelfHealth { return checker.SelfHealth{Healthy: true} }

// TestStatusVerificationNotRun: vigil status verification at a checker started without
// -verify-interval says what the node is and where to ask, not a bare 404.
func TestStatusVerificationNotRun(t *testing.T) {
	api, err := status.New(status.Options{Node: checkerOnlyNode{}, Checker: idleChecker{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	code, _, stderr := runValidateCmd(t, "status", "--addr", strings.TrimPrefix(srv.URL, "http://"), "verification")
	if code != 1 || !strings.Contains(stderr, "this node runs no answer verification: it is a checker started without -verify-interval; "+
		"ask a checker started with -verify-interval (vigil status -addr CHECKER:7701 verification)") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
}

// TestStatusLocationViewAtAChecker: a location's view asked of a checker says, besides the
// API's "not a DNS location", whom to ask instead; the checker's own view works there.
func TestStatusLocationViewAtAChecker(t *testing.T) {
	api, err := status.New(status.Options{Node: checkerOnlyNode{}, Checker: idleChecker{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, view := range []string{"verdicts", "dns", "checkers"} {
		code, _, stderr := runValidateCmd(t, "status", "--addr", addr, view)
		if code != 1 || !strings.Contains(stderr, "not a DNS location") ||
			!strings.Contains(stderr, "\n  fix: ask a location's status API with -addr") {
			t.Errorf("vigil status %s at a checker: exit %d, stderr %s", view, code, stderr)
		}
	}
	if code, stdout, stderr := runValidateCmd(t, "status", "--addr", addr, "probes"); code != 0 {
		t.Errorf("vigil status probes at a checker: exit %d\n%s%s", code, stdout, stderr)
	}
}
