package location

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-dns/vigil/config"
)

// answers asks name/A n times over UDP and returns how often each set of values (joined,
// sorted) came back.
func answers(t *testing.T, s *Server, name string, n int) map[string]int {
	t.Helper()
	seen := map[string]int{}
	for range n {
		r := exchange(t, "udp", s.Addr(), query(name, dns.TypeA, 0))
		if r.Rcode != dns.RcodeSuccess || !r.Authoritative {
			t.Fatalf("%s: rcode %s, AA %v", name, dns.RcodeToString[r.Rcode], r.Authoritative)
		}
		v := values(r)
		slices.Sort(v)
		seen[fmt.Sprint(v)]++
	}
	return seen
}

// keys returns the answers seen, sorted.
func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestPolicies checks a record set of each policy with healthy, partly unhealthy and all
// unhealthy records, each verdict change showing in the very next answers, and last resort
// counted by record set.
func TestPolicies(t *testing.T) {
	reg := prometheus.NewRegistry()
	s := startServer(t, Config{Registerer: reg})
	lastResort := func(set string) float64 {
		return testutil.ToFloat64(s.metrics.lastResorts.WithLabelValues(set))
	}
	withheld := func() float64 { return testutil.ToFloat64(s.metrics.withheld.WithLabelValues("example.test.")) }
	cases := []struct {
		name     string
		verdicts map[string]bool
		set      string
		want     []string // every answer seen, sorted
		last     bool     // answered in last resort
		withheld float64
	}{
		{"failover, both healthy: primary", nil, "fo", []string{"[192.0.2.10]"}, false, 0},
		{"failover, primary down: secondary", map[string]bool{"p": false}, "fo", []string{"[192.0.2.11]"}, false, 1},
		{"failover, both down: primary in last resort", map[string]bool{"p": false, "s": false}, "fo", []string{"[192.0.2.10]"}, true, 0},
		{"weighted, both healthy: either", nil, "wt", []string{"[192.0.2.20]", "[192.0.2.21]"}, false, 0},
		{"weighted, one down: the other", map[string]bool{"w1": false}, "wt", []string{"[192.0.2.21]"}, false, 1},
		{"weighted, both down: either in last resort", map[string]bool{"w1": false, "w2": false}, "wt", []string{"[192.0.2.20]", "[192.0.2.21]"}, true, 0},
		{"multivalue, all healthy: all", nil, "mv", []string{"[192.0.2.30 192.0.2.31 192.0.2.32]"}, false, 0},
		{"multivalue, one down: the others", map[string]bool{"m2": false}, "mv", []string{"[192.0.2.30 192.0.2.32]"}, false, 1},
		{"multivalue, all down: all in last resort", map[string]bool{"m1": false, "m2": false, "m3": false}, "mv", []string{"[192.0.2.30 192.0.2.31 192.0.2.32]"}, true, 0},
		{"simple ignores health checks", map[string]bool{"p": false, "s": false}, "plain", []string{"[192.0.2.40 192.0.2.41]"}, false, 0},
		{"verdicts restored", nil, "fo", []string{"[192.0.2.10]"}, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name := c.set + ".example.test."
			label := name + "/A"
			before := lastResort(label)
			s.SetVerdicts(c.verdicts)
			const n = 40 // a 50/50 weighted set shows one side only with probability 2^-39
			got := answers(t, s, name, n)
			if !slices.Equal(keys(got), c.want) {
				t.Errorf("answers %v, want %v", got, c.want)
			}
			wantLast := 0.0
			if c.last {
				wantLast = n
			}
			if d := lastResort(label) - before; d != wantLast {
				t.Errorf("last-resort answers counted %v, want %v", d, wantLast)
			}
			if w := withheld(); w != c.withheld {
				t.Errorf("withheld records %v, want %v", w, c.withheld)
			}
		})
	}
}

// TestConfigChange checks that a new snapshot shows in the next answer, without a restart.
func TestConfigChange(t *testing.T) {
	s := startServer(t, Config{})
	zones := testZones()
	zones[0].RecordSets[0].Records[0].Value = "192.0.2.99"
	zones = append(zones, config.Zone{Name: "new.test.", TTL: 60, SOA: config.DefaultSOA(),
		NameServers: []string{"ns1.new.test."},
		RecordSets:  []config.RecordSet{{Name: "@", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.7"}}}}})
	if r := exchange(t, "udp", s.Addr(), query("new.test.", dns.TypeA, 0)); r.Rcode != dns.RcodeRefused {
		t.Fatalf("before: new.test rcode %s, want REFUSED", dns.RcodeToString[r.Rcode])
	}
	s.SetSnapshot(mustSnapshot(t, zones, testShards()))
	if v := values(exchange(t, "udp", s.Addr(), query("www.example.test.", dns.TypeA, 0))); !slices.Equal(v, []string{"192.0.2.99"}) {
		t.Errorf("after: www %v, want 192.0.2.99", v)
	}
	if v := values(exchange(t, "udp", s.Addr(), query("new.test.", dns.TypeA, 0))); !slices.Equal(v, []string{"192.0.2.7"}) {
		t.Errorf("after: new.test %v, want 192.0.2.7", v)
	}
	// A zone absent from the shards is not on any virtual name server: only the main
	// listener answers it.
	if b := s.Respond(packed(t, query("new.test.", dns.TypeA, 0)), Request{NameServer: 1}); rcodeOf(t, b) != dns.RcodeRefused {
		t.Errorf("new.test on ns-1: rcode %s, want REFUSED", dns.RcodeToString[rcodeOf(t, b)])
	}
}

// TestSwapNeverHalfAZone swaps two versions of a zone while queries run; a CNAME whose target
// exists only in its own version must always be answered whole.
func TestSwapNeverHalfAZone(t *testing.T) {
	s, err := New(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	version := func(v int) *Snapshot {
		z := config.DefaultZone()
		z.Name = "swap.test."
		z.NameServers = []string{"ns.swap.test."}
		target := fmt.Sprintf("t%d.swap.test.", v)
		z.RecordSets = []config.RecordSet{
			{Name: "alias", Type: config.TypeCNAME, Records: []config.Record{{Value: target}}},
			{Name: target, Type: config.TypeA, Records: []config.Record{{Value: fmt.Sprintf("192.0.2.%d", v)}}},
		}
		return mustSnapshot(t, []config.Zone{z}, nil)
	}
	snaps := []*Snapshot{version(1), version(2)}
	s.SetSnapshot(snaps[0])
	q := packed(t, query("alias.swap.test.", dns.TypeA, 0))
	var swapper, workers sync.WaitGroup
	stop := make(chan struct{})
	swapper.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
				s.SetSnapshot(snaps[i%2])
			}
		}
	})
	for w := range 4 {
		workers.Go(func() {
			for range 2000 {
				var r dns.Msg
				if err := r.Unpack(s.Respond(q, Request{NameServer: -1})); err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
				v := values(&r)
				if !slices.Equal(v, []string{"t1.swap.test.", "192.0.2.1"}) && !slices.Equal(v, []string{"t2.swap.test.", "192.0.2.2"}) {
					t.Errorf("worker %d: half a zone: %v (rcode %s)", w, v, dns.RcodeToString[r.Rcode])
					return
				}
			}
		})
	}
	workers.Wait()
	close(stop)
	swapper.Wait()
}

// packed returns m in wire form.
func packed(t testing.TB, m *dns.Msg) []byte {
	t.Helper()
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rcodeOf returns the rcode of a response in wire form, or -1 when there is none.
func rcodeOf(t testing.TB, b []byte) int {
	t.Helper()
	if b == nil {
		return -1
	}
	var r dns.Msg
	if err := r.Unpack(b); err != nil {
		t.Fatalf("unpack response: %v", err)
	}
	return r.Rcode
}

// TestExplain checks that the explanation agrees with the verdicts and reports errors for
// names the location cannot explain.
func TestExplain(t *testing.T) {
	s, err := New(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSnapshot(mustSnapshot(t, testZones(), testShards()))
	s.SetVerdicts(map[string]bool{"p": false})
	res, err := s.Explain("FO.example.test", "A", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.String(); got != "failover secondary: 192.0.2.11 (primary unhealthy, secondary healthy)" {
		t.Errorf("explained as %q", got)
	}
	for _, c := range [][2]string{{"fo.example.org.", "A"}, {"nope.example.test.", "A"}, {"fo.example.test.", "AAAA"}, {"fo.example.test.", "BOGUS"}} {
		if _, err := s.Explain(c[0], c[1], 0); err == nil {
			t.Errorf("Explain(%s, %s): no error", c[0], c[1])
		}
	}
}
