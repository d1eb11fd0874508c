package control

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// bigDoc is a document of n checks, each deciding an A record set, as YAML.
func bigDoc(n int) string {
	var b strings.Builder
	b.WriteString("regions: [us-east, eu-west, sa-east]\nchecks:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {id: c%d, protocol: tcp, target: {host: \"192.0.2.1\", port: %d}}\n", i, 1+i%60000)
	}
	b.WriteString("zones:\n  - name: big.test.\n    record_sets:\n")
	for i := range n {
		fmt.Fprintf(&b, "      - {name: h%d, type: A, policy: multivalue, records: [{value: 192.0.2.%d, health_check: c%d}]}\n", i, 1+i%250, i)
	}
	return b.String()
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := io.WriteString(zw, s); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// putEncoded sends a document with a Content-Encoding and returns the status and body.
func putEncoded(t *testing.T, url, encoding string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("PUT", url+"/v1/document", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/yaml")
	if encoding != "" {
		req.Header.Set("Content-Encoding", encoding)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// TestCompressedDocument: a document over the bytes a request may send is refused with 413
// and an error naming gzip, as is a compressed body of more bytes than that; the same
// document gzip-compressed is applied, also when sent to a
// follower (which forwards it to the leader compressed, where decompressed it would be over
// the leader's limit too); a compressed body that decompresses to more than the document
// limit is refused with 413 and nothing applied, as is a body that is not gzip (400) and a
// coding the API does not know (415).
func TestCompressedDocument(t *testing.T) {
	const maxBody, maxDoc = 64 << 10, 512 << 10
	c := newClusterWith(t, 3, &cluster{maxBody: maxBody, maxDocument: maxDoc, timing: testTiming})
	leader := c.leader(0)
	follower := c.follower()
	doc := bigDoc(1200) // about 150 KiB: over maxBody, under maxDoc
	if len(doc) <= maxBody || len(doc) >= maxDoc {
		t.Fatalf("document of %d bytes: want between %d and %d", len(doc), maxBody, maxDoc)
	}
	index := func() uint64 { return leader.node.State().Index }
	before := index()

	code, out := putEncoded(t, leader.url(), "", []byte(doc))
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("uncompressed document of %d bytes: %d %s, want 413", len(doc), code, out)
	}
	if e := decodeError(t, out); !strings.Contains(e.Error, "Content-Encoding: gzip") {
		t.Errorf("refusal of a large document says %q: want it to name Content-Encoding: gzip", e.Error)
	}

	huge := "# padding\n" + strings.Repeat("#"+strings.Repeat(" ", 100)+"\n", maxDoc/100) + bigDoc(10)
	code, out = putEncoded(t, leader.url(), "gzip", gzipped(t, huge))
	if code != http.StatusRequestEntityTooLarge {
		t.Fatalf("gzip body decompressing to %d bytes: %d %s, want 413", len(huge), code, out)
	}
	if e := decodeError(t, out); !strings.Contains(e.Error, "decompresses to more than") || !strings.Contains(e.Error, fmt.Sprint(maxDoc)) {
		t.Errorf("refusal of a compressed document over the limit says %q", e.Error)
	}

	// Compressed bytes over the limit of what a request sends: random comments do not
	// compress.
	noise := make([]byte, 2*maxBody)
	x := uint64(88172645463325252)
	for i := range noise {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		noise[i] = 'a' + byte(x%26)
	}
	code, out = putEncoded(t, leader.url(), "gzip", gzipped(t, "# "+string(noise)+"\n"+doc))
	if code != http.StatusRequestEntityTooLarge {
		t.Errorf("gzip body of more than %d bytes: %d %s, want 413", maxBody, code, out)
	} else if e := decodeError(t, out); !strings.Contains(e.Error, "more than") {
		t.Errorf("refusal of a compressed body over the limit says %q", e.Error)
	}

	code, out = putEncoded(t, leader.url(), "gzip", []byte(doc[:2000]))
	if code != http.StatusBadRequest {
		t.Errorf("a body that is not gzip: %d %s, want 400", code, out)
	} else if e := decodeError(t, out); !strings.Contains(e.Error, "gzip") {
		t.Errorf("refusal of a body that is not gzip says %q", e.Error)
	}
	z := gzipped(t, doc)
	code, out = putEncoded(t, leader.url(), "gzip", z[:len(z)/2])
	if code != http.StatusBadRequest {
		t.Errorf("a truncated gzip body: %d %s, want 400", code, out)
	}
	code, out = putEncoded(t, leader.url(), "br", []byte(doc[:100]))
	if code != http.StatusUnsupportedMediaType {
		t.Errorf("Content-Encoding: br: %d %s, want 415", code, out)
	}
	if after := index(); after != before {
		t.Fatalf("refused documents moved the index from %d to %d", before, after)
	}

	code, out = putEncoded(t, follower.url(), "gzip", z)
	if code != http.StatusOK {
		t.Fatalf("compressed document of %d bytes (%d sent) to a follower: %d %s", len(doc), len(z), code, out)
	}
	if n := leader.node.State().NumChecks(); n != 1200 {
		t.Errorf("after the compressed document the leader holds %d checks, want 1200", n)
	}
}

// streamDoc is a configuration of 20 checks and two zones, as one YAML document (parts 1)
// or as a stream of three: the settings and ten checks; ten checks and zone a with the first
// ten record sets; zone a again with the other ten, and zone b.
func streamDoc(parts int) string {
	check := func(i int) string {
		return fmt.Sprintf("  - {id: s%d, protocol: tcp, target: {host: \"192.0.2.1\", port: %d}}\n", i, 100+i)
	}
	set := func(i int) string {
		return fmt.Sprintf("      - {name: h%d, type: A, policy: multivalue, records: [{value: 192.0.2.%d, health_check: s%d}]}\n", i, 1+i, i)
	}
	var b strings.Builder
	b.WriteString("regions: [us-east, eu-west, sa-east]\nchecks:\n")
	for i := range 10 {
		b.WriteString(check(i))
	}
	if parts > 1 {
		b.WriteString("--- # the second part\nchecks:\n")
	}
	for i := 10; i < 20; i++ {
		b.WriteString(check(i))
	}
	b.WriteString("zones:\n  - name: a.test.\n    ttl: 60\n    record_sets:\n")
	for i := range 10 {
		b.WriteString(set(i))
	}
	if parts > 1 {
		b.WriteString("---\nzones:\n  - name: a.test.\n    ttl: 60\n    record_sets:\n")
	}
	for i := 10; i < 20; i++ {
		b.WriteString(set(i))
	}
	b.WriteString("  - name: b.test.\n    record_sets:\n      - {name: www, type: A, records: [{value: 192.0.2.200}]}\n")
	return b.String()
}

var serialRE = regexp.MustCompile(`"serial":[0-9]+`)

// TestDocumentStream: a YAML stream of several documents is applied as the one document that
// holds them all (the configuration read back is the same as after applying that document
// whole), compressed as well; a later part that sets the settings, a zone named again with
// other settings and a problem in the third part are refused, naming the part, and apply
// nothing; a document that merely begins with "---" is one document.
func TestDocumentStream(t *testing.T) {
	c := newCluster(t, 1)
	base := c.voters[0].url()
	read := func() string {
		code, out := do(t, "GET", base+"/v1/document", testToken, "", "")
		if code != http.StatusOK {
			t.Fatalf("GET /v1/document: %d %s", code, out)
		}
		var d struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(out, &d); err != nil || len(d.Data) == 0 {
			t.Fatalf("GET /v1/document: %v %s", err, out)
		}
		// The zones' SOA serial is the index of the write: the rest must be the same.
		return serialRE.ReplaceAllString(string(d.Data), `"serial":N`)
	}
	mustWrite(t, "PUT", base+"/v1/document", "application/yaml", streamDoc(1))
	whole := read()
	if !strings.Contains(whole, "s19") || !strings.Contains(whole, "h19") {
		t.Fatalf("the whole document read back lacks s19 or h19: %.300s", whole)
	}
	mustWrite(t, "PUT", base+"/v1/document", "application/yaml", testDoc)
	if read() == whole {
		t.Fatal("another document reads back the same")
	}
	mustWrite(t, "PUT", base+"/v1/document", "application/yaml", streamDoc(3))
	if got := read(); got != whole {
		i := 0
		for i < min(len(got), len(whole)) && got[i] == whole[i] {
			i++
		}
		t.Errorf("the stream reads back otherwise than the whole document, from byte %d:\n%.300s\nwant\n%.300s", i, got[max(0, i-100):], whole[max(0, i-100):])
	}
	mustWrite(t, "PUT", base+"/v1/document", "application/yaml", testDoc)
	code, out := putEncoded(t, base, "gzip", gzipped(t, streamDoc(3)))
	if code != http.StatusOK {
		t.Fatalf("compressed stream: %d %s", code, out)
	}
	if got := read(); got != whole {
		t.Errorf("the compressed stream reads back otherwise than the whole document")
	}

	before := c.voters[0].node.State().Index
	for _, tc := range []struct{ name, body, want string }{
		{"settings in a later part", streamDoc(3) + "---\nregions: [us-east]\n", "only the first document of a stream"},
		{"a zone again with other settings", strings.Replace(streamDoc(3), "---\nzones:\n  - name: a.test.\n    ttl: 60", "---\nzones:\n  - name: a.test.\n    ttl: 90", 1), "names zone a.test. again with other settings"},
		{"a problem in the third part", strings.Replace(streamDoc(3), "---\nzones:", "---\nzonez:", 1), "document 3 of the stream"},
	} {
		code, out := do(t, "PUT", base+"/v1/document", testToken, "application/yaml", tc.body)
		if code != http.StatusBadRequest || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s: %d %s, want 400 saying %q", tc.name, code, out, tc.want)
		}
	}
	if after := c.voters[0].node.State().Index; after != before {
		t.Errorf("refused streams moved the index from %d to %d", before, after)
	}
	mustWrite(t, "PUT", base+"/v1/document", "application/yaml", "--- # one document\n"+streamDoc(1))
	if got := read(); got != whole {
		t.Errorf("a document beginning with --- reads back otherwise than without it")
	}
}
