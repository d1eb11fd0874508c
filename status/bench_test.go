package status

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/location/routing"
	"github.com/vigil-dns/vigil/quorum"
)

// fleetLocation is a LocationView of n checks, each with reports from 3 checkers in each of 3
// regions, one of them stale: the load of a status page refresh at a busy location.
type fleetLocation struct {
	ids      []string
	policy   quorum.Policy
	reports  map[string][]quorum.Report
	verdicts []CheckVerdict
	now      time.Time
}

func newFleetLocation(n int) *fleetLocation {
	l := &fleetLocation{policy: quorum.PolicyFor(config.DefaultCheck(), config.DefaultDocument().Quorum),
		reports: map[string][]quorum.Report{}, now: t0}
	for i := range n {
		id := fmt.Sprintf("check-%04d", i)
		var rs []quorum.Report
		for j, region := range []string{"us-east", "eu-west", "sa-east"} {
			for k := range 3 {
				heard := time.Second
				if k == 2 && j == i%3 {
					heard = time.Minute
				}
				rs = append(rs, quorum.Report{Checker: fmt.Sprintf("%s-%d", region, k), Region: region,
					Healthy: (i+k)%4 != 0, Reason: "ok", Latency: 20 * time.Millisecond, Sequence: uint64(i), LastProgress: t0.Add(-heard)})
			}
		}
		l.ids = append(l.ids, id)
		l.reports[id] = rs
		l.verdicts = append(l.verdicts, CheckVerdict{ID: id, Verdict: quorum.Evaluate(l.policy, rs, nil, quorum.Verdict{}, t0).Summary()})
	}
	return l
}

func (l *fleetLocation) Verdicts() []CheckVerdict { return l.verdicts }
func (l *fleetLocation) Explain(id string) (quorum.Explanation, bool) {
	rs, ok := l.reports[id]
	if !ok {
		return quorum.Explanation{}, false
	}
	return quorum.Explain(l.policy, rs, nil, quorum.Verdict{}, l.now), true
}
func (l *fleetLocation) Zones() []location.ZoneState { return nil }

func (l *fleetLocation) Checkers() []quorum.HeardChecker {
	return quorum.HeardFrom(l.reports[l.ids[0]], l.policy.FreshnessWindow, l.now)
}
func (l *fleetLocation) Answer(string, string) (routing.Result, error) { return routing.Result{}, nil }

// BenchmarkVerdicts measures GET /v1/verdicts (every check, with its region cells: what the
// status page fetches at each refresh) against GET /v1/verdicts/{id} (one check's evidence).
func BenchmarkVerdicts(b *testing.B) {
	for _, n := range []int{100, 1000} {
		loc := newFleetLocation(n)
		a, err := New(Options{Node: newTestNode(), Location: loc})
		if err != nil {
			b.Fatal(err)
		}
		serve := func(b *testing.B, path string) {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			for b.Loop() {
				rec := httptest.NewRecorder()
				a.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
				b.SetBytes(int64(rec.Body.Len()))
			}
		}
		b.Run(fmt.Sprintf("list/checks=%d", n), func(b *testing.B) { serve(b, "/v1/verdicts") })
		b.Run(fmt.Sprintf("one/checks=%d", n), func(b *testing.B) { serve(b, "/v1/verdicts/check-0001") })
	}
}
