package location

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
)

// protocolZones returns a parent zone that delegates child.p.test and hosts it too (data of
// the parent's own at the child's apex would never be served: the configuration refuses it,
// see served_test.go), a DS at each cut, and a zone whose name servers' addresses fill a
// small response.
func protocolZones() []config.Zone {
	set := func(name string, t config.RecordType, values ...string) config.RecordSet {
		rs := config.RecordSet{Name: name, Type: t}
		for _, v := range values {
			rs.Records = append(rs.Records, config.Record{Value: v})
		}
		return rs
	}
	const digest = "E06D44B80B8F1D39A95C0B0D7C65D08458E880409BBC683457104237C7F8EC8D"
	parent := config.DefaultZone()
	parent.Name = "p.test."
	parent.NameServers = []string{"ns1.p.test."}
	parent.RecordSets = []config.RecordSet{
		set("ns1", config.TypeA, "192.0.2.53"),
		set("txt", config.TypeTXT, "  padded  "),
		set("tochild", config.TypeCNAME, "www.child.p.test."),
		set("tochildapex", config.TypeCNAME, "child.p.test."),
		set("child", config.TypeNS, "ns1.child.p.test."),
		set("child", config.TypeDS, "2371 13 2 "+digest),
		set("ns1.child", config.TypeA, "192.0.2.251"),
		set("deleg", config.TypeNS, "ns.elsewhere.test."),
		set("deleg", config.TypeDS, "60485 13 2 "+digest),
	}
	child := config.DefaultZone()
	child.Name = "child.p.test."
	child.NameServers = []string{"ns1.child.p.test."}
	child.RecordSets = []config.RecordSet{
		set("@", config.TypeA, "192.0.2.100"),
		set("www", config.TypeA, "192.0.2.101"),
		set("ns1", config.TypeA, "192.0.2.102"),
	}
	glue := config.DefaultZone()
	glue.Name = "glue.test."
	for _, l := range "abcdefghijkl" {
		ns := string(l) + ".ns.glue.test."
		glue.NameServers = append(glue.NameServers, ns)
		glue.RecordSets = append(glue.RecordSets,
			set(ns, config.TypeA, fmt.Sprintf("192.0.2.%d", l-'a'+1)),
			set(ns, config.TypeAAAA, fmt.Sprintf("2001:db8::%d", l-'a'+1)))
	}
	return []config.Zone{parent, child, glue}
}

// ask sends m to s without sockets (UDP unless tcp) and returns the response.
func ask(t *testing.T, s *Server, m *dns.Msg, tcp bool) *dns.Msg {
	t.Helper()
	return askRaw(t, s, packed(t, m), tcp)
}

// askRaw sends raw query bytes to s and returns the response, failing when there is none.
func askRaw(t *testing.T, s *Server, b []byte, tcp bool) *dns.Msg {
	t.Helper()
	out := s.Respond(b, Request{TCP: tcp, NameServer: -1})
	if out == nil {
		t.Fatalf("no response to %x", b)
	}
	var r dns.Msg
	if err := r.Unpack(out); err != nil {
		t.Fatalf("response does not unpack: %v", err)
	}
	return &r
}

// protocolServer returns a server (without sockets) of protocolZones.
func protocolServer(t *testing.T) *Server {
	t.Helper()
	s, err := New(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSnapshot(mustSnapshot(t, protocolZones(), nil))
	return s
}

// TestCNAMEIntoHostedChild: a CNAME into a child zone the location hosts restarts the lookup
// in the child (RFC 1034 §4.3.2), and the child's apex is answered from the child.
func TestCNAMEIntoHostedChild(t *testing.T) {
	s := protocolServer(t)
	for _, c := range []struct {
		name  string
		want  []string
		rcode int
	}{
		{"tochild.p.test.", []string{"www.child.p.test.", "192.0.2.101"}, dns.RcodeSuccess},
		{"tochildapex.p.test.", []string{"child.p.test.", "192.0.2.100"}, dns.RcodeSuccess},
		{"child.p.test.", []string{"192.0.2.100"}, dns.RcodeSuccess},
	} {
		r := ask(t, s, query(c.name, dns.TypeA, 0), false)
		if got := values(r); r.Rcode != c.rcode || !slices.Equal(got, c.want) || !r.Authoritative {
			t.Errorf("%s A: rcode %s AA %v answer %v, want %s AA %v", c.name, dns.RcodeToString[r.Rcode], r.Authoritative, got, dns.RcodeToString[c.rcode], c.want)
		}
	}
}

// TestTXTAsWritten: a TXT value is served byte for byte, its spaces too.
func TestTXTAsWritten(t *testing.T) {
	s := protocolServer(t)
	r := ask(t, s, query("txt.p.test.", dns.TypeTXT, 0), false)
	if len(r.Answer) != 1 {
		t.Fatalf("answer %v", r.Answer)
	}
	if got := r.Answer[0].(*dns.TXT).Txt; !slices.Equal(got, []string{"  padded  "}) {
		t.Errorf("TXT strings %q, want [\"  padded  \"]", got)
	}
}

// TestMalformedSections: a question without its type and class, and sections holding fewer
// records than the header counts, are format errors (RFC 1035 §4.1), not questions answered.
func TestMalformedSections(t *testing.T) {
	s := protocolServer(t)
	good := packed(t, query("txt.p.test.", dns.TypeTXT, 0))
	question := good[12:]
	header := func(qd, an, ar uint16) []byte {
		b := slices.Clone(good[:12])
		binary.BigEndian.PutUint16(b[4:], qd)
		binary.BigEndian.PutUint16(b[6:], an)
		binary.BigEndian.PutUint16(b[10:], ar)
		return b
	}
	for name, b := range map[string][]byte{
		"question without type and class": append(header(1, 0, 0), question[:len(question)-4]...),
		"question without class":          append(header(1, 0, 0), question[:len(question)-2]...),
		"additional count 1, none there":  append(header(1, 0, 1), question...),
		"additional record cut short":     append(append(header(1, 0, 1), question...), 0, 0, 41),
		"answer count 1, none there":      append(header(1, 1, 0), question...),
	} {
		r := askRaw(t, s, b, false)
		if r.Rcode != dns.RcodeFormatError || len(r.Answer) != 0 || !r.RecursionDesired {
			t.Errorf("%s: rcode %s, %d answers, RD %v; want FORMERR with RD copied", name, dns.RcodeToString[r.Rcode], len(r.Answer), r.RecursionDesired)
		}
	}
}

// TestRDCopiedForEveryOpcode: RD is copied into the response whatever the opcode (RFC 1035
// §4.1.1).
func TestRDCopiedForEveryOpcode(t *testing.T) {
	s := protocolServer(t)
	for _, op := range []int{dns.OpcodeQuery, dns.OpcodeIQuery, dns.OpcodeStatus, dns.OpcodeNotify, dns.OpcodeUpdate, 15} {
		for _, rd := range []bool{true, false} {
			q := query("txt.p.test.", dns.TypeTXT, 0)
			q.Opcode, q.RecursionDesired = op, rd
			if r := ask(t, s, q, false); r.RecursionDesired != rd {
				t.Errorf("opcode %d, RD %v: response RD %v", op, rd, r.RecursionDesired)
			}
		}
	}
}

// TestAdditionalLeftOutNotTruncated: a response too large only because of the addresses of
// its name servers leaves some of them out and is not truncated (RFC 2181 §9); over TCP it
// holds them all.
func TestAdditionalLeftOutNotTruncated(t *testing.T) {
	s := protocolServer(t)
	q := packed(t, query("glue.test.", dns.TypeNS, 0))
	out := s.Respond(q, Request{NameServer: -1})
	var r dns.Msg
	if err := r.Unpack(out); err != nil {
		t.Fatal(err)
	}
	if len(out) > dns.MinMsgSize || r.Truncated || len(r.Answer) != 12 || len(r.Extra) == 0 || len(r.Extra) >= 24 {
		t.Errorf("UDP: %d bytes, TC %v, %d NS, %d additional; want at most 512 bytes, no TC, 12 NS, some but not all 24 addresses",
			len(out), r.Truncated, len(r.Answer), len(r.Extra))
	}
	if tcp := ask(t, s, query("glue.test.", dns.TypeNS, 0), true); tcp.Truncated || len(tcp.Answer) != 12 || len(tcp.Extra) != 24 {
		t.Errorf("TCP: TC %v, %d NS, %d additional; want 12 NS and 24 addresses", tcp.Truncated, len(tcp.Answer), len(tcp.Extra))
	}
}

// TestDSAtCut: DS at a zone cut is answered by the parent (RFC 4035 §3.1.4.1), authoritatively
// and not as a referral, also when the location hosts the child zone.
func TestDSAtCut(t *testing.T) {
	s := protocolServer(t)
	for name, tag := range map[string]uint16{"deleg.p.test.": 60485, "child.p.test.": 2371} {
		r := ask(t, s, query(name, dns.TypeDS, 0), false)
		if r.Rcode != dns.RcodeSuccess || !r.Authoritative || len(r.Answer) != 1 {
			t.Errorf("%s DS: rcode %s AA %v answer %v authority %v", name, dns.RcodeToString[r.Rcode], r.Authoritative, r.Answer, r.Ns)
			continue
		}
		if ds, ok := r.Answer[0].(*dns.DS); !ok || ds.KeyTag != tag || !strings.EqualFold(ds.Hdr.Name, name) {
			t.Errorf("%s DS: answer %v, want key tag %d", name, r.Answer[0], tag)
		}
	}
	// Below the cut it stays a referral.
	r := ask(t, s, query("x.deleg.p.test.", dns.TypeDS, 0), false)
	if r.Authoritative || len(r.Ns) != 1 || r.Ns[0].Header().Rrtype != dns.TypeNS {
		t.Errorf("x.deleg DS: AA %v authority %v, want a referral", r.Authoritative, r.Ns)
	}
}
