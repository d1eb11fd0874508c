package location

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
)

// TestCompileRefusesWhatIsNeverServed compiles the zones that config refuses as never served
// as written (config/testdata/invalid/served.yaml, decoded without validation): the location
// refuses them too, each problem named by its record set, instead of compiling them and
// leaving them unanswered. A control without the offending sets compiles.
func TestCompileRefusesWhatIsNeverServed(t *testing.T) {
	data, err := os.ReadFile("../config/testdata/invalid/served.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := config.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	shards := map[string][]NameServer{"example.test.": {{Index: 0, Name: "ns-0.ns.vigil.test."}}}
	_, err = NewSnapshot(doc.Zones, shards)
	if err == nil {
		t.Fatal("NewSnapshot compiled a zone with data below a cut, a glueless delegation and dead aliases")
	}
	for _, want := range []string{
		"record_sets[0].records[1].value: name server ns2.sub.example.test. lies in the delegated zone",
		"record_sets[0].records[2].value: name server ns.example.test. is in this zone but has no address",
		"record_sets[2]: www.sub.example.test. lies below the delegation",
		"record_sets[3]: txt.sub.example.test. lies below the delegation",
		"record_sets[7].alias: alias target nowhere.example.test. has no A record set",
		"record_sets[9].alias: aliases form a loop",
		"record_sets[13].alias: alias target cname.example.test. is a CNAME",
		"record_sets[14].alias: alias target ns1.sub.example.test. is at or below the delegation",
		"record_sets[20]: four.example.test. is delegated (it has an NS record set), so resolvers get a referral there and no location answers its A record set, and no NS record set names it",
		"record_sets[23].alias: five.example.test. is delegated (it has an NS record set)",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q:\n%v", want, err)
		}
	}
	// Patch refuses the zone the same way, keeping none of it.
	snap := mustSnapshot(t, nil, nil).Patch([]ZonePatch{{Apex: "example.test.", Zone: &doc.Zones[0], Shard: shards["example.test."]}})
	if len(snap.Zones()) != 0 || !strings.Contains(snap.failed["example.test."], "lies below the delegation") {
		t.Errorf("Patch: zones %v, failed %q", snap.Zones(), snap.failed["example.test."])
	}

	// The control: the sets that config accepts compile.
	z := doc.Zones[0]
	z.RecordSets = slices.DeleteFunc(slices.Clone(z.RecordSets), func(rs config.RecordSet) bool {
		owner := config.OwnerName(rs.Name, "example.test.")
		return owner != "www.example.test." && owner != "ns1.sub.example.test."
	})
	z.RecordSets = append(z.RecordSets, config.RecordSet{Name: "sub", Type: config.TypeNS, Records: []config.Record{{Value: "ns1.sub.example.test."}}})
	if _, err := NewSnapshot([]config.Zone{z}, shards); err != nil {
		t.Errorf("control: %v", err)
	}
}

// TestServedAsWritten serves config/testdata/valid/served.yaml and asks for what it accepts:
// referrals carry their glue (below the cut, in the zone, as A and AAAA), aliases answer
// through aliases and wildcards, and a name server of the parent zone that is not one of its
// hosted child's answers the parent's referral to the child, while the child's answers the
// child's data.
func TestServedAsWritten(t *testing.T) {
	doc, err := config.Load("../config/testdata/valid/served.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const parentNS, childNS = 1, 2
	shards := map[string][]NameServer{
		"example.test.":       {{Index: parentNS, Name: "ns-1.ns.vigil.test."}},
		"child.example.test.": {{Index: childNS, Name: "ns-2.ns.vigil.test."}},
	}
	s := startServer(t, Config{})
	s.SetSnapshot(mustSnapshot(t, doc.Zones, shards))
	askNS := func(name string, qtype uint16, ns int) *dns.Msg {
		t.Helper()
		out := s.Respond(packed(t, query(name, qtype, 0)), Request{NameServer: ns})
		var r dns.Msg
		if err := r.Unpack(out); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return &r
	}
	extra := func(r *dns.Msg) []string {
		var out []string
		for _, rr := range r.Extra {
			out = append(out, strings.ReplaceAll(rr.String(), "\t", " "))
		}
		slices.Sort(out)
		return out
	}

	r := askNS("www.sub.example.test.", dns.TypeA, parentNS)
	if r.Authoritative || len(r.Answer) != 0 || len(r.Ns) != 3 {
		t.Fatalf("www.sub: want a referral with 3 NS, got\n%v", r)
	}
	got := strings.Join(extra(r), "\n")
	for _, want := range []string{"ns1.sub.example.test. 60 IN A 192.0.2.53", "ns1.sub.example.test. 60 IN AAAA 2001:db8::53"} {
		if !strings.Contains(got, want) {
			t.Errorf("www.sub referral: glue %q missing from\n%s", want, got)
		}
	}

	for _, c := range []struct{ name, want string }{
		{"to-wild.example.test.", "192.0.2.9"},
		{"chain.example.test.", "192.0.2.1"},
		{"ns.example.test.", "192.0.2.1"},
	} {
		r := askNS(c.name, dns.TypeA, parentNS)
		if v := values(r); r.Rcode != dns.RcodeSuccess || !slices.Equal(v, []string{c.want}) || r.Answer[0].Header().Name != c.name {
			t.Errorf("%s A: rcode %s answer %v, want %s owned by the alias", c.name, dns.RcodeToString[r.Rcode], r.Answer, c.want)
		}
	}

	// The parent's name server refers to the child as the parent wrote it; the child's
	// answers from the child.
	r = askNS("ns.child.example.test.", dns.TypeA, parentNS)
	if r.Rcode != dns.RcodeSuccess || r.Authoritative || len(r.Ns) != 1 || r.Ns[0].(*dns.NS).Ns != "ns.child.example.test." || len(r.Extra) != 1 {
		t.Errorf("ns.child on the parent's name server: want the parent's referral with glue, got\n%v", r)
	}
	r = askNS("child.example.test.", dns.TypeDS, parentNS)
	if r.Rcode != dns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 1 {
		t.Errorf("child DS on the parent's name server: want the parent's DS, got\n%v", r)
	}
	r = askNS("ns.child.example.test.", dns.TypeA, childNS)
	if r.Rcode != dns.RcodeSuccess || !r.Authoritative || !slices.Equal(values(r), []string{"192.0.2.54"}) {
		t.Errorf("ns.child on the child's name server: want the child's answer, got\n%v", r)
	}
	// A name server of neither zone refuses.
	if r := askNS("www.example.test.", dns.TypeA, 3); r.Rcode != dns.RcodeRefused {
		t.Errorf("a name server of neither zone: rcode %s, want REFUSED", dns.RcodeToString[r.Rcode])
	}
}
