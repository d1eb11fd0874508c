package control

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// TestMetricsLint registers every metric of a voter and its API in a fresh registry, checks
// they move, and lints their names.
func TestMetricsLint(t *testing.T) {
	c := newCluster(t, 1)
	v := c.voters[0]
	mustWrite(t, "PUT", v.url()+"/v1/document", "application/yaml", testDoc)
	do(t, "GET", v.url()+"/v1/checks", "", "", "")
	mfs, err := v.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		seen[mf.GetName()] = true
		if mf.GetName() == "vigil_control_raft_leader" && mf.GetMetric()[0].GetGauge().GetValue() != 1 {
			t.Error("the only voter does not report itself leader")
		}
		if mf.GetName() == "vigil_control_raft_applied_index" && mf.GetMetric()[0].GetGauge().GetValue() < 2 {
			t.Error("applied index does not move")
		}
	}
	for _, name := range []string{"vigil_control_raft_leader", "vigil_control_raft_commit_index", "vigil_control_raft_applied_index", "vigil_control_config_index", "vigil_control_api_requests_total", "vigil_control_api_request_duration_seconds"} {
		if !seen[name] {
			t.Errorf("metric %s missing", name)
		}
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "vigil_") {
			t.Errorf("metric %s lacks the vigil_ prefix", mf.GetName())
		}
	}
}
