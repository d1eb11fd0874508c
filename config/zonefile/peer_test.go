package zonefile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// malformedZone has an error on each line listed in its comment, of the kinds zone files
// have: bad addresses, numbers, names, text, TTLs and types, a hexadecimal digest, a quoted
// string not closed.
const malformedZone = `$TTL 300
@     IN SOA ns1 hostmaster 1 7200 900 1209600 300
@     IN NS ns1
ns1   IN A 192.0.2.1
www   IN A   192.0.2.300
mail  IN MX  ten mail.example.net.
ok    IN A   192.0.2.1
v6    IN AAAA 2001:db8::zz
srv   IN SRV 1 2 port t
txt   IN TXT "unclosed
caa   IN CAA 0 issue
ds    IN DS 1 13 2 XYZ
bad..name IN A 192.0.2.9
ttl   1x IN A 192.0.2.10
typ   IN FOO 1
after IN A 192.0.2.11
multi IN MX (
        10 )
last  IN A 192.0.2.256
`

// peerTool returns the path of a program in PATH or /usr/sbin, or "".
func peerTool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); exec.Command("test", "-x", p).Run() == nil {
		return p
	}
	return ""
}

// errorLines returns the lines, in order and once each, that a checker's output names with
// pattern (its first group the line).
func errorLines(out []byte, pattern string) []int {
	var lines []int
	for _, m := range regexp.MustCompile(pattern).FindAllSubmatch(out, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		if !slices.Contains(lines, n) {
			lines = append(lines, n)
		}
	}
	slices.Sort(lines)
	return lines
}

// TestErrorsAsKnotAndNSD: the import reports an error at every line of a malformed zone
// file where Knot's kzonecheck does, and no other, and at every line where NSD's
// nsd-checkzone does (NSD reads a quoted string across lines, and takes some values the
// others refuse, so it names fewer).
func TestErrorsAsKnotAndNSD(t *testing.T) {
	knot, nsd := peerTool("kzonecheck"), peerTool("nsd-checkzone")
	if knot == "" || nsd == "" {
		t.Skip("kzonecheck or nsd-checkzone is not installed (Debian: knot-dnssecutils, nsd; .ci/run installs them)")
	}
	file := filepath.Join(t.TempDir(), "malformed.zone")
	if err := os.WriteFile(file, []byte(malformedZone), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Import(file, []byte(malformedZone), Options{Zone: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	var ours []int
	for _, p := range res.Errors {
		if !slices.Contains(ours, p.Line) {
			ours = append(ours, p.Line)
		}
	}
	slices.Sort(ours)

	out, _ := exec.Command(knot, "-v", "-o", "example.com", file).CombinedOutput()
	knotLines := errorLines(out, `error in zone, file '[^']*', line (\d+) `)
	if len(knotLines) < 10 {
		t.Fatalf("kzonecheck names only %d lines: %s", len(knotLines), out)
	}
	if !slices.Equal(ours, knotLines) {
		t.Errorf("errors at lines %v; Knot's kzonecheck at %v\n%s", ours, knotLines, out)
	}

	out, _ = exec.Command(nsd, "example.com", file).CombinedOutput()
	nsdLines := errorLines(out, `error: [^\n]*?:(\d+): `)
	if len(nsdLines) < 4 {
		t.Fatalf("nsd-checkzone names only %d lines: %s", len(nsdLines), out)
	}
	for _, n := range nsdLines {
		// NSD reads the quoted string of line 10 to the end of the file and names the end.
		if !slices.Contains(ours, n) && n != strings.Count(malformedZone, "\n")+1 {
			t.Errorf("NSD names line %d, the import does not (it names %v)\n%s", n, ours, out)
		}
	}
	t.Logf("lines with errors: import %v, Knot %v, NSD %v", ours, knotLines, nsdLines)
}

// TestSignedZoneFromLDNS: the test zone signed by ldns-signzone (a zone signed beforehand, as
// a signer or provider exports it) imports to the same document as the zone unsigned, and
// each of its DNSSEC records (DNSKEY, RRSIG, NSEC) is listed, at its line, as left out
// because signing is Vigil's own.
func TestSignedZoneFromLDNS(t *testing.T) {
	keygen, signzone := peerTool("ldns-keygen"), peerTool("ldns-signzone")
	if keygen == "" || signzone == "" {
		t.Skip("ldns-keygen or ldns-signzone is not installed (Debian: ldnsutils)")
	}
	dir := t.TempDir()
	unsigned, err := os.ReadFile("testdata/example.com.zone")
	if err != nil {
		t.Fatal(err)
	}
	zone := filepath.Join(dir, "example.com.zone")
	if err := os.WriteFile(zone, unsigned, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(keygen, "-a", "ECDSAP256SHA256", "example.com")
	cmd.Dir = dir
	key, err := cmd.Output()
	if err != nil {
		t.Fatalf("ldns-keygen: %v", err)
	}
	cmd = exec.Command(signzone, "-o", "example.com", zone, strings.TrimSpace(string(key)))
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ldns-signzone: %v\n%s", err, out)
	}
	signed, err := os.ReadFile(zone + ".signed")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Import("z", unsigned, Options{Zone: "example.com"})
	if err != nil || len(want.Errors)+len(want.Omitted) > 0 {
		t.Fatalf("the unsigned zone: %v %v %v", err, want.Errors, want.Omitted)
	}
	got, err := Import("z", signed, Options{Zone: "example.com"})
	if err != nil || len(got.Errors) > 0 {
		t.Fatalf("the signed zone: %v %v", err, got.Errors)
	}
	if g, w := setsOf(got), setsOf(want); !slices.Equal(g, w) || got.Document.Zones[0].SOA != want.Document.Zones[0].SOA {
		t.Errorf("the signed zone imports as\n%s\nthe unsigned one as\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
	// The DNSSEC records of the signed file, by line, as a second reading finds them.
	var lines []int
	for i, l := range strings.Split(string(signed), "\n") {
		if f := strings.Fields(l); len(f) >= 4 && !strings.HasPrefix(l, ";") && slices.ContainsFunc(f[2:4], func(s string) bool {
			return s == "RRSIG" || s == "NSEC" || s == "DNSKEY"
		}) {
			lines = append(lines, i+1)
		}
	}
	var omitted []int
	for _, p := range got.Omitted {
		if !strings.Contains(p.Message, "signing is Vigil's own") {
			t.Errorf("left out for another reason: %s", p)
		}
		omitted = append(omitted, p.Line)
	}
	if len(lines) < 30 || !slices.Equal(omitted, lines) {
		t.Errorf("left out at lines %v; the DNSSEC records are at %v", omitted, lines)
	}
	t.Logf("%d DNSSEC records left out, each at its line; the rest imports as the unsigned zone", len(omitted))
}

// setsOf writes the record sets of an import's zone one a line, each with its TTL and its
// values in order, sorted: the zone whatever order the file wrote it in.
func setsOf(res *Result) []string {
	z := res.Document.Zones[0]
	var out []string
	for _, rs := range z.RecordSets {
		var values []string
		for _, r := range rs.Records {
			values = append(values, r.Value)
		}
		slices.Sort(values)
		out = append(out, fmt.Sprintf("%s %s %d %s", rs.Name, rs.Type, rs.EffectiveTTL(z.TTL), strings.Join(values, " | ")))
	}
	slices.Sort(out)
	return out
}
