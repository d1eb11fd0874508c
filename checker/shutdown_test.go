package checker

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// TestRunDeadlineCutsProbesShort: a probe cut short because Run's context reached its
// deadline says nothing about its target, as one cut by a cancel does not: no result and no
// report. The connection's deadline and the context's own timer expire at the same instant,
// so a probe whose read fails first must not be taken for the target's timeout.
func TestRunDeadlineCutsProbesShort(t *testing.T) {
	t.Parallel()
	hang := rawServer(t, func(ctx context.Context, c net.Conn) { readRequest(c); <-ctx.Done() })
	var mu sync.Mutex
	var got []string
	c, err := New(Options{
		Name: "deadline", Logger: quiet(),
		Prober: ProberOptions{Addresses: AddressPolicy{AllowLoopback: true}},
		OnResult: func(id string, r Result) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("result %s: %s", id, r.Reason))
		},
		OnReport: func(r Report) {
			if !r.Withdrawn {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, fmt.Sprintf("report %s: %s", r.CheckID, r.Status))
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every check is due within its first second and would time out after 5s: each probe
	// still runs when the run's 1.2s are over.
	var checks []config.Check
	for i := range 20 {
		ch := checkFor(fmt.Sprintf("hang-%d", i), config.ProtocolHTTP, hang)
		ch.Interval, ch.Timeout = config.Duration(time.Second), config.Duration(5*time.Second)
		checks = append(checks, ch)
	}
	if err := c.SetChecks(checks); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 1200*time.Millisecond)
	defer cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) > 0 {
		t.Errorf("probes cut short by the end of the run were taken for results: %v", got)
	}
}
