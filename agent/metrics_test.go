package agent

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/vigil-dns/vigil/gossip"
)

// One node with every role registers all its metrics (its own, gossip's, the checker's, the
// location's, the control plane's and the Watcher's) in one fresh registry without conflict,
// and they pass promlint. A handler mounted with Handle is served beside them.
func TestAllRolesMetricsLint(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	doc := demoDoc(t, targets)
	reg := newReg()
	cfg := DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = "all", "us-east", RoleControl|RoleChecker|RoleLocation, t.TempDir()
	cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile = "127.0.0.1:0", [][]byte{testKey}, gossip.ProfileLocal
	cfg.Control.RaftAddr, cfg.Control.APIAddr = freeAddr(t), "127.0.0.1:0"
	cfg.Control.Bootstrap, cfg.Control.WriteTokens, cfg.Control.Timing = true, []string{testToken}, testTiming
	cfg.Token = testToken
	cfg.DNSAddr, cfg.HTTPAddr, cfg.EvalInterval = "127.0.0.1:0", "127.0.0.1:0", 100*time.Millisecond
	cfg.Probe.AllowLoopback = true
	cfg.Logger, cfg.Registerer = testLogger(), reg
	n := mustNew(t, cfg)
	if err := n.Handle("GET /v1/status/hello", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "hello from a mounted handler")
	})); err != nil {
		t.Fatal(err)
	}
	s := start(t, n)
	api := s.Self().ControlAPI
	eventually(t, 15*time.Second, "the voter accepts the demo document", func() (bool, string) {
		err := putDocument(api, doc)
		return err == nil, fmt.Sprint(err)
	})
	// The node follows its own voter: the data plane gets the document and evaluates it.
	eventually(t, 15*time.Second, "verdicts from the voter's document", func() (bool, string) {
		v, err := s.Verdicts()
		return err == nil && v["web-us-east"].State.String() == "healthy", fmt.Sprint(v["web-us-east"].State, err)
	})
	if err := s.Handle("GET /late", http.NotFoundHandler()); err == nil {
		t.Error("Handle after Run was accepted")
	}
	if _, err := query(s.DNSAddr(), "www.demo.vigil.test"); err != nil {
		t.Fatal(err)
	}
	if code, body := get(t, "http://"+s.HTTPAddr()+"/v1/status/hello"); code != http.StatusOK || body != "hello from a mounted handler" {
		t.Errorf("mounted handler: %d %q", code, body)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"vigil_node_evaluations_total", "vigil_node_verdicts", "vigil_node_config_index",
		"vigil_gossip_members", "vigil_checker_checks_assigned", "vigil_location_queries_total",
		"vigil_control_raft_leader", "vigil_config_watch_index",
		"vigil_location_verdict", "vigil_location_verdict_changes_total", "vigil_location_votes",
		"vigil_location_checker_last_heard_seconds", "vigil_location_checkers_fresh",
		"vigil_location_checkers_known", "vigil_location_checkers_expected"} {
		if !names[want] {
			t.Errorf("metric %s missing", want)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	// The same metrics over HTTP.
	if code, body := get(t, "http://"+s.HTTPAddr()+"/metrics"); code != http.StatusOK || !strings.Contains(body, "vigil_node_verdicts{state=\"healthy\"}") ||
		!strings.Contains(body, `vigil_location_verdict{check="web-us-east",state="healthy"} 1`) {
		t.Errorf("/metrics: %d", code)
	}
}
