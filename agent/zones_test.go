package agent

import (
	"log/slog"
	"net/netip"
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/checker/shard"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/location"
)

// Each zone's name servers: stateless from its name, stateful from the control plane's stored
// allocation (stateless when the Watcher delivered none), none for a zone that lists its own;
// glue from the addresses this location's virtual name servers listen on.
func TestZoneShards(t *testing.T) {
	doc, err := config.Decode([]byte(`
regions: [us-east, eu-west, sa-east]
zones:
  - name: a.vigil.test
  - name: b.vigil.test
  - name: own.vigil.test
    name_servers: [ns1.example.net.]
`))
	if err != nil {
		t.Fatal(err)
	}
	ns, err := shard.NewNameServers(doc.NameServers)
	if err != nil {
		t.Fatal(err)
	}
	statelessA := ns.Stateless("a.vigil.test.")
	n := &Node{cfg: Config{NameServers: map[int]string{statelessA[0]: "127.0.0.17:53", 5: "0.0.0.0:53"}}, log: slog.New(slog.DiscardHandler)}

	indices := func(list []locationNS) []int {
		var out []int
		for _, s := range list {
			out = append(out, s.Index)
		}
		return out
	}
	got, err := n.zoneShards(state.NewState(doc))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["own.vigil.test."]; ok {
		t.Error("a zone with its own name servers got a shard")
	}
	if !slices.Equal(indices(got["a.vigil.test."]), statelessA) {
		t.Errorf("stateless shard of a: %v, want %v", indices(got["a.vigil.test."]), statelessA)
	}
	if g := got["a.vigil.test."][0]; g.Addr != netip.MustParseAddr("127.0.0.17") {
		t.Errorf("glue of the hosted name server: %v", g.Addr)
	}

	doc.NameServers.Mode = shard.ModeStateful
	stored := []int{1, 2, 3, 4}
	got, err = n.zoneShards(state.NewState(doc).WithShards(map[string][]int{"a.vigil.test.": stored}))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(indices(got["a.vigil.test."]), stored) {
		t.Errorf("stateful shard of a: %v, want the stored %v", indices(got["a.vigil.test."]), stored)
	}
	if want := ns.Stateless("b.vigil.test."); !slices.Equal(indices(got["b.vigil.test."]), want) {
		t.Errorf("stateful zone without a stored shard: %v, want its stateless %v", indices(got["b.vigil.test."]), want)
	}
	if got["a.vigil.test."][0].Addr.IsValid() {
		t.Errorf("glue for a name server this location does not host: %v", got["a.vigil.test."][0])
	}
}

type locationNS = location.NameServer
