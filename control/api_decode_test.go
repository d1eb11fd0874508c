package control

import (
	"reflect"
	"regexp"
	"testing"
)

// TestDecodeItemJSONAsText: a body that is one JSON object is decoded by placing its text in
// the document; the same body behind a YAML comment (so not JSON) takes the path that parses
// and re-encodes it. Both give the same item, or the same errors at the same paths, and a
// body that tries to close the document around it is not taken as JSON.
func TestDecodeItemJSONAsText(t *testing.T) {
	checks := []string{
		`{"id": "a", "protocol": "tcp", "target": {"host": "127.0.0.1", "port": 80}}`,
		`  {"id": "b", "protocol": "http", "target": {"host": "h", "port": 8080}, "interval": "5s", "expect_status": ["200"]}` + "\n",
		`{"id": "c", "protocol": "tcp", "target": {"host": "127.0.0.1", "port": 80}, "colour": "red"}`,
		`{"id": "d", "protocol": "tcp", "target": {"host": "127.0.0.1", "port": "eighty"}}`,
		`{"id": "e", "protocol": "tcp", "target": {"host": "127.0.0.1", "port": 80}}], "regions": ["x"], "checks": [{"id": "f"}`,
		`{"id": "g", "id": "h"}`,
	}
	for _, body := range checks {
		fast, ferr := decodeCheck([]byte(body))
		slow, serr := decodeCheck([]byte("# comment\n" + body))
		if !reflect.DeepEqual(fast, slow) || (ferr == nil) != (serr == nil) {
			t.Errorf("%s:\n as JSON: %+v, %v\n as YAML: %+v, %v", body, fast, ferr, slow, serr)
		}
		if ferr != nil && stripLines(ferr.Error()) != stripLines(serr.Error()) {
			t.Errorf("%s: errors differ:\n as JSON: %v\n as YAML: %v", body, ferr, serr)
		}
	}
	if _, err := decodeCheck([]byte(checks[4])); err == nil {
		t.Errorf("a body that closes the document around it was accepted")
	}
	set := `{"name": "www", "type": "A", "records": [{"value": "192.0.2.1"}]}`
	rs, err := decodeRecordSet([]byte(set), `ex"ample.com`)
	slow, serr := decodeRecordSet([]byte("# comment\n"+set), `ex"ample.com`)
	if err != nil || serr != nil || !reflect.DeepEqual(rs, slow) {
		t.Errorf("record set in a zone whose name needs quoting:\n as JSON: %+v, %v\n as YAML: %+v, %v", rs, err, slow, serr)
	}
	z, err := decodeZone([]byte(`{"name": "example.com", "record_sets": [{"name": "www", "type": "A", "records": [{"value": "192.0.2.1"}]}]}`))
	if err != nil || len(z.RecordSets) != 1 {
		t.Errorf("zone: %+v, %v", z, err)
	}
}

// lineNumber is a line number in an error: the two paths parse documents of different lines.
var lineNumber = regexp.MustCompile(`line [0-9]+`)

func stripLines(s string) string { return lineNumber.ReplaceAllString(s, "line N") }
