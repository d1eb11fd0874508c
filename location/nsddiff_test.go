package location

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/config/rdata"
	"github.com/vigil-dns/vigil/location/nsdtest"
)

// TestDifferentialNSD serves the zones of testdata/nsddiff.yaml from a location and from
// Debian's NSD, sends both the same queries (every name of the zones and more, by every type,
// in case variants, with EDNS variants, over UDP and TCP, and malformed ones) and compares the
// responses field by field. Every difference must be one that knownDifferences documents with
// its reason (docs/dns.md lists them); every documented difference must still show.
func TestDifferentialNSD(t *testing.T) {
	if nsdtest.Binary() == "" {
		t.Skip("NSD is not installed (Debian: apt-get install nsd; .ci/run installs it): no differential test")
	}
	data, err := os.ReadFile("testdata/nsddiff.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := config.Parse(data)
	if err != nil {
		t.Fatalf("testdata/nsddiff.yaml: %v", err)
	}
	files := map[string]string{}
	for i := range doc.Zones {
		files[doc.Zones[i].Name] = nsdZoneFile(t, &doc.Zones[i])
	}
	nsd := nsdtest.Start(t, files)
	s := startServer(t, Config{})
	s.SetSnapshot(mustSnapshot(t, doc.Zones, nil))
	vigil := s.Addr()

	queries := diffQueries(doc)
	if len(queries) < 500 {
		t.Fatalf("only %d queries generated", len(queries))
	}
	known := knownDifferences()
	used := make([]int, len(known))
	unexplained := map[string][]string{} // field → the queries it differs in
	identical := 0
	for i, q := range queries {
		id := uint16(i)
		wire := q.wire(id)
		a := exchangeRaw(t, q.tcp, vigil, wire)
		b := exchangeRaw(t, q.tcp, nsd, wire)
		fields := diffFields(a, b)
		if len(fields) == 0 {
			identical++
		}
		for _, field := range fields {
			k := slices.IndexFunc(known, func(d difference) bool { return d.field == field && d.applies(q, a, b) })
			if k >= 0 {
				used[k]++
				continue
			}
			if len(unexplained[field]) < 3 || q.kind == "malformed" {
				t.Errorf("%s: %s differs\n--- vigil\n%s\n--- nsd\n%s", q, field, a, b)
			}
			unexplained[field] = append(unexplained[field], q.String())
		}
	}
	for field, qs := range unexplained {
		t.Errorf("%s differs, undocumented, in %d responses: %s", field, len(qs), strings.Join(qs[:min(len(qs), 40)], "; "))
	}
	for k, d := range known {
		t.Logf("documented difference %q (%s): %d responses", d.name, d.field, used[k])
		if used[k] == 0 {
			t.Errorf("documented difference %q no longer shows: take it out of knownDifferences and docs/dns.md", d.name)
		}
	}
	t.Logf("%d queries compared: %d responses identical in every field, the others differ only as documented", len(queries), identical)
}

// nsdZoneFile writes zone z in the zone file format NSD reads, from the values as the
// configuration holds them, so that NSD parses them itself: only a TXT value written unquoted
// is quoted (in 255-byte strings), and an alias is written out as its target's records.
func nsdZoneFile(t *testing.T, z *config.Zone) string {
	t.Helper()
	var b strings.Builder
	soa := z.SOA
	fmt.Fprintf(&b, "$ORIGIN %s\n@ %d IN SOA %s %s %d %d %d %d %d\n", z.Name, soa.TTL, soa.MName, soa.RName,
		soa.Serial, soa.Refresh, soa.Retry, soa.Expire, soa.Minimum)
	for _, ns := range z.NameServers {
		fmt.Fprintf(&b, "@ %d IN NS %s\n", nsTTL, ns)
	}
	for _, rs := range z.RecordSets {
		src := rs
		if rs.Alias != "" {
			target, ok := z.RecordSet(rs.Alias, rs.Type)
			if !ok {
				t.Fatalf("alias %s %s: no target", rs.Name, rs.Type)
			}
			src = *target
		}
		for _, r := range src.Records {
			v := r.Value
			if rs.Type == config.TypeTXT && !strings.HasPrefix(v, `"`) {
				var parts []string
				for len(v) > 0 {
					n := min(len(v), rdata.MaxString)
					parts = append(parts, rdata.Quote(v[:n]))
					v = v[n:]
				}
				v = strings.Join(parts, " ")
			}
			fmt.Fprintf(&b, "%s %d IN %s %s\n", rs.Name, src.EffectiveTTL(z.TTL), rs.Type, v)
		}
	}
	return b.String()
}

// exchangeRaw sends a query in wire form over UDP or TCP and returns the response, read
// field by field; a server that does not answer within a second (twice over UDP) gives an
// empty view.
func exchangeRaw(t *testing.T, tcp bool, addr netip.AddrPort, wire []byte) view {
	t.Helper()
	network := "udp"
	if tcp {
		network = "tcp"
	}
	buf := make([]byte, 65535)
	for range 2 {
		conn, err := net.DialTimeout(network, addr.String(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(time.Second))
		out := wire
		if tcp {
			out = append([]byte{byte(len(wire) >> 8), byte(len(wire))}, wire...)
		}
		if _, err := conn.Write(out); err != nil {
			conn.Close()
			t.Fatal(err)
		}
		n, err := readResponse(conn, tcp, buf)
		conn.Close()
		if err == nil {
			return viewOf(buf[:n])
		}
		if tcp {
			break
		}
	}
	return view{}
}

// readResponse reads one DNS message from conn: a datagram, or a length-prefixed message.
func readResponse(conn net.Conn, tcp bool, buf []byte) (int, error) {
	if !tcp {
		return conn.Read(buf)
	}
	var l [2]byte
	if _, err := readFull(conn, l[:]); err != nil {
		return 0, err
	}
	return readFull(conn, buf[:int(l[0])<<8|int(l[1])])
}

func readFull(conn net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := conn.Read(b[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// view is a response as the differential test compares it, field by field.
type view struct {
	ok         bool   // a response came
	unpacked   string // the error when it did not unpack
	header     map[string]string
	question   []string
	answer     []string
	authority  []string
	additional []string
	opt        string
}

// viewOf reads a response in wire form.
func viewOf(b []byte) view {
	var m dns.Msg
	v := view{ok: true}
	if err := m.Unpack(b); err != nil {
		v.unpacked = err.Error()
		return v
	}
	v.header = map[string]string{
		"id": fmt.Sprint(m.Id), "qr": fmt.Sprint(m.Response), "opcode": fmt.Sprint(m.Opcode),
		"aa": fmt.Sprint(m.Authoritative), "tc": fmt.Sprint(m.Truncated), "rd": fmt.Sprint(m.RecursionDesired),
		"ra": fmt.Sprint(m.RecursionAvailable), "z": fmt.Sprint(m.Zero), "ad": fmt.Sprint(m.AuthenticatedData),
		"cd": fmt.Sprint(m.CheckingDisabled), "rcode": dns.RcodeToString[m.Rcode],
	}
	for _, q := range m.Question {
		v.question = append(v.question, q.String())
	}
	v.answer = rrStrings(m.Answer)
	v.authority = rrStrings(m.Ns)
	var extra []dns.RR
	for _, rr := range m.Extra {
		if o, ok := rr.(*dns.OPT); ok {
			v.opt = fmt.Sprintf("udp=%d do=%v version=%d options=%v", o.UDPSize(), o.Do(), o.Version(), o.Option)
			continue
		}
		extra = append(extra, rr)
	}
	v.additional = rrStrings(extra)
	return v
}

// rrStrings returns rrs in presentation form, sorted: the order of records within a record
// set carries no meaning (RFC 2181 §5).
func rrStrings(rrs []dns.RR) []string {
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		out = append(out, rr.String())
	}
	slices.Sort(out)
	return out
}

// diffFields returns the names of the fields in which a and b differ.
func diffFields(a, b view) []string {
	if a.ok != b.ok {
		return []string{"response"}
	}
	if a.unpacked != b.unpacked {
		return []string{"unpack"}
	}
	var out []string
	for _, f := range []string{"id", "qr", "opcode", "aa", "tc", "rd", "ra", "z", "ad", "cd", "rcode"} {
		if a.header[f] != b.header[f] {
			out = append(out, f)
		}
	}
	for _, s := range []struct {
		name string
		a, b []string
	}{{"question", a.question, b.question}, {"answer", a.answer, b.answer}, {"authority", a.authority, b.authority}, {"additional", a.additional, b.additional}} {
		if !slices.Equal(s.a, s.b) {
			out = append(out, s.name)
		}
	}
	if a.opt != b.opt {
		out = append(out, "opt")
	}
	return out
}

// String writes v for a failure message.
func (v view) String() string {
	if !v.ok {
		return "(no response)"
	}
	if v.unpacked != "" {
		return "(does not unpack: " + v.unpacked + ")"
	}
	var b strings.Builder
	for _, f := range []string{"id", "qr", "opcode", "aa", "tc", "rd", "ra", "z", "ad", "cd", "rcode"} {
		fmt.Fprintf(&b, "%s=%s ", f, v.header[f])
	}
	fmt.Fprintf(&b, "\nopt: %s\nquestion: %q\nanswer: %q\nauthority: %q\nadditional: %q", v.opt, v.question, v.answer, v.authority, v.additional)
	return b.String()
}
