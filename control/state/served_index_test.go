package state

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// TestServedIndexMatchesWholeZone: a write of one record set is judged by the served rules
// exactly as reading the whole zone before and after it judges it (config.ServedProblems,
// what a whole document's Validate runs): random zones over a few names near each other
// (delegations, their glue, aliases and their chains, wildcards, names made to exist or not)
// and random puts and deletes, where the write path reads the zone only when the served index
// says the name written is near one that a delegation or an alias names. The index of every
// state is also the one rebuilt from its document, and from its snapshot's form.
func TestServedIndexMatchesWholeZone(t *testing.T) {
	const apex = "z.test."
	owners := []string{"@", "a", "b", "c", "ns.a", "x.a", "y.x.a", "*.a", "*", "ns.b", "c.b", "sub", "ns.sub", "*.sub", "w.sub", "*.x.a"}
	targets := []string{"ns.a.z.test.", "ns.sub.z.test.", "ns.b.z.test.", "y.x.a.z.test.", "q.a.z.test.", "ns.out.example."}
	types := []config.RecordType{config.TypeA, config.TypeA, config.TypeAAAA, config.TypeCNAME, config.TypeTXT, config.TypeNS, config.TypeNS}
	rng := rand.New(rand.NewPCG(7, 11))
	abs := func(o string) string {
		if o == "@" {
			return apex
		}
		return o + "." + apex
	}
	randomSet := func() *config.RecordSet {
		owner := owners[rng.IntN(len(owners))]
		typ := types[rng.IntN(len(types))]
		if typ == config.TypeNS && owner == "@" {
			typ = config.TypeA
		}
		rs := &config.RecordSet{Name: abs(owner), Type: typ}
		switch {
		case typ == config.TypeNS:
			for range 1 + rng.IntN(2) {
				rs.Records = append(rs.Records, config.Record{Value: targets[rng.IntN(len(targets))]})
			}
		case typ == config.TypeA && rng.IntN(3) == 0:
			rs.Alias = owners[rng.IntN(len(owners))]
		case typ == config.TypeA:
			rs.Records = []config.Record{{Value: "192.0.2.1"}}
		case typ == config.TypeAAAA:
			rs.Records = []config.Record{{Value: "2001:db8::1"}}
		case typ == config.TypeCNAME:
			rs.Records = []config.Record{{Value: "elsewhere.example."}}
		default:
			rs.Records = []config.Record{{Value: `"t"`}}
		}
		return rs
	}
	scanned, skipped, differ := 0, 0, 0
	for round := range 3000 {
		doc := config.DefaultDocument()
		z := config.DefaultZone()
		z.Name = apex
		seen := map[string]bool{}
		for range rng.IntN(12) {
			rs := randomSet()
			if k := rs.Name + " " + string(rs.Type); !seen[k] {
				seen[k] = true
				z.RecordSets = append(z.RecordSets, *rs)
			}
		}
		doc.Zones = []config.Zone{z}
		base := NewState(&doc)
		for range 10 {
			e := base.Edit(base.Index + 1)
			var what string
			if keys := setKeysOf(base, apex); len(keys) > 0 && rng.IntN(3) == 0 {
				k := keys[rng.IntN(len(keys))]
				e.deleteSet(k)
				what = "delete " + k
			} else {
				rs := randomSet()
				e.putSet(apex, rs)
				what = fmt.Sprintf("put %s %s %v alias %q", rs.Name, rs.Type, rs.Records, rs.Alias)
			}
			got := messages(e.validateServed(nil, map[string]bool{}))
			var want []string
			for _, p := range e.servedNew(apex, true) {
				want = append(want, p.fe.Message)
			}
			slices.Sort(want)
			if len(want) > 0 {
				differ++
			}
			if !slices.Equal(got, want) {
				t.Fatalf("round %d: zone %v\n%s: the write path finds %q, the whole zone %q", round, base.Document().Zones, what, got, want)
			}
			for k := range e.sets {
				_, owner, typ := splitSetKey(k)
				if e.servedMatters(apex, owner, typ) {
					scanned++
				} else {
					skipped++
				}
			}
			if rebuilt := NewState(e.Next.Document()); !slices.Equal(indexOf(e.Next), indexOf(rebuilt)) {
				t.Fatalf("round %d, %s: index %q, rebuilt from the document %q", round, what, indexOf(e.Next), indexOf(rebuilt))
			}
			base = e.Next
		}
		data, err := base.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var restored State
		if err := restored.UnmarshalJSON(data); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(indexOf(base), indexOf(&restored)) {
			t.Fatalf("round %d: index %q, restored from the snapshot's form %q", round, indexOf(base), indexOf(&restored))
		}
	}
	t.Logf("%d writes read the zone, %d did not; %d brought problems", scanned, skipped, differ)
	if skipped == 0 || differ == 0 {
		t.Errorf("the random writes tried nothing: %d skipped, %d with problems", skipped, differ)
	}
}

func setKeysOf(s *State, apex string) []string {
	var keys []string
	for k := range s.sets.Prefix(zonePrefix(apex)) {
		keys = append(keys, k)
	}
	return keys
}

func messages(es config.Errors) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Message)
	}
	slices.Sort(out)
	return out
}

func indexOf(s *State) []string {
	var out []string
	for k, n := range s.served.All("") {
		out = append(out, fmt.Sprintf("%q=%d", k, n))
	}
	return out
}
