package location

import (
	"fmt"
	"hash/maphash"
	"maps"
	"math/rand/v2"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestVerdictStorePatch applies random patches and checks every version against a plain map:
// each check's served health, the count of unhealthy ones, and that older versions (which
// queries in flight may still read) never change.
func TestVerdictStorePatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := newVerdictStore(maphash.MakeSeed(), make([]map[string]struct{}, verdictShards), 0)
	want := map[string]bool{}
	type version struct {
		v    *verdicts
		want map[string]bool
	}
	var old []version
	for step := range 300 {
		old = append(old, version{v, maps.Clone(want)})
		var changes []VerdictChange
		before := maps.Clone(want)
		for range rng.IntN(40) {
			c := VerdictChange{Check: fmt.Sprintf("c%d", rng.IntN(3000)), Healthy: rng.IntN(2) == 0}
			changes = append(changes, c)
			want[c.Check] = !c.Healthy // true: served unhealthy
		}
		next, changed := v.patch(changes, nil)
		reported := map[string]bool{}
		for _, id := range changed {
			reported[id] = true
		}
		for id, d := range want {
			if before[id] != d && !reported[id] {
				t.Fatalf("step %d: %s changed but was not reported", step, id)
			}
		}
		v = next
		down := 0
		for id, d := range want {
			if v.healthy(id) == d {
				t.Fatalf("step %d: %s served healthy=%v, want %v", step, id, v.healthy(id), !d)
			}
			if d {
				down++
			}
		}
		if v.down != down {
			t.Fatalf("step %d: store counts %d unhealthy, want %d", step, v.down, down)
		}
	}
	// Every old version still answers as it did.
	for i, o := range old {
		for id, d := range o.want {
			if o.v.healthy(id) == d {
				t.Fatalf("version %d changed after later patches: %s", i, id)
			}
		}
	}
}

// TestPatchVerdictsWithheld: patching verdicts counts withheld records as installing them
// all does.
func TestPatchVerdictsWithheld(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(Config{Addr: "127.0.0.1:0", Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSnapshot(mustSnapshot(t, testZones(), testShards()))
	s.PatchVerdicts([]VerdictChange{{Check: "p", Healthy: false}, {Check: "s", Healthy: false}, {Check: "m2", Healthy: false}})
	patched := testutil.ToFloat64(s.metrics.withheld.WithLabelValues("example.test."))
	s.SetVerdicts(nil)
	s.SetVerdicts(map[string]bool{"p": false, "s": false, "m2": false})
	if set := testutil.ToFloat64(s.metrics.withheld.WithLabelValues("example.test.")); patched != set || set != 1 {
		t.Fatalf("withheld after patch %v, after set %v; want 1 both", patched, set)
	}
	s.PatchVerdicts([]VerdictChange{{Check: "m2", Healthy: true}})
	if got := testutil.ToFloat64(s.metrics.withheld.WithLabelValues("example.test.")); got != 0 {
		t.Fatalf("withheld after m2 healthy again: %v, want 0", got)
	}
}

// BenchmarkPatchVerdicts: one verdict changes among 1,000,000 checks, 10% of them unhealthy.
func BenchmarkPatchVerdicts(b *testing.B) {
	s, err := New(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	all := map[string]bool{}
	for i := range 1_000_000 {
		all[fmt.Sprintf("check-%07d", i)] = i%10 != 0
	}
	s.SetVerdicts(all)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.PatchVerdicts([]VerdictChange{{Check: fmt.Sprintf("check-%07d", i%1_000_000), Healthy: i%3 == 0}})
	}
}
