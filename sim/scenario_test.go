package sim

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dev"
	"github.com/vigil-dns/vigil/quorum"
)

// runScenario runs a named scenario on a fresh dev network and fails the test on any error,
// violation or flip of a healthy endpoint.
func runScenario(t *testing.T, name string) Result {
	t.Helper()
	doc, err := config.Load("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Scenario(name, dev.DefaultConfig().Regions)
	if err != nil {
		t.Fatal(err)
	}
	var timeline strings.Builder
	res, err := Run(t.Context(), Options{
		Script: sc, Document: doc, DataDir: t.TempDir(), Timeline: &timeline,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError})),
	})
	var report strings.Builder
	_ = res.WriteReport(&report)
	t.Logf("timeline:\n%s%s", timeline.String(), report.String())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Verification.Violations); n > 0 {
		t.Errorf("%d history violations, first: %v", n, res.Verification.Violations[0])
	}
	if len(res.Flips) > 0 {
		t.Errorf("healthy endpoints flipped: %v", res.Flips)
	}
	if res.Verification.Answers < 100 {
		t.Errorf("only %d answers recorded", res.Verification.Answers)
	}
	if res.Detection <= 0 || res.Recovery <= 0 {
		t.Errorf("detection %v, recovery %v: both must have been measured", res.Detection, res.Recovery)
	}
	return res
}

// TestPartition is the São Paulo story.
func TestPartition(t *testing.T) {
	res := runScenario(t, "partition")
	// During the cut, sa-east answered all.demo.vigil.test with its own endpoint only, and
	// the other locations without it.
	saOnly, othersWithout := false, false
	for _, a := range res.History.Answers {
		if a.Name != "all.demo.vigil.test." {
			continue
		}
		if a.Location == "sa-east" && strings.Join(a.Values, " ") == "203.0.113.1" {
			saOnly = true
		}
		if a.Location == "us-east" && strings.Join(a.Values, " ") == "192.0.2.1 198.51.100.1" {
			othersWithout = true
		}
	}
	if !saOnly || !othersWithout {
		t.Errorf("partition answers: sa-east served only São Paulo: %v; us-east dropped São Paulo: %v", saOnly, othersWithout)
	}
	for _, l := range res.Regions {
		for id, s := range res.Final[l] {
			if s != quorum.StateHealthy {
				t.Errorf("after the heal, %s at %s is %s", id, l, s)
			}
		}
	}
}
