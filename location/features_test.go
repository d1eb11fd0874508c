package location

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
)

// featureServer returns a server (without sockets) of one zone, f.test, written as a user
// writes it and validated by the configuration first: wildcards under every routing policy
// with health checks, and apex aliases.
func featureServer(t *testing.T) *Server {
	t.Helper()
	doc, err := config.Parse([]byte(`
regions: [us-east, eu-west, sa-east]
checks:
  - {id: p, protocol: tcp, target: {host: 192.0.2.200, port: 443}}
  - {id: s, protocol: tcp, target: {host: 192.0.2.201, port: 443}}
  - {id: m1, protocol: tcp, target: {host: 192.0.2.202, port: 443}}
  - {id: m2, protocol: tcp, target: {host: 192.0.2.203, port: 443}}
zones:
  - name: f.test
    name_servers: [ns1.f.test.]
    record_sets:
      - {name: ns1, type: A, records: [{value: 192.0.2.53}]}
      - {name: "*.fo", type: A, policy: failover, records: [{value: 192.0.2.1, health_check: p, role: primary}, {value: 192.0.2.2, health_check: s, role: secondary}]}
      - {name: "*.wt", type: A, policy: weighted, records: [{value: 192.0.2.11, health_check: m1, weight: 1}, {value: 192.0.2.12, health_check: m2, weight: 1}]}
      - {name: "*.mv", type: A, policy: multivalue, records: [{value: 192.0.2.21, health_check: m1}, {value: 192.0.2.22, health_check: m2}]}
      - {name: "*.cn", type: CNAME, policy: failover, records: [{value: a.fo.f.test, health_check: p, role: primary}, {value: www.f.test, health_check: s, role: secondary}]}
      - {name: www, type: A, policy: failover, records: [{value: 192.0.2.31, health_check: p, role: primary}, {value: 192.0.2.32, health_check: s, role: secondary}]}
      - {name: "@", type: A, alias: www}
      - {name: chained, type: A, alias: "@"}
      - {name: "@", type: MX, records: [{value: 10 mail.f.test.}]}
      - {name: mail, type: A, records: [{value: 192.0.2.25}]}
      - {name: _imap._tcp, type: SRV, records: [{value: 0 1 993 mail.f.test.}]}
      - {name: zero, type: A, ttl: 0, records: [{value: 192.0.2.40}]}
`))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSnapshot(mustSnapshot(t, doc.Zones, nil))
	return s
}

// seenAnswers asks name/qtype n times and returns each answer seen (values sorted, joined),
// checking that every record is owned by name.
func seenAnswers(t *testing.T, s *Server, name string, qtype uint16, n int) []string {
	t.Helper()
	seen := map[string]bool{}
	for range n {
		r := ask(t, s, query(name, qtype, 0), false)
		if r.Rcode != dns.RcodeSuccess || !r.Authoritative {
			t.Fatalf("%s: rcode %s AA %v", name, dns.RcodeToString[r.Rcode], r.Authoritative)
		}
		if len(r.Answer) > 0 && r.Answer[0].Header().Name != name {
			t.Errorf("%s: answer owned by %s", name, r.Answer[0].Header().Name)
		}
		v := values(r)
		slices.Sort(v)
		seen[strings.Join(v, " ")] = true
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestWildcardPolicies: a wildcard answers any name below it that the zone does not hold, owned
// by that name, chosen by its routing policy from the verdicts of its health checks.
func TestWildcardPolicies(t *testing.T) {
	s := featureServer(t)
	for _, c := range []struct {
		verdicts map[string]bool
		name     string
		want     []string
	}{
		{nil, "a.fo.f.test.", []string{"192.0.2.1"}},
		{map[string]bool{"p": false}, "b.fo.f.test.", []string{"192.0.2.2"}},
		{map[string]bool{"p": false, "s": false}, "x.y.fo.f.test.", []string{"192.0.2.1"}}, // last resort
		{map[string]bool{"m1": false}, "a.wt.f.test.", []string{"192.0.2.12"}},
		{nil, "a.wt.f.test.", []string{"192.0.2.11", "192.0.2.12"}},
		{nil, "a.mv.f.test.", []string{"192.0.2.21 192.0.2.22"}},
		{map[string]bool{"m2": false}, "a.mv.f.test.", []string{"192.0.2.21"}},
		{nil, "q.cn.f.test.", []string{"192.0.2.1 a.fo.f.test."}},
		{map[string]bool{"p": false}, "q.cn.f.test.", []string{"192.0.2.32 www.f.test."}},
	} {
		s.SetVerdicts(c.verdicts)
		if got := seenAnswers(t, s, c.name, dns.TypeA, 40); !slices.Equal(got, c.want) {
			t.Errorf("%v %s: answers %q, want %q", c.verdicts, c.name, got, c.want)
		}
	}
	// The wildcard's own name and the names it does not cover.
	s.SetVerdicts(nil)
	if r := ask(t, s, query("fo.f.test.", dns.TypeA, 0), false); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
		t.Errorf("fo.f.test (an empty non-terminal): rcode %s answer %v, want NODATA", dns.RcodeToString[r.Rcode], r.Answer)
	}
	if r := ask(t, s, query("a.nope.f.test.", dns.TypeA, 0), false); r.Rcode != dns.RcodeNameError {
		t.Errorf("a.nope.f.test: rcode %s, want NXDOMAIN", dns.RcodeToString[r.Rcode])
	}
	if r := ask(t, s, query("a.fo.f.test.", dns.TypeTXT, 0), false); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 {
		t.Errorf("a.fo.f.test TXT: rcode %s answer %v, want NODATA with the SOA", dns.RcodeToString[r.Rcode], r.Answer)
	}
}

// TestApexAlias: an alias at the apex answers with its target's records as the target's policy
// chooses them from its health checks, owned by the apex, with the target's TTL; an alias of
// an alias too; the apex without an AAAA record set answers no data for AAAA.
func TestApexAlias(t *testing.T) {
	s := featureServer(t)
	for _, c := range []struct {
		verdicts map[string]bool
		want     string
	}{
		{nil, "192.0.2.31"},
		{map[string]bool{"p": false}, "192.0.2.32"},
		{map[string]bool{"p": true, "s": false}, "192.0.2.31"},
	} {
		s.SetVerdicts(c.verdicts)
		for _, name := range []string{"f.test.", "chained.f.test."} {
			if got := seenAnswers(t, s, name, dns.TypeA, 5); !slices.Equal(got, []string{c.want}) {
				t.Errorf("%v %s A: %q, want %s", c.verdicts, name, got, c.want)
			}
		}
	}
	r := ask(t, s, query("f.test.", dns.TypeA, 0), false)
	if len(r.Answer) != 1 || r.Answer[0].Header().Ttl != 60 {
		t.Errorf("apex A: %v, want one record with www's TTL 60", r.Answer)
	}
	r = ask(t, s, query("f.test.", dns.TypeAAAA, 0), false)
	if r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 || len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeSOA {
		t.Errorf("apex AAAA (www has none): rcode %s answer %v authority %v, want NODATA", dns.RcodeToString[r.Rcode], r.Answer, r.Ns)
	}
}

// TestAdditionalAddresses: MX and SRV answers carry the addresses the zone holds for their
// targets; TTL 0 is served as 0.
func TestAdditionalAddresses(t *testing.T) {
	s := featureServer(t)
	for _, q := range []struct {
		name  string
		qtype uint16
	}{{"f.test.", dns.TypeMX}, {"_imap._tcp.f.test.", dns.TypeSRV}} {
		r := ask(t, s, query(q.name, q.qtype, 0), false)
		if len(r.Answer) != 1 || len(r.Extra) != 1 || fmt.Sprint(values(&dns.Msg{Answer: r.Extra})) != "[192.0.2.25]" {
			t.Errorf("%s %s: answer %v additional %v, want mail's address", q.name, dns.Type(q.qtype), r.Answer, r.Extra)
		}
	}
	r := ask(t, s, query("zero.f.test.", dns.TypeA, 0), false)
	if len(r.Answer) != 1 || r.Answer[0].Header().Ttl != 0 {
		t.Errorf("zero.f.test: %v, want TTL 0", r.Answer)
	}
}
