package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/status"
)

// The status API shows the checker's own latest result of a probe, whole: a real agent
// probing a real HTTP target says the status code and the protocol it got, and the lag of
// its probes, which a scheduler never starts at the very nanosecond they are due, over
// several probes (a result rebuilt from the gossip report would say 0s, and no status code
// or protocol).
func TestStatusProbesShowTheCheckersResult(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	cfg := soloConfig(t, "probes", targets)
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.MountStatus(nil); err != nil {
		t.Fatal(err)
	}
	start(t, n)
	client, err := status.NewClient(n.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	const check = "web-us-east"
	seen := map[time.Time]status.ProbeResult{} // by the probe's start
	lagged := 0
	eventually(t, 20*time.Second, "four probes of "+check+" in the status API", func() (bool, string) {
		ps, err := client.Probes(context.Background())
		if err != nil {
			return false, err.Error()
		}
		for _, p := range ps.Probes {
			if p.Check != check || p.Last == nil {
				continue
			}
			l := *p.Last
			if l.StatusCode != 200 || l.Protocol != "http/1.1" || !l.Healthy || l.Reason != "ok" {
				t.Fatalf("probe of %s: %+v; want status_code 200, protocol http/1.1, healthy", check, l)
			}
			if _, ok := seen[l.At]; !ok {
				seen[l.At] = l
				if l.Lag != 0 {
					lagged++
				}
			}
		}
		return len(seen) >= 4, fmt.Sprintf("%d probes seen", len(seen))
	})
	if lagged == 0 {
		t.Errorf("the lag of every one of %d probes is 0s: %+v", len(seen), seen)
	}
}
