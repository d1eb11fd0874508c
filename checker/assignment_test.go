package checker

import (
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker/shard"
	"github.com/vigil-dns/vigil/config"
)

// testChecks is a configuration for an Assignment: its regions and checks, in order.
type testChecks struct {
	regions []string
	list    []config.Check
	index   map[string]int // by id, built at the first CheckRef
}

func (c *testChecks) Regions() []string { return c.regions }

func (c *testChecks) Checks() iter.Seq[*config.Check] {
	return func(yield func(*config.Check) bool) {
		for i := range c.list {
			if !yield(&c.list[i]) {
				return
			}
		}
	}
}

func (c *testChecks) CheckRef(id string) (*config.Check, bool) {
	if c.index == nil {
		c.index = make(map[string]int, len(c.list))
		for i, x := range c.list {
			c.index[x.ID] = i
		}
	}
	i, ok := c.index[id]
	if !ok {
		return nil, false
	}
	return &c.list[i], true
}

// with returns a copy of c with check x put (added, or in the place of the check of its id).
func (c *testChecks) with(x config.Check) *testChecks {
	out := &testChecks{regions: c.regions, list: slices.Clone(c.list)}
	if i := slices.IndexFunc(out.list, func(y config.Check) bool { return y.ID == x.ID }); i >= 0 {
		out.list[i] = x
	} else {
		out.list = append(out.list, x)
	}
	return out
}

// without returns a copy of c without check id.
func (c *testChecks) without(id string) *testChecks {
	out := &testChecks{regions: c.regions, list: slices.Clone(c.list)}
	out.list = slices.DeleteFunc(out.list, func(x config.Check) bool { return x.ID == id })
	return out
}

// assignCheck is a probed check of one checker per region, interval 1s, timeout 500ms.
func assignCheck(id string, regions ...string) config.Check {
	c := config.DefaultCheck()
	c.ID, c.Protocol, c.Regions, c.CheckersPerRegion = id, config.ProtocolTCP, regions, 1
	c.Interval, c.Timeout = config.Duration(time.Second), config.Duration(500*time.Millisecond)
	return c
}

// assignDoc is n checks c0… over us and eu, one check in eu alone and one calculated.
func assignDoc(n int) *testChecks {
	cs := &testChecks{regions: []string{"us", "eu"}}
	for i := range n {
		cs.list = append(cs.list, assignCheck(fmt.Sprintf("c%d", i)))
	}
	cs.list = append(cs.list, assignCheck("eu-only", "eu"))
	calc := assignCheck("calc")
	calc.Protocol = config.ProtocolCalculated
	cs.list = append(cs.list, calc)
	return cs
}

func checkIDs(checks []config.Check) []string {
	out := make([]string, 0, len(checks))
	for _, c := range checks {
		out = append(out, c.ID)
	}
	return out
}

func nobody(string, string) bool   { return false }
func everyone(string, string) bool { return true }
func anyReported(string) bool      { return true }

// TestAssignmentGivesItsShards: a checker is given the checks of its region's shards it is
// in, not a calculated check nor a check of another region; given once, it is not given them
// again while nothing changes.
func TestAssignmentGivesItsShards(t *testing.T) {
	cs := assignDoc(5)
	a := NewAssignment("us", "a")
	if a.Due() || a.Give(time.Now(), time.Second, nobody, anyReported) != nil {
		t.Fatal("due, or given checks, without a configuration")
	}
	if err := a.Configure(cs, nil, true, shard.Membership{"us": {"a"}, "eu": {"x"}, "mars": {"m"}}); err != nil {
		t.Fatal(err)
	}
	if !a.Due() {
		t.Fatal("not due after the first configuration")
	}
	got := checkIDs(a.Give(time.Now(), time.Second, nobody, anyReported))
	if want := []string{"c0", "c1", "c2", "c3", "c4"}; !slices.Equal(got, want) {
		t.Fatalf("given %v, want %v", got, want)
	}
	if err := a.SetMembers(shard.Membership{"us": {"a"}, "eu": {"x"}}); err != nil || a.Due() {
		t.Fatalf("due %v (err %v) for the same membership", a.Due(), err)
	}
	if got := a.Plan().Shard("eu-only", "eu"); !slices.Equal(got, []string{"x"}) {
		t.Errorf("shard of eu-only in eu %v, want [x]", got)
	}
}

// TestAssignmentConfigureInPlace: a write changes the plan in place, check by check; the
// checker is due its checks again only when the write touched one it was given or the plan
// gives it; a configuration taken whole makes it due.
func TestAssignmentConfigureInPlace(t *testing.T) {
	cs := assignDoc(5)
	a := NewAssignment("us", "a")
	live := shard.Membership{"us": {"a"}, "eu": {"x"}}
	if err := a.Configure(cs, nil, true, live); err != nil {
		t.Fatal(err)
	}
	a.Give(time.Now(), time.Second, nobody, anyReported)
	plan := a.Plan()

	cs = cs.without("eu-only").with(assignCheck("eu-2", "eu"))
	if err := a.Configure(cs, []string{"eu-2", "eu-only"}, false, live); err != nil {
		t.Fatal(err)
	}
	if a.Due() || a.Plan() != plan {
		t.Fatalf("due %v, same plan %v after a write of checks it does not probe", a.Due(), a.Plan() == plan)
	}
	if got := plan.Shard("eu-2", "eu"); !slices.Equal(got, []string{"x"}) {
		t.Errorf("shard of the new check %v, want [x]", got)
	}

	cs = cs.with(assignCheck("new"))
	if err := a.Configure(cs, []string{"new"}, false, live); err != nil || !a.Due() {
		t.Fatalf("due %v (err %v) after a write of a check it probes", a.Due(), err)
	}
	if got := checkIDs(a.Give(time.Now(), time.Second, nobody, anyReported)); !slices.Contains(got, "new") || a.Plan() != plan {
		t.Fatalf("given %v, same plan %v", got, a.Plan() == plan)
	}

	cs = cs.without("c2")
	if err := a.Configure(cs, []string{"c2"}, false, live); err != nil || !a.Due() {
		t.Fatalf("due %v (err %v) after a check it was given was removed", a.Due(), err)
	}
	if got := checkIDs(a.Give(time.Now(), time.Second, nobody, anyReported)); slices.Contains(got, "c2") {
		t.Fatalf("given %v, with the removed check", got)
	}

	if err := a.Configure(cs, nil, true, live); err != nil || !a.Due() || a.Plan() == plan {
		t.Fatalf("due %v (err %v), same plan %v after a configuration taken whole", a.Due(), err, a.Plan() == plan)
	}
}

// TestAssignmentUnplannable: a configuration that cannot be planned leaves no plan (and the
// checker its last checks) until one that can.
func TestAssignmentUnplannable(t *testing.T) {
	live := shard.Membership{"us": {"a"}}
	a := NewAssignment("us", "a")
	bad := assignDoc(2)
	bad.list[0].CheckersPerRegion = 0
	err := a.Configure(bad, nil, true, live)
	if err == nil || !strings.Contains(err.Error(), "checkers_per_region") {
		t.Fatalf("error %v, want one of checkers_per_region", err)
	}
	if a.Plan() != nil || a.Due() || a.SetMembers(shard.Membership{"us": {"a", "b"}}) != nil || a.Due() {
		t.Fatal("a plan, or due, without a configuration that can be planned")
	}
	if err := a.Configure(assignDoc(2), nil, true, live); err != nil || a.Plan() == nil || !a.Due() {
		t.Fatalf("plan %v, due %v, err %v after a configuration that can be planned", a.Plan() != nil, a.Due(), err)
	}
	// A write of one check that cannot be planned leaves it out, the rest in.
	c := assignCheck("c9", "nowhere")
	if err := a.Configure(assignDoc(2).with(c), []string{"c9"}, false, live); err == nil || a.Plan() == nil {
		t.Fatalf("err %v, plan %v for a check of an unknown region", err, a.Plan() != nil)
	}
}

// TestAssignmentHandoff: when a checker joins its region, the checks it takes are still given
// to the checker that left them (make before break) until the newcomer has reported them for
// the overlap, or until the handoff's limit; checks never reported, and checks the
// configuration drops, go at once.
func TestAssignmentHandoff(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	sec := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Second))) }
	const window = 2 * time.Second // overlap max(1s, 2s) = 2s; limit 3×1s + 0.5s + 2×2s = 7.5s
	cs := assignDoc(40)
	a := NewAssignment("us", "a")
	if err := a.Configure(cs, nil, true, shard.Membership{"us": {"a"}}); err != nil {
		t.Fatal(err)
	}
	all := checkIDs(a.Give(t0, window, nobody, anyReported))
	if err := a.SetMembers(shard.Membership{"us": {"a", "b"}}); err != nil || !a.Due() {
		t.Fatalf("due %v (err %v) after the membership moved", a.Due(), err)
	}
	var left []string
	for _, id := range all {
		if !slices.Contains(a.Plan().Shard(id, "us"), "a") {
			left = append(left, id)
		}
	}
	if len(left) == 0 || len(left) == len(all) {
		t.Fatalf("b took %d of %d checks", len(left), len(all))
	}
	slices.Sort(left)
	unreported, handed := left[0], left[1:]
	reported := func(id string) bool { return id != unreported }
	kept := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return slices.Contains(left, id) })

	give := func(now time.Time, heard func(string, string) bool) []string {
		t.Helper()
		if !a.Due() {
			t.Fatalf("not due at %v while handing off", now.Sub(t0))
		}
		return checkIDs(a.Give(now, window, heard, reported))
	}
	if got, want := give(sec(0), nobody), append(slices.Clone(kept), handed...); !slices.Equal(got, want) {
		t.Fatalf("given %v, want its checks then those it hands off %v", got, want)
	}
	// b reports them from 1s: they are kept for the overlap, 2s.
	onlyB := func(_, holder string) bool { return holder == "b" }
	if got := give(sec(1), onlyB); len(got) != len(kept)+len(handed) || !a.HandingOff() {
		t.Fatalf("given %d checks at 1s, want %d", len(got), len(kept)+len(handed))
	}
	if got := give(sec(2.9), everyone); len(got) != len(kept)+len(handed) {
		t.Fatalf("given %d checks at 2.9s, want %d", len(got), len(kept)+len(handed))
	}
	if got := give(sec(3), everyone); !slices.Equal(got, kept) || a.HandingOff() || a.Due() {
		t.Fatalf("given %v at 3s, want its own %v; handing off %v", got, kept, a.HandingOff())
	}

	// Back to one checker, then b again: b never reports, the handoff ends at its limit.
	if err := a.SetMembers(shard.Membership{"us": {"a"}}); err != nil {
		t.Fatal(err)
	}
	give(sec(10), nobody)
	if err := a.SetMembers(shard.Membership{"us": {"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if got := give(sec(20), nobody); len(got) != len(kept)+len(handed) {
		t.Fatalf("given %d checks, want %d", len(got), len(kept)+len(handed))
	}
	// A check the configuration drops during the handoff goes at once.
	gone := handed[0]
	cs = cs.without(gone)
	if err := a.Configure(cs, []string{gone}, false, shard.Membership{"us": {"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if got := give(sec(27), nobody); slices.Contains(got, gone) || len(got) != len(kept)+len(handed)-1 {
		t.Fatalf("given %v at 27s, want the handoffs without %s", got, gone)
	}
	if got := give(sec(27.5), nobody); !slices.Equal(got, kept) || a.HandingOff() {
		t.Fatalf("given %v past the limit, want its own %v", got, kept)
	}
}

// BenchmarkAssignment: a checker's assignment of C checks (it is the only checker of its
// region): a write of one of its checks, then Give; and a membership that moves and back,
// then Give. Node.reassign's decisions without the node (BenchmarkReassign in agent/).
func BenchmarkAssignment(b *testing.B) {
	now := time.Unix(1_700_000_000, 0)
	for _, n := range []int{10_000, 100_000} {
		cs := assignDoc(n)
		live := shard.Membership{"us": {"a"}, "eu": {"x"}}
		a := NewAssignment("us", "a")
		if err := a.Configure(cs, nil, true, live); err != nil {
			b.Fatal(err)
		}
		a.Give(now, time.Second, nobody, anyReported)
		id := cs.list[n/2].ID
		b.Run(fmt.Sprintf("checks=%d/write", n), func(b *testing.B) {
			for b.Loop() {
				if err := a.Configure(cs, []string{id}, false, live); err != nil || !a.Due() {
					b.Fatal("not due", err)
				}
				if got := a.Give(now, time.Second, nobody, anyReported); len(got) != n {
					b.Fatalf("given %d, want %d", len(got), n)
				}
			}
		})
		b.Run(fmt.Sprintf("checks=%d/membership", n), func(b *testing.B) {
			for b.Loop() {
				if err := a.SetMembers(shard.Membership{}); err != nil {
					b.Fatal(err)
				}
				if err := a.SetMembers(live); err != nil || !a.Due() {
					b.Fatal("not due", err)
				}
				if got := a.Give(now, time.Second, nobody, anyReported); len(got) != n {
					b.Fatalf("given %d, want %d", len(got), n)
				}
			}
		})
	}
}
