package status

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
)

// TestMetrics: requests are counted by route pattern (never by raw path), /metrics serves the
// registry, and the names pass promlint.
func TestMetrics(t *testing.T) {
	loc := newTestLocation(t)
	demoScenario(loc)
	a, _, reg := newTestAPI(t, loc, nil)
	for _, p := range []string{"/v1/verdicts", "/v1/verdicts/web-eu-west", "/v1/verdicts/a", "/v1/verdicts/b", "/healthz"} {
		get(t, a, p)
	}
	want := `
# HELP vigil_status_requests_total Requests to the status API, by route pattern and HTTP status code.
# TYPE vigil_status_requests_total counter
vigil_status_requests_total{code="200",route="/healthz"} 1
vigil_status_requests_total{code="200",route="/v1/verdicts"} 1
vigil_status_requests_total{code="200",route="/v1/verdicts/{id}"} 1
vigil_status_requests_total{code="404",route="/v1/verdicts/{id}"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "vigil_status_requests_total"); err != nil {
		t.Error(err)
	}
	code, body := get(t, a, "/metrics")
	if code != 200 || !strings.Contains(string(body), "vigil_status_request_duration_seconds_bucket") {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
	problems, err := promlint.NewWithMetricFamilies(mustGather(t, reg)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

func mustGather(t *testing.T, g interface {
	Gather() ([]*dto.MetricFamily, error)
}) []*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return mfs
}
