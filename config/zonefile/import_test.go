package zonefile

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// importText imports text as the zone file "zone.db" of example.com, whose includes are
// files.
func importText(t *testing.T, text string, files map[string]string) *Result {
	t.Helper()
	res, err := Import("zone.db", []byte(text), Options{Zone: "example.com", ReadFile: func(path string) ([]byte, error) {
		if s, ok := files[path]; ok {
			return []byte(s), nil
		}
		return nil, fmt.Errorf("open %s: %w", path, fs.ErrNotExist)
	}})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	return res
}

// want is a problem expected at a line, by a part of its message.
type want struct {
	line int
	has  string
}

// match checks that got holds exactly the problems of wants, in any order.
func match(t *testing.T, what string, got []Problem, wants []want) {
	t.Helper()
	used := make([]bool, len(got))
	for _, w := range wants {
		found := false
		for i, p := range got {
			if !used[i] && p.Line == w.line && strings.Contains(p.Message, w.has) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("%s: no problem at line %d saying %q", what, w.line, w.has)
		}
	}
	for i, p := range got {
		if !used[i] {
			t.Errorf("%s: unexpected %s", what, p)
		}
	}
}

// A malformed file gets every error with its line, not just the first, and no document.
func TestEveryErrorWithItsLine(t *testing.T) {
	text := `$TTL 3600
@ SOA ns1 hostmaster 1 7200 900 1209600 300
www A 192.0.2.300
ok A 192.0.2.1
mx MX ten mail
$GENERATE 1-10 host$ A 192.0.2.$
two SOA ns1 hostmaster (
    1 7200
    x 1209600 300 )
q TXT "unclosed
bad) A 192.0.2.4
$FOO bar
txt TXT "a" (
after A 192.0.2.2
after2 AAAA 192.0.2.1
  A 192.0.2.7
$TTL forever
$ORIGIN a..b
$INCLUDE missing.db
nodata A
`
	res := importText(t, text, nil)
	if res.Document != nil || res.Text != nil {
		t.Errorf("a malformed file made a document")
	}
	match(t, "errors", res.Errors, []want{
		{3, `bad A A: "192.0.2.300"`},
		{5, "bad MX Pref"},
		{6, "$GENERATE is not supported"},
		{9, "bad SOA zone parameter"},
		{10, "quoted string is not closed"},
		{11, "')' without a '('"},
		{12, "unknown directive $FOO"},
		{13, "'(' is not closed"},
		{15, "bad AAAA AAAA"},
		{17, "$TTL forever: not a TTL"},
		{18, "$ORIGIN a..b: not a domain name"},
		{19, "$INCLUDE: open missing.db"},
		{20, "A record without data"},
	})
	for _, p := range res.Errors {
		if p.File != "zone.db" {
			t.Errorf("%s: file %q, want zone.db", p, p.File)
		}
	}
}

// Each record that the document leaves out or changes is listed with its line and why; the
// rest of the zone is imported, and the document is valid.
func TestOmittedListedWithTheirLines(t *testing.T) {
	text := `$ORIGIN example.com.
$TTL 3600
@ SOA ns1 hostmaster 2024 7200 900 1209600 300
@ NS ns1
ns1 A 192.0.2.53
@ DNSKEY 257 3 13 mdsswUyr3DPW132mOi8V9xESWE8jTo0dxCjjnopKl+GqJxpVXckHAeF+KkxLbxILfDLUT0rAK9iUzy1L53eKGQ==
@ RRSIG NS 13 2 3600 20300101000000 20240101000000 12345 example.com. c2lnbmF0dXJl
@ NSEC www NS SOA RRSIG NSEC DNSKEY
@ ZONEMD 2024 1 1 0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000
host HINFO "pc" "linux"
chaos CH TXT "hello"
far.example.net. A 192.0.2.9
sub NS ns.example.net.
x.sub TXT "hidden"
glue.sub A 192.0.2.8
www 300 A 192.0.2.1
www 600 A 192.0.2.2
a\032b A 192.0.2.3
ds-at NS ns.example.net.
ds-at DS 1 13 3 0000
@ CNAME www
dup A 192.0.2.5
dup A 192.0.2.5
nul MX 0 .
nul MX 10 mail.example.net.
@ SOA ns1 hostmaster 2024 7200 900 1209600 300
@ SOA ns1 hostmaster 2025 7200 900 1209600 300
sub SOA ns1 hostmaster 1 7200 900 1209600 300
sub TXT "at the cut"
`
	res := importText(t, text, nil)
	if len(res.Errors) > 0 {
		t.Fatalf("errors: %v", res.Errors)
	}
	match(t, "omitted", res.Omitted, []want{
		{6, "signing is Vigil's own"},
		{7, "signing is Vigil's own"},
		{8, "signing is Vigil's own"},
		{9, "ZONEMD"},
		{10, "does not serve type HINFO"},
		{11, "class CH"},
		{12, "outside zone example.com."},
		{14, "lies below the delegation at sub.example.com."},
		{15, "not glue either"},
		{17, "TTL 600 changed to 300"},
		{18, "does not hold the name"},
		{20, "digest type must be 1 (SHA-1), 2 (SHA-256) or 4 (SHA-384)"},
		{21, "a CNAME cannot be at the zone apex"},
		{24, "a null MX"},
		{27, "the zone's SOA is the one of zone.db:3"},
		{28, "an SOA below the apex starts another zone"},
		{29, "sub.example.com. is delegated"},
	})
	match(t, "notes", res.Notes, []want{
		{3, "SOA serial 2024 not imported"},
		{23, "the same record as zone.db:22"},
		{26, "the same SOA as zone.db:3"},
	})
	if _, err := config.Parse(res.Text); err != nil {
		t.Fatalf("the document does not validate: %v", err)
	}
	z := res.Document.Zones[0]
	got := map[string]int{}
	for _, rs := range z.RecordSets {
		got[rs.Name+" "+string(rs.Type)] = len(rs.Records)
	}
	for key, n := range map[string]int{"@ NS": 1, "ns1 A": 1, "sub NS": 1, "www A": 2, "ds-at NS": 1, "dup A": 1, "nul MX": 1} {
		if got[key] != n {
			t.Errorf("%s: %d records, want %d (the sets: %v)", key, got[key], n, got)
		}
	}
	if len(got) != 7 {
		t.Errorf("the document holds %d sets, want 7: %v", len(got), got)
	}
	if res.Records != 8 {
		t.Errorf("Records = %d, want 8", res.Records)
	}
}

// $INCLUDE reads a file relative to the one that names it, with its own origin, gives back
// the origin and owner afterwards, and stops at loops and at MaxIncludeDepth.
func TestInclude(t *testing.T) {
	files := map[string]string{
		"hosts.db":     "www A 192.0.2.1\n$INCLUDE sub/more.db\n",
		"sub/more.db":  "mail A 192.0.2.2\n",
		"loop.db":      "$INCLUDE loop.db\n",
		"eu/origin.db": "api A 192.0.2.3\n",
	}
	text := `$TTL 60
@ NS ns.example.net.
$INCLUDE hosts.db
 TXT "the apex again"
$INCLUDE eu/origin.db eu
$INCLUDE loop.db
`
	res := importText(t, text, files)
	match(t, "errors", res.Errors, []want{{1, "includes a file that is being read (zone.db -> loop.db)"}})
	if res.Errors[0].File != "loop.db" {
		t.Errorf("the loop is reported in %q, want loop.db", res.Errors[0].File)
	}
	res = importText(t, strings.TrimSuffix(text, "$INCLUDE loop.db\n"), files)
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	var names []string
	for _, rs := range res.Document.Zones[0].RecordSets {
		names = append(names, rs.Name+" "+string(rs.Type))
	}
	if got, want := strings.Join(names, ", "), "@ NS, www A, mail A, @ TXT, api.eu A"; got != want {
		t.Errorf("sets %s, want %s", got, want)
	}
	deep := map[string]string{}
	for i := range MaxIncludeDepth + 1 {
		deep[fmt.Sprintf("d%d.db", i)] = fmt.Sprintf("$INCLUDE d%d.db\n", i+1)
	}
	res = importText(t, "$INCLUDE d0.db\n", deep)
	match(t, "errors", res.Errors, []want{{1, fmt.Sprintf("nests more than %d files deep", MaxIncludeDepth)}})

	res, err := Import("stdin", []byte("$INCLUDE x.db\n"), Options{Zone: "example.com"})
	if err != nil {
		t.Fatal(err)
	}
	match(t, "errors", res.Errors, []want{{1, "read from standard input"}})
	if p := filepath.Join("a", "b"); p != "a/b" {
		t.Skip("paths here are not slash-separated")
	}
}

// TTLs: $TTL with units, a record's own, and without $TTL the last one a record stated.
func TestTTLs(t *testing.T) {
	res := importText(t, `a 1h30m A 192.0.2.1
b A 192.0.2.2
$TTL 1d
c A 192.0.2.3
d 5 A 192.0.2.4
e A 192.0.2.5
`, nil)
	if len(res.Errors) > 0 {
		t.Fatal(res.Errors)
	}
	ttls := map[string]uint32{"a": 5400, "b": 5400, "c": 86400, "d": 5, "e": 86400}
	z := res.Document.Zones[0]
	for _, rs := range z.RecordSets {
		name := rs.Name
		if got := rs.EffectiveTTL(z.TTL); got != ttls[name] {
			t.Errorf("%s: TTL %d, want %d", name, got, ttls[name])
		}
	}
	res = importText(t, "a A 192.0.2.1\n", nil)
	match(t, "errors", res.Errors, []want{{1, "add $TTL at the top of the file"}})
}

// Text in TXT and CAA values: UTF-8 written as escapes or as it reads imports the same, shown
// as it reads; control and formatting characters stay escapes.
func TestTextValues(t *testing.T) {
	res := importText(t, `$TTL 60
raw TXT "café" "tab\009" "bidi\226\128\174x" "\255"
esc TXT "caf\195\169" "tab\009" "bidi\226\128\174x" "\255"
caa CAA 0 issue "ca.example; account=\"x\""
plain TXT unquoted
`, nil)
	if len(res.Errors) > 0 || len(res.Omitted) > 0 {
		t.Fatal(res.Errors, res.Omitted)
	}
	values := map[string]string{}
	for _, rs := range res.Document.Zones[0].RecordSets {
		values[rs.Name] = rs.Records[0].Value
	}
	for name, want := range map[string]string{
		"raw":   `"café" "tab\009" "bidi\226\128\174x" "\255"`,
		"esc":   `"café" "tab\009" "bidi\226\128\174x" "\255"`,
		"caa":   `0 issue "ca.example; account=\"x\""`,
		"plain": `"unquoted"`,
	} {
		if values[name] != want {
			t.Errorf("%s: value %s, want %s", name, values[name], want)
		}
	}
}

// A zone name that is not one is refused before the file is read.
func TestBadZoneOption(t *testing.T) {
	for _, zone := range []string{"", ".", "a..b", "bad_label!"} {
		if _, err := Import("z", nil, Options{Zone: zone}); err == nil {
			t.Errorf("zone %q accepted", zone)
		}
	}
	res, err := Import("z", nil, Options{Zone: "example.com"})
	if err != nil || len(res.Errors) > 0 || res.Document == nil {
		t.Fatalf("an empty file: %v %v", err, res)
	}
	var es config.Errors
	if _, err := config.Parse(res.Text); errors.As(err, &es) {
		t.Errorf("an empty zone's document: %v", es)
	}
}

// Names are written relative to the zone where that reads back as the same name, else
// absolute: "example.com.example.com." relative would read as the apex.
func TestNamesReadBack(t *testing.T) {
	res := importText(t, "$TTL 60\nexample.com.example.com. A 192.0.2.1\nwww.example.com A 192.0.2.2\nWWW.Sub A 192.0.2.3\n* TXT \"any\"\n@ TXT \"apex\"\n", nil)
	if len(res.Errors)+len(res.Omitted) > 0 {
		t.Fatal(res.Errors, res.Omitted)
	}
	doc, err := config.Parse(res.Text)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rs := range doc.Zones[0].RecordSets {
		got = append(got, rs.Name)
	}
	want := "example.com.example.com. www.example.com.example.com. www.sub.example.com. *.example.com. example.com."
	if strings.Join(got, " ") != want {
		t.Errorf("names read back as %v, want %s", got, want)
	}
}

// Data at a delegation is left out whichever comes first in the file, and the delegation
// stays.
func TestDelegationKept(t *testing.T) {
	res := importText(t, "$TTL 60\nsub TXT \"before\"\nsub MX 10 mail.example.net.\nsub NS ns.example.net.\nsub DS 1 13 2 "+strings.Repeat("AB", 32)+"\n", nil)
	match(t, "omitted", res.Omitted, []want{{2, "sub.example.com. is delegated"}, {3, "sub.example.com. is delegated"}})
	var kept []string
	for _, rs := range res.Document.Zones[0].RecordSets {
		kept = append(kept, rs.Name+" "+string(rs.Type))
	}
	if strings.Join(kept, ", ") != "sub NS, sub DS" {
		t.Errorf("kept %v, want the NS and DS record sets", kept)
	}
}
