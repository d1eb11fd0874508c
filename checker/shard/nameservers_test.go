package shard

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// settings returns the default name-server settings with the given fleet, shard size and
// overlap limit.
func settings(fleet, size, overlap int) config.NameServerSettings {
	s := config.DefaultDocument().NameServers
	s.Fleet, s.ShardSize, s.MaxOverlap = fleet, size, overlap
	return s
}

func mustNameServers(t testing.TB, s config.NameServerSettings) *NameServers {
	t.Helper()
	n, err := NewNameServers(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNameServerNames(t *testing.T) {
	n := mustNameServers(t, config.DefaultDocument().NameServers)
	if got := n.Name(1234); got != "ns-1234.ns.vigil.test." {
		t.Errorf("Name(1234) = %q", got)
	}
	for _, i := range []int{0, 7, 2047} {
		if got, err := n.Index(n.Name(i)); err != nil || got != i {
			t.Errorf("Index(Name(%d)) = %d, %v", i, got, err)
		}
	}
	if got, err := n.Index("NS-12.Ns.Vigil.Test"); err != nil || got != 12 {
		t.Errorf("Index is not case and final-dot insensitive: %d, %v", got, err)
	}
	for _, bad := range []string{"ns-2048.ns.vigil.test.", "ns-01.ns.vigil.test.", "ns--1.ns.vigil.test.",
		"ns-1.other.test.", "ns-.ns.vigil.test.", "www.ns.vigil.test.", "", "ns-1.xns.vigil.test."} {
		if _, err := n.Index(bad); err == nil || !strings.HasPrefix(err.Error(), "shard: ") {
			t.Errorf("Index(%q) error = %v, want a shard error", bad, err)
		}
	}
}

func TestNameServerSettingsErrors(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*config.NameServerSettings)
		want   string
	}{
		{func(s *config.NameServerSettings) { s.Domain = " " }, "domain is empty"},
		{func(s *config.NameServerSettings) { s.Fleet = 0 }, "fleet 0"},
		{func(s *config.NameServerSettings) { s.Fleet = 1 << 17 }, "fleet 131072"},
		{func(s *config.NameServerSettings) { s.ShardSize = 0 }, "shard_size 0"},
		{func(s *config.NameServerSettings) { s.Fleet, s.ShardSize = 3, 4 }, "shard_size 4"},
		{func(s *config.NameServerSettings) { s.MaxOverlap = -1 }, "max_overlap -1"},
		{func(s *config.NameServerSettings) { s.Mode = "magic" }, `mode "magic"`},
	} {
		s := config.DefaultDocument().NameServers
		tc.mutate(&s)
		if _, err := NewNameServers(s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", s, err, tc.want)
		}
	}
	// 5 servers of 16 bits do not pack into one word.
	n := mustNameServers(t, settings(1<<16, 6, 4))
	if _, err := n.NewAllocator(); err == nil || !strings.Contains(err.Error(), "do not pack") {
		t.Errorf("allocator for 5-subsets of 16 bits: error %v", err)
	}
}

// The stateless shard depends on the zone name alone: any node derives it, in any spelling.
func TestStatelessShard(t *testing.T) {
	n := mustNameServers(t, config.DefaultDocument().NameServers)
	a := n.Stateless("Example.COM")
	if !slices.Equal(a, n.Stateless("example.com.")) {
		t.Error("stateless shard differs between spellings of one zone")
	}
	if len(a) != 4 || !slices.IsSorted(a) || len(slices.Compact(slices.Clone(a))) != 4 || a[0] < 0 || a[3] >= 2048 {
		t.Errorf("stateless shard %v: want 4 distinct sorted servers in [0, 2048)", a)
	}
	if slices.Equal(a, n.Stateless("example.org.")) {
		t.Error("two zones got the same stateless shard")
	}
	// Over many zones every server is used about evenly.
	use := make([]int, 2048)
	for i := range 50000 {
		for _, s := range n.Stateless("zone-" + strconv.Itoa(i) + ".example.") {
			use[s]++
		}
	}
	if cv, peak := spread(use); cv > 0.15 || peak > 1.7 {
		t.Errorf("stateless use of servers: cv %.3f, max/mean %.2f", cv, peak)
	}
}

// A zone's name servers: none when it lists its own; stateless from its name; in stateful
// mode the stored allocation, its stateless shard when none is stored.
func TestNameServersOf(t *testing.T) {
	stored := map[string][]int{"a.example.": {1, 2, 3, 4}}
	lookup := func(zone string) []int { return stored[zone] }
	a, b := &config.Zone{Name: "a.example."}, &config.Zone{Name: "b.example."}
	own := &config.Zone{Name: "a.example.", NameServers: []string{"ns1.example.net."}}
	stateless := mustNameServers(t, config.DefaultDocument().NameServers)
	sf := config.DefaultDocument().NameServers
	sf.Mode = ModeStateful
	stateful := mustNameServers(t, sf)
	for _, c := range []struct {
		name string
		ns   *NameServers
		z    *config.Zone
		want []int
	}{
		{"stateless", stateless, b, stateless.Stateless("b.example.")},
		{"stateless ignores what is stored", stateless, a, stateless.Stateless("a.example.")},
		{"stateful, stored", stateful, a, stored["a.example."]},
		{"stateful, none stored", stateful, b, stateful.Stateless("b.example.")},
		{"own name servers", stateful, own, nil},
		{"own name servers, stateless", stateless, own, nil},
	} {
		if got := c.ns.Of(c.z, lookup); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
