package netlab

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/regions"
)

func TestFaultRules(t *testing.T) {
	rs := []*Region{{Name: "us-east", Index: 1}, {Name: "eu-west", Index: 2}, {Name: "sa-east", Index: 3}}
	f := regions.NewFaults("us-east", "eu-west", "sa-east")
	for _, x := range []regions.Fault{{Kind: regions.CutOneWay, A: "us-east", B: "sa-east"}, {Kind: regions.Loss, A: "eu-west", B: "sa-east", Loss: 2.5}} {
		if err := f.Apply(x); err != nil {
			t.Fatal(err)
		}
	}
	got := faultRules(f, rs, rs[2])
	for _, want := range []string{
		"ip saddr 10.200.1.0/24 drop\n",
		"ip saddr 10.200.2.0/24 numgen random mod 10000 < 250 drop\n",
		"delete table inet vglfault\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("rules of sa-east lack %q:\n%s", want, got)
		}
	}
	// The one-way cut us-east -> sa-east drops nothing that arrives at us-east.
	if got := faultRules(f, rs, rs[0]); strings.Contains(got, "saddr") {
		t.Errorf("rules of us-east drop something:\n%s", got)
	}
	if got := faultRules(f, rs, rs[1]); !strings.Contains(got, "ip saddr 10.200.3.0/24 numgen random mod 10000 < 250 drop") {
		t.Errorf("rules of eu-west:\n%s", got)
	}
}

// TestFaultsOnLinks cuts, cuts one way and makes lossy real links, and sees each with
// datagrams between the namespaces.
func TestFaultsOnLinks(t *testing.T) {
	topo := echoTopology(t)
	us, eu, sa := topo.Region("us-east"), topo.Region("eu-west"), topo.Region("sa-east")
	reach := func(a, b *Region) bool {
		_, err := rtt(a, b, 9000, 200*time.Millisecond)
		return err == nil
	}
	apply := func(x regions.Fault) {
		t.Helper()
		f := regions.NewFaults("us-east", "eu-west", "sa-east")
		if err := f.Apply(x); err != nil {
			t.Fatal(err)
		}
		if err := applyFaults(t.Context(), f, topo); err != nil {
			t.Fatal(err)
		}
	}
	apply(regions.Fault{Kind: regions.Cut, A: "us-east", B: "sa-east"})
	if reach(us, sa) || reach(sa, us) {
		t.Error("us-east and sa-east still reach each other across the cut")
	}
	if !reach(us, eu) || !reach(eu, sa) {
		t.Error("eu-west lost a link that was not cut")
	}
	// One way: us-east's packets reach sa-east, sa-east's answers do not come back; a round
	// trip fails both ways, but sa-east's echo server sees us-east's datagrams.
	apply(regions.Fault{Kind: regions.CutOneWay, A: "sa-east", B: "us-east"})
	if reach(us, sa) {
		t.Error("a round trip crossed a one-way cut")
	}
	ab, _ := topo.link("us-east", "sa-east").Stats()
	before := ab.Delivered
	_, _ = rtt(us, sa, 9000, 100*time.Millisecond)
	if ab, _ := topo.link("us-east", "sa-east").Stats(); ab.Delivered <= before {
		t.Error("us-east's datagram did not cross towards sa-east")
	}
	// Loss of 10% each way: a round trip survives with probability 0.81.
	apply(regions.Fault{Kind: regions.Loss, A: "us-east", B: "eu-west", Loss: 10})
	ok := 0
	const tries = 200
	for range tries {
		if _, err := rtt(us, eu, 9000, 50*time.Millisecond); err == nil {
			ok++
		}
	}
	if ok < tries*65/100 || ok > tries*95/100 {
		t.Errorf("10%% loss each way: %d of %d round trips, want about 81%%", ok, tries)
	}
	apply(regions.Fault{Kind: regions.Heal})
	if !reach(us, eu) || !reach(us, sa) || !reach(sa, us) {
		t.Error("not every link healed")
	}
}
