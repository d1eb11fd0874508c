package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/regions"
)

// With checker links, a region is its location's link and its checkers' links: cutting,
// slowing or losing packets between two regions touches every link between their members
// and no other.
func TestRegionLinks(t *testing.T) {
	rs := []string{"us-east", "eu-west", "sa-east"}
	n, err := newCluster(t.Context(), Options{Regions: rs, DataDir: t.TempDir(), CheckerLinks: true})
	if err != nil {
		t.Fatal(err)
	}
	names := n.sim.Regions()
	if len(names) != 3*(1+DefaultCheckers) {
		t.Fatalf("links %v: want each region's and each checker's", names)
	}
	regionOf := func(x string) string { r, _, _ := strings.Cut(x, "-checker-"); return r }
	check := func(what string, want func(from, to string) bool, got func(from, to string) bool) {
		t.Helper()
		for _, a := range names {
			for _, b := range names {
				if a != b && want(regionOf(a), regionOf(b)) != got(a, b) {
					t.Errorf("%s: link %s -> %s is %v", what, a, b, got(a, b))
				}
			}
		}
	}
	cut := func(a, b string) bool { return n.sim.LinkState(a, b).Cut }
	if err := n.Cut("sa-east"); err != nil {
		t.Fatal(err)
	}
	check("cut sa-east", func(a, b string) bool { return a != b && (a == "sa-east" || b == "sa-east") }, cut)
	n.Heal()
	if err := n.Cut("us-east", "eu-west"); err != nil {
		t.Fatal(err)
	}
	check("cut us-east eu-west", func(a, b string) bool { return a != b && a != "sa-east" && b != "sa-east" }, cut)
	n.Heal()
	if err := n.Apply(regions.Fault{Kind: regions.CutOneWay, A: "eu-west", B: "sa-east"}); err != nil {
		t.Fatal(err)
	}
	check("cut-oneway eu-west sa-east", func(a, b string) bool { return a == "eu-west" && b == "sa-east" }, cut)
	n.Heal()
	if err := n.Apply(regions.Fault{Kind: regions.Loss, A: "us-east", B: "sa-east", Loss: 25}); err != nil {
		t.Fatal(err)
	}
	check("loss us-east sa-east", func(a, b string) bool { return a != b && a != "eu-west" && b != "eu-west" },
		func(a, b string) bool { return n.sim.LinkState(a, b).Loss == 25 })
	if err := n.Apply(regions.Fault{Kind: regions.Latency, A: "us-east", B: "us-east", Delay: time.Second}); err == nil {
		t.Error("latency within one region: no error")
	}
}
