package control

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// refApply is the reference semantics of a command: change a copy of the whole document and
// validate all of it (what every write did before the state was edited item by item).
func refApply(doc *config.Document, c *state.Command) (*config.Document, error) {
	d := *doc
	d.Checks = slices.Clone(d.Checks)
	d.Zones = slices.Clone(d.Zones)
	findZone := func(name string) int {
		return slices.IndexFunc(d.Zones, func(z config.Zone) bool { return state.CanonicalZone(z.Name) == state.CanonicalZone(name) })
	}
	switch c.Op {
	case state.OpPutCheck:
		i := slices.IndexFunc(d.Checks, func(x config.Check) bool { return x.ID == c.Check.ID })
		switch {
		case i >= 0 && c.Create:
			return nil, state.ErrConflict
		case i >= 0:
			d.Checks[i] = *c.Check
		default:
			d.Checks = append(d.Checks, *c.Check)
		}
	case state.OpDeleteCheck:
		i := slices.IndexFunc(d.Checks, func(x config.Check) bool { return x.ID == c.ID })
		if i < 0 {
			return nil, state.ErrNotFound
		}
		d.Checks = slices.Delete(d.Checks, i, i+1)
	case state.OpPutZone:
		i := findZone(c.Zone.Name)
		switch {
		case i >= 0 && c.Create:
			return nil, state.ErrConflict
		case i >= 0:
			d.Zones[i] = *c.Zone
		default:
			d.Zones = append(d.Zones, *c.Zone)
		}
	case state.OpDeleteZone:
		i := findZone(c.ZoneName)
		if i < 0 {
			return nil, state.ErrNotFound
		}
		d.Zones = slices.Delete(d.Zones, i, i+1)
	case state.OpPutRecordSet, state.OpDeleteRecordSet:
		zi := findZone(c.ZoneName)
		if zi < 0 {
			return nil, state.ErrNotFound
		}
		z := d.Zones[zi]
		z.RecordSets = slices.Clone(z.RecordSets)
		name, typ := c.Name, c.Type
		if c.Op == state.OpPutRecordSet {
			name, typ = c.RecordSet.Name, c.RecordSet.Type
		}
		i := slices.IndexFunc(z.RecordSets, func(rs config.RecordSet) bool {
			return state.CanonicalOwner(z.Name, rs.Name) == state.CanonicalOwner(z.Name, name) && rs.Type == typ
		})
		switch {
		case c.Op == state.OpDeleteRecordSet && i < 0:
			return nil, state.ErrNotFound
		case c.Op == state.OpDeleteRecordSet:
			z.RecordSets = slices.Delete(z.RecordSets, i, i+1)
		case i >= 0 && c.Create:
			return nil, state.ErrConflict
		case i >= 0:
			z.RecordSets[i] = *c.RecordSet
		default:
			z.RecordSets = append(z.RecordSets, *c.RecordSet)
		}
		d.Zones[zi] = z
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// canonicalDoc sorts a document as a State lists it and clears the zones' serials.
func canonicalDoc(d *config.Document) *config.Document {
	c := *d
	c.Checks = slices.Clone(d.Checks)
	slices.SortFunc(c.Checks, func(a, b config.Check) int { return cmp.Compare(a.ID, b.ID) })
	c.Zones = nil
	for _, z := range d.Zones {
		z.SOA.Serial = 0
		z.RecordSets = slices.Clone(z.RecordSets)
		slices.SortFunc(z.RecordSets, func(a, b config.RecordSet) int {
			return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Type, b.Type))
		})
		if len(z.RecordSets) == 0 {
			z.RecordSets = nil
		}
		c.Zones = append(c.Zones, z)
	}
	slices.SortFunc(c.Zones, func(a, b config.Zone) int { return cmp.Compare(a.Name, b.Name) })
	if len(c.Checks) == 0 {
		c.Checks = nil
	}
	return &c
}

// randomCommand returns a command over a small pool of names, valid or not.
func randomCommand(rng *rand.Rand) *state.Command {
	checkID := func() string { return fmt.Sprintf("c%d", rng.IntN(8)) }
	zoneName := func() string { return fmt.Sprintf("z%d.test.", rng.IntN(3)) }
	recordSet := func(zone string) *config.RecordSet {
		typ := []config.RecordType{config.TypeA, config.TypeA, config.TypeCNAME, config.TypeTXT}[rng.IntN(4)]
		rs := &config.RecordSet{Name: fmt.Sprintf("h%d.%s", rng.IntN(3), zone), Type: typ, TTL: config.TTL(60), Policy: config.PolicySimple}
		switch typ {
		case config.TypeA:
			rs.Policy = config.PolicyMultivalue
			rs.Records = []config.Record{{Value: "192.0.2.1", HealthCheck: checkID()}, {Value: "192.0.2.2"}}
		case config.TypeCNAME:
			rs.Records = []config.Record{{Value: "target.example."}}
		case config.TypeTXT:
			rs.Records = []config.Record{{Value: "hello"}}
			if rng.IntN(4) == 0 {
				rs.Records = nil // invalid: no records
			}
		}
		return rs
	}
	zone := func() *config.Zone {
		z := config.DefaultZone()
		z.Name = zoneName()
		z.NameServers = []string{"ns1.example."}
		z.SOA.MName, z.SOA.RName = "ns1.example.", "hostmaster."+z.Name
		for range rng.IntN(3) {
			z.RecordSets = append(z.RecordSets, *recordSet(z.Name))
		}
		return &z
	}
	create := rng.IntN(4) == 0
	switch rng.IntN(9) {
	case 0, 1:
		c := config.DefaultCheck()
		c.ID, c.Protocol, c.Target, c.Regions = checkID(), config.ProtocolTCP, config.Target{Host: "127.0.0.1", Port: 1 + rng.IntN(3)}, []string{"a", "b", "c"}
		if rng.IntN(6) == 0 {
			c.Target.Port = 0 // invalid: tcp needs a port
		}
		return &state.Command{Op: state.OpPutCheck, Check: &c, Create: create}
	case 2:
		kids := []string{checkID(), checkID()}
		if kids[0] == kids[1] {
			kids = kids[:1]
		}
		c := config.Check{ID: checkID(), Protocol: config.ProtocolCalculated, Children: kids, MinHealthy: len(kids)}
		return &state.Command{Op: state.OpPutCheck, Check: &c, Create: create}
	case 3:
		return &state.Command{Op: state.OpDeleteCheck, ID: checkID()}
	case 4:
		return &state.Command{Op: state.OpPutZone, Zone: zone(), Create: create}
	case 5:
		return &state.Command{Op: state.OpDeleteZone, ZoneName: zoneName()}
	case 6, 7:
		z := zoneName()
		return &state.Command{Op: state.OpPutRecordSet, ZoneName: z, RecordSet: recordSet(z), Create: create}
	default:
		z := zoneName()
		rs := recordSet(z)
		return &state.Command{Op: state.OpDeleteRecordSet, ZoneName: z, Name: rs.Name, Type: rs.Type}
	}
}

// TestEditMatchesWholeDocument: writes applied item by item, each validated against the rest
// of the state, are accepted and rejected exactly as when the whole resulting document is
// validated, and produce the same document. Thousands of random commands over a small pool
// of names reach duplicates, dangling references, cycles, CNAME conflicts and deletes of
// checks still in use.
func TestEditMatchesWholeDocument(t *testing.T) {
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 7))
		base := config.DefaultDocument()
		base.Regions = []string{"a", "b", "c"}
		s := state.Empty()
		e := s.Edit(1)
		e.SetSettings(&base)
		s = e.Next
		ref := &base
		accepted := 0
		for i := range 1500 {
			c := randomCommand(rng)
			want, werr := refApply(ref, c)
			e, gerr := state.ApplyCommand(s, c, uint64(i+2))
			if (werr == nil) != (gerr == nil) || errors.Is(werr, state.ErrNotFound) != errors.Is(gerr, state.ErrNotFound) || errors.Is(werr, state.ErrConflict) != errors.Is(gerr, state.ErrConflict) {
				t.Fatalf("seed %d command %d %s %+v:\nreference: %v\nedit: %v", seed, i, c.Op, c, werr, gerr)
			}
			if gerr != nil {
				continue
			}
			accepted++
			s, ref = e.Next, want
			if got, want := canonicalDoc(s.Document()), canonicalDoc(ref); !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d command %d %s: documents differ:\n%+v\n%+v", seed, i, c.Op, got, want)
			}
		}
		if accepted < 300 {
			t.Fatalf("seed %d: only %d of 1500 commands accepted: the generator is too harsh", seed, accepted)
		}
	}
}

// TestDeltaBringsStateForward: for random histories, the delta between any two indexes,
// taken from the change log and sent as JSON, brings the earlier state to the later one.
func TestDeltaBringsStateForward(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	f := NewFSM(newSeqAllocator, nil)
	doc := config.DefaultDocument()
	doc.Regions = []string{"a", "b", "c"}
	doc.NameServers.Mode, doc.NameServers.Fleet = "stateful", 64
	if err := applyLog(t, f, 1, &state.Command{Op: state.OpApplyDocument, Document: &doc}); err != nil {
		t.Fatal(err)
	}
	states := []*state.State{f.State()}
	for i := uint64(2); len(states) < 200; i++ {
		if applyLog(t, f, i, randomCommand(rng)) == nil {
			states = append(states, f.State())
		}
	}
	for range 300 {
		a, b := rng.IntN(len(states)), rng.IntN(len(states))
		if a > b {
			a, b = b, a
		}
		from, to := states[a], states[b]
		d := f.delta(from.Index, to)
		if d == nil {
			t.Fatalf("no delta from %d", from.Index)
		}
		var sent state.Delta
		if b, err := json.Marshal(d); err != nil || json.Unmarshal(b, &sent) != nil {
			t.Fatalf("delta JSON: %v", err)
		}
		e, err := from.ApplyDelta(&sent)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := roundTrip(t, e.Next), roundTrip(t, to); got != want {
			t.Fatalf("delta %d -> %d:\n%s\nwant\n%s", from.Index, to.Index, got, want)
		}
		if ch := f.Changes(from.Index, to); ch.Full || (a != b && ch.Empty()) {
			t.Fatalf("changes %d -> %d: %+v", from.Index, to.Index, ch)
		}
	}
}
