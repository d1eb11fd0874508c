package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/location/nsdtest"

	"github.com/vigil-dns/vigil/internal/testproc"
)

// richZone is the zone file of the import tests: every type Vigil serves, TXT with several
// strings, escapes and UTF-8, a wildcard, a delegation with glue and DS, a null MX, an empty
// non-terminal, a name in mixed case and a TTL of 0.
const richZone = "../../config/zonefile/testdata/example.com.zone"

// TestImportZoneFileDifferential: the rich zone file, as NSD prints it (nsd-checkzone -p),
// as Knot writes it (knotc zone-flush) and prints it (knotc zone-read), and as dig prints a
// zone transfer from Knot, imports with nothing left out, validates, is
// applied through the control plane of a running vigil agent, and then every name of the file
// (and a name under its wildcard, below its delegation, an empty non-terminal and a missing
// name), by every type Vigil serves, answers at the agent's location as NSD and Knot, both
// serving the original file, answer: the same rcode, AA flag, answer and authority sections
// (names lower-cased; the SOA serial, which each location sets itself, left out), and the
// same glue in referrals.
func TestImportZoneFileDifferential(t *testing.T) {
	for _, bin := range []string{"nsd-checkzone", "kzonecheck", "knotd", "knotc"} {
		if tool(bin) == "" {
			t.Skipf("%s is not installed (Debian: nsd, knot, knot-dnssecutils; .ci/run installs them)", bin)
		}
	}
	orig, err := os.ReadFile(richZone)
	if err != nil {
		t.Fatal(err)
	}
	const apex = "example.com."
	dir := t.TempDir()
	if out, err := exec.Command(tool("kzonecheck"), "-o", apex, richZone).CombinedOutput(); err != nil {
		t.Fatalf("kzonecheck refuses the test zone: %v\n%s", err, out)
	}
	nsdExport, err := exec.Command(tool("nsd-checkzone"), "-p", apex, richZone).Output()
	if err != nil {
		t.Fatalf("nsd-checkzone -p: %v", err)
	}
	nsd := nsdtest.Start(t, map[string]string{apex: string(orig)})
	knot, knotFlushed, knotRead := startKnot(t, apex, orig)
	exports := map[string][]byte{"nsd": nsdExport, "knot": knotFlushed, "knot-read": knotRead}
	sources := []string{"nsd", "knot", "knot-read"}
	// A zone transfer as dig prints it is a zone file too: the way out of any server or
	// provider that allows AXFR.
	if dig, err := exec.LookPath("dig"); err == nil {
		axfr, err := exec.Command(dig, "-p", strconv.Itoa(int(knot.Port())), "@"+knot.Addr().String(), "AXFR", apex).Output()
		if err != nil || !bytes.Contains(axfr, []byte("SOA")) {
			t.Fatalf("dig AXFR from knotd: %v\n%s", err, axfr)
		}
		exports["axfr"] = axfr
		sources = append(sources, "axfr")
	}

	api, dnsAddr := startAgent(t, dir)
	t.Setenv("VIGIL_TOKEN", agentToken)
	queries := importQueries(t, orig, apex)
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, []byte("regions: [us-east]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, from := range sources {
		file := filepath.Join(dir, from+".zone")
		if err := os.WriteFile(file, exports[from], 0o644); err != nil {
			t.Fatal(err)
		}
		doc := filepath.Join(dir, from+".yaml")
		code, _, errOut := vigilRun("import", "zonefile", "-zone", "example.com", "-o", doc, file)
		if code != 0 {
			t.Fatalf("import of %s's export: exit %d\n%s", from, code, errOut)
		}
		if code, out, errOut := vigilRun("validate", "-f", doc); code != 0 {
			t.Fatalf("validate %s: exit %d\n%s%s", doc, code, out, errOut)
		}
		// Each import is applied to a location that does not serve the zone before.
		if code, out, errOut := vigilRun("apply", "-f", empty, "-server", "http://"+api); code != 0 {
			t.Fatalf("apply %s: exit %d\n%s%s", empty, code, out, errOut)
		}
		waitUntil(t, 30*time.Second, "the location to drop the zone", func() bool {
			r := ask(dnsAddr, apex, dns.TypeSOA)
			return r != nil && r.Rcode == dns.RcodeRefused
		})
		if code, out, errOut := vigilRun("apply", "-f", doc, "-server", "http://"+api); code != 0 {
			t.Fatalf("apply %s: exit %d\n%s%s", doc, code, out, errOut)
		}
		waitUntil(t, 30*time.Second, "the location to serve the document applied", func() bool {
			r := ask(dnsAddr, apex, dns.TypeSOA)
			return r != nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1
		})
		for name, server := range map[string]netip.AddrPort{"nsd": nsd, "knot": knot} {
			differ, answered := 0, 0
			for _, q := range queries {
				want, got := ask(server.String(), q.name, q.qtype), ask(dnsAddr, q.name, q.qtype)
				if want == nil || got == nil {
					t.Fatalf("%s %s: no response from %s (%v) or the location (%v)", q.name, dns.Type(q.qtype), name, want != nil, got != nil)
				}
				if len(want.Answer) > 0 {
					answered++
				}
				if a, b := answerView(want), answerView(got); a != b {
					differ++
					if differ <= 10 {
						t.Errorf("imported from %s's export, %s %s: %s answers\n%s\nthe location answers\n%s", from, q.name, dns.Type(q.qtype), name, a, b)
					}
				}
			}
			if answered < 40 {
				t.Errorf("%s answered only %d of %d questions with records: the differential compares too little", name, answered, len(queries))
			}
			if differ > 0 {
				t.Errorf("imported from %s's export: %d of %d answers differ from %s's", from, differ, len(queries), name)
			} else {
				t.Logf("imported from %s's export: %d answers (%d with records) the same as %s's", from, len(queries), answered, name)
			}
		}
	}
}

// tool returns the path of a program in PATH or /usr/sbin (where Debian puts servers), or
// "" when there is none.
func tool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); fileExists(p) {
		return p
	}
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// startAgent runs a vigil agent with every role in this process, and returns its API and
// DNS addresses; it stops when the test ends.
func startAgent(t *testing.T, dir string) (api, dnsAddr string) {
	t.Helper()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(agentToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	api, dnsAddr = freePort(t), freePort(t)
	args := []string{"-roles", "control,checker,location", "-id", "solo", "-region", "us-east",
		"-data-dir", filepath.Join(dir, "agent"), "-raft-addr", freePort(t), "-api-addr", api, "-bootstrap", "-token-file", tokens,
		"-gossip-bind", freePort(t), "-insecure-gossip", "-dns", dnsAddr, "-http", freePort(t), "-log-level", "error"}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- runAgent(ctx, args, &stdout, &stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("agent exit %d: %s", code, stderr.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("agent did not stop within 20s")
		}
	})
	return api, dnsAddr
}

// startKnot runs Knot DNS serving the zone file text for apex on a free loopback port, with a
// configuration and run directory of its own, and returns its address and the zone as Knot
// writes it (knotc zone-flush) and prints it (knotc zone-read). Knot stops when the test
// ends.
func startKnot(t *testing.T, apex string, text []byte) (addr netip.AddrPort, flushed, read []byte) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "zone.txt"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	port := nsdtest.FreePort(t)
	who := ""
	if u, err := user.Current(); err == nil {
		who = "    user: " + u.Username + "\n"
	}
	conf := filepath.Join(dir, "knot.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, `server:
    rundir: %q
    listen: 127.0.0.1@%d
%sdatabase:
    storage: %q
log:
  - target: stderr
    any: warning
template:
  - id: default
    storage: %q
    zonefile-sync: -1
    journal-content: none
acl:
  - id: loopback
    address: 127.0.0.1
    action: transfer
zone:
  - domain: %s
    file: zone.txt
    acl: loopback
`, dir, port, who, dir, dir, apex), 0o644); err != nil {
		t.Fatal(err)
	}
	log, exited := testproc.Start(t, exec.Command(tool("knotd"), "-c", conf))
	addr = netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
	waitUntil(t, 20*time.Second, "knotd to answer the zone's SOA", func() bool {
		select {
		case <-exited:
			t.Fatalf("knotd exited: %s", log.String())
		default:
		}
		r := ask(addr.String(), apex, dns.TypeSOA)
		return r != nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) == 1
	})
	out := filepath.Join(dir, "flushed")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(tool("knotc"), "-c", conf, "zone-flush", apex, "+outdir", out).CombinedOutput(); err != nil {
		t.Fatalf("knotc zone-flush: %v\n%s", err, b)
	}
	waitUntil(t, 10*time.Second, "knotd to write the zone", func() bool {
		matches, _ := filepath.Glob(filepath.Join(out, "*"))
		if len(matches) != 1 {
			return false
		}
		b, err := os.ReadFile(matches[0])
		flushed = b
		return err == nil && bytes.Contains(b, []byte("SOA"))
	})
	read, err := exec.Command(tool("knotc"), "-c", conf, "zone-read", apex).Output()
	if err != nil {
		t.Fatalf("knotc zone-read: %v", err)
	}
	// zone-read starts each line with the zone's name in brackets; the rest is a zone file's.
	read = regexp.MustCompile(`(?m)^\[[^]]*\] `).ReplaceAll(read, nil)
	return addr, flushed, read
}

// importQuery is one question of the differential.
type importQuery struct {
	name  string
	qtype uint16
}

// importQueries returns the questions of the differential: every name of the zone file, a
// name under its wildcard, below its delegation, an empty non-terminal and a missing name,
// each by every type Vigil serves and SOA.
func importQueries(t *testing.T, text []byte, apex string) []importQuery {
	t.Helper()
	names := map[string]bool{}
	zp := dns.NewZoneParser(bytes.NewReader(text), apex, "")
	for rr, ok := zp.Next(); ok; rr, ok = zp.Next() {
		names[strings.ToLower(rr.Header().Name)] = true
	}
	if err := zp.Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"anything.wild." + apex, "x.sub." + apex, "b.c." + apex, "missing." + apex, "MiXeD." + apex} {
		names[n] = true
	}
	var qs []importQuery
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range names {
			if !yield(n) {
				return
			}
		}
	}) {
		for _, qt := range []uint16{dns.TypeA, dns.TypeAAAA, dns.TypeCNAME, dns.TypeTXT, dns.TypeMX, dns.TypeNS,
			dns.TypeSRV, dns.TypeCAA, dns.TypePTR, dns.TypeDS, dns.TypeSOA} {
			qs = append(qs, importQuery{n, qt})
		}
	}
	return qs
}

// ask sends one question over UDP, again over TCP when the answer is truncated; nil when no
// answer comes.
func ask(addr, name string, qtype uint16) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.RecursionDesired = false
	for _, network := range []string{"udp", "tcp"} {
		c := &dns.Client{Net: network, Timeout: 3 * time.Second}
		var r *dns.Msg
		var err error
		for range 3 {
			if r, _, err = c.Exchange(m, addr); err == nil {
				break
			}
		}
		if err != nil {
			return nil
		}
		if !r.Truncated {
			return r
		}
	}
	return nil
}

// answerView writes what the differential compares of a response: its rcode and AA flag,
// its answer and authority sections, and the addresses in the additional section of a
// referral (its glue), each section sorted, names lower-cased, the SOA serial left out.
func answerView(r *dns.Msg) string {
	if r == nil {
		return "no response"
	}
	section := func(rrs []dns.RR, only func(dns.RR) bool) string {
		var out []string
		for _, rr := range rrs {
			if only != nil && !only(rr) {
				continue
			}
			rr = dns.Copy(rr)
			if soa, ok := rr.(*dns.SOA); ok {
				soa.Serial = 0
			}
			s := rr.String()
			if _, txt := rr.(*dns.TXT); !txt {
				s = strings.ToLower(s)
			} else {
				h := rr.Header()
				s = strings.ToLower(h.String()) + strings.TrimPrefix(s, h.String())
			}
			out = append(out, s)
		}
		slices.Sort(out)
		return strings.Join(out, "\n  ")
	}
	referral := !r.Authoritative && len(r.Answer) == 0 && len(r.Ns) > 0
	glue := func(rr dns.RR) bool {
		t := rr.Header().Rrtype
		return referral && (t == dns.TypeA || t == dns.TypeAAAA)
	}
	return fmt.Sprintf("rcode %s aa %v\nanswer:\n  %s\nauthority:\n  %s\nglue:\n  %s", dns.RcodeToString[r.Rcode], r.Authoritative,
		section(r.Answer, nil), section(r.Ns, nil), section(r.Extra, glue))
}

// vigil import zonefile's exit status: 0 for the whole zone, 1 with the document written
// when something is left out, 1 without one for a malformed file, 2 for usage; standard
// input with -.
func TestImportZonefileExitStatus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	whole := write("whole.zone", "$TTL 60\n@ NS ns.example.net.\nwww A 192.0.2.1\n")
	partial := write("partial.zone", "$TTL 60\nwww A 192.0.2.1\nwww HINFO a b\n")
	broken := write("broken.zone", "$TTL 60\nwww A 192.0.2.300\nmx MX x y\n")
	out := filepath.Join(dir, "out.yaml")
	for _, c := range []struct {
		args    []string
		code    int
		written bool
		stderr  string
	}{
		{[]string{"-zone", "example.com", "-o", out, whole}, 0, true, "example.com.: 2 records in 2 record sets\n"},
		{[]string{"-zone", "example.com", "-o", out, partial}, 1, true, "partial.zone:3: www.example.com. HINFO left out"},
		{[]string{"-zone", "example.com", "-o", out, broken}, 1, false, "broken.zone:3: bad MX Pref"},
		{[]string{"-zone", "example.com", "-o", out, filepath.Join(dir, "missing.zone")}, 1, false, "no such file"},
		{[]string{"-zone", "bad..name", "-o", out, whole}, 2, false, "invalid zone name"},
		{[]string{"-o", out, whole}, 2, false, "name the zone with -zone"},
		{[]string{"-zone", "example.com", whole, partial}, 2, false, "give one zone file"},
		{[]string{"-zone", "example.com", "-nope", whole}, 2, false, "flag provided but not defined"},
	} {
		_ = os.Remove(out)
		code, stdout, stderr := vigilRun(append([]string{"import", "zonefile"}, c.args...)...)
		_, err := os.Stat(out)
		if code != c.code || (err == nil) != c.written || !strings.Contains(stderr, c.stderr) || stdout != "" {
			t.Errorf("vigil import zonefile %s: exit %d, written %v, stdout %q, stderr %q; want exit %d, written %v, stderr with %q",
				strings.Join(c.args, " "), code, err == nil, stdout, stderr, c.code, c.written, c.stderr)
		}
		if broken := strings.Contains(strings.Join(c.args, " "), "broken"); broken && !(strings.Contains(stderr, "broken.zone:2: bad A A") && strings.Contains(stderr, "broken.zone:3: bad MX")) {
			t.Errorf("the malformed file: want both errors, got %q", stderr)
		}
	}
	code, stdout, stderr := vigilRun("import", "zonefile", "-zone", "example.com", whole)
	if code != 0 || !strings.HasPrefix(stdout, "# Zone example.com.") || !strings.Contains(stdout, "192.0.2.1") {
		t.Errorf("to standard output: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
