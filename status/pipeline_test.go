package status

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/location/routing"
	"github.com/vigil-dns/vigil/quorum"
)

// liveLocation is a LocationView that evaluates, at each request, the reports a real checker
// emitted (as a location holds them once gossip delivered them; here they arrive directly,
// stamped with the time they arrived).
type liveLocation struct {
	check  config.Check
	policy quorum.Policy
	mu     sync.Mutex
	report *quorum.Report
	prev   quorum.Verdict
}

func (l *liveLocation) onReport(r checker.Report) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r.Withdrawn { // gossip deletes a withdrawn report: the location no longer holds it
		l.report = nil
		return
	}
	l.report = &quorum.Report{Checker: "us-1", Region: "us-east", Healthy: r.Status == checker.StatusHealthy,
		Reason: string(r.Reason), Latency: r.Latency, Sequence: r.Seq, LastProgress: time.Now()}
}

func (l *liveLocation) reports() []quorum.Report {
	if l.report == nil {
		return nil
	}
	return []quorum.Report{*l.report}
}

func (l *liveLocation) Verdicts() []CheckVerdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prev = quorum.Evaluate(l.policy, l.reports(), []string{"us-1"}, l.prev, time.Now())
	return []CheckVerdict{{ID: l.check.ID, Verdict: l.prev.Summary()}}
}

func (l *liveLocation) Explain(id string) (quorum.Explanation, bool) {
	if id != l.check.ID {
		return quorum.Explanation{}, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return quorum.Explain(l.policy, l.reports(), []string{"us-1"}, l.prev, time.Now()), true
}

func (l *liveLocation) Zones() []location.ZoneState { return nil }

func (l *liveLocation) Checkers() []quorum.HeardChecker {
	l.mu.Lock()
	defer l.mu.Unlock()
	return quorum.HeardFrom(l.reports(), l.policy.FreshnessWindow, time.Now())
}

func (l *liveLocation) Answer(string, string) (routing.Result, error) { return routing.Result{}, nil }

// startLiveChecker runs a real checker, until the test ends, on check "web" of the HTTP
// endpoint at targetURL, its reports going to the location it returns.
func startLiveChecker(t *testing.T, targetURL string) (config.Check, *liveLocation) {
	t.Helper()
	c := config.DefaultCheck()
	c.ID, c.Protocol, c.Path = "web", config.ProtocolHTTP, "/"
	host, port := hostPort(t, targetURL)
	c.Target = config.Target{Host: host, Port: port}
	c.Interval, c.Timeout = config.Duration(time.Second), config.Duration(500*time.Millisecond)
	c.FailureThreshold, c.SuccessThreshold = 2, 1
	q := config.DefaultDocument().Quorum
	loc := &liveLocation{check: c, policy: quorum.PolicyFor(c, q)}
	ch, err := checker.New(checker.Options{Name: "us-1", OnReport: loc.onReport,
		Prober: checker.ProberOptions{Addresses: checker.AddressPolicy{AllowLoopback: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.SetChecks([]config.Check{c}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ch.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return c, loc
}

// TestEndpointFailureShows: a real checker probes a real HTTP endpoint; when the endpoint starts
// answering 503, the status API shows the check unhealthy, with the checker's reason, within its
// detection time (failure threshold × interval, plus an interval of schedule and the timeout,
// plus slack for a loaded machine). This is the pipeline checker → report → quorum → status API
// without gossip; the full in-process network test is node's TestStatusNetworkEndpointFailureShows.
func TestEndpointFailureShows(t *testing.T) {
	if testing.Short() {
		t.Skip("probes a real endpoint for several seconds")
	}
	var healthy atomic.Bool
	healthy.Store(true)
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if !healthy.Load() {
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(target.Close)

	c, loc := startLiveChecker(t, target.URL)
	ctx := context.Background()
	a, err := New(Options{Node: newTestNode(), Location: loc})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	client, err := NewClient(srv.URL)
	if err != nil {
		t.Fatal(err)
	}

	// waitFor polls the API until the check is in state, for at most limit.
	waitFor := func(state quorum.State, limit time.Duration) (CheckEvidence, time.Duration) {
		t.Helper()
		start := time.Now()
		for {
			e, err := client.Check(ctx, "web")
			if err != nil {
				t.Fatal(err)
			}
			if e.State == state {
				return e, time.Since(start)
			}
			if time.Since(start) > limit {
				t.Fatalf("check not %s within %s: %s", state, limit, e.Explanation)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor(quorum.StateHealthy, 10*time.Second)

	healthy.Store(false)
	interval := c.Interval.Std()
	bound := time.Duration(c.FailureThreshold+1)*interval + c.Timeout.Std() + 3*time.Second
	e, took := waitFor(quorum.StateUnhealthy, bound)
	t.Logf("unhealthy after %s (bound %s)", took.Round(time.Millisecond), bound)
	if len(e.Votes) != 1 || e.Votes[0].Reason != string(checker.ReasonStatus) || e.ServedAsHealthy {
		t.Errorf("evidence %+v", e)
	}
	l, err := client.Verdicts(ctx, "unhealthy")
	if err != nil || len(l.Checks) != 1 || l.Checks[0].Regions["us-east"].State != CellUnhealthy {
		t.Errorf("list: %v %+v", err, l)
	}

	healthy.Store(true)
	_, took = waitFor(quorum.StateHealthy, time.Duration(c.SuccessThreshold+1)*interval+c.Timeout.Std()+3*time.Second)
	t.Logf("healthy again after %s", took.Round(time.Millisecond))
	if !strings.Contains(e.Explanation, "0 of 1 fresh report is healthy") {
		t.Errorf("explanation %q", e.Explanation)
	}
}
