package zonefile

import (
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
