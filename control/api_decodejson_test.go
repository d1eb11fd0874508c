package control

import (
	"reflect"
	"testing"
)

// fastCheckBodies are check bodies the JSON path takes (fast: true) or leaves to the YAML
// path, each for a reason the YAML decoder would read it otherwise or refuse it.
var fastCheckBodies = []struct {
	body string
	fast bool
}{
	{`{"protocol": "tcp", "target": {"host": "127.0.0.1", "port": 80}}`, true},
	{` {"id": "web-1", "protocol": "http", "target": {"host": "h.example", "port": 8080}, "path": "/health", "method": "HEAD",` + "\n" +
		`   "headers": {"X-A": "1", "x-b": ""}, "expect_status": ["200-299", "304"], "interval": "30s", "timeout": "2s",` + "\n" +
		`   "failure_threshold": 2, "success_threshold": 1, "regions": ["a", "b", "c"], "checkers_per_region": 3,` + "\n" +
		`   "healthy_threshold": 0.5, "min_reporters": 2, "inverted": false, "disabled": true, "tls_verify": false,` + "\n" +
		`   "follow_redirects": true, "ip_version": 6, "body_match": "ok", "host_header": "x", "sni": "y", "tls_ca": ""}` + "\n", true},
	{`{"protocol": "https", "target": {"host": "h", "port": 443}, "healthy_threshold": 1, "expect_status": [], "headers": {}}`, true},
	{`{"protocol": "grpc", "target": {"port": 9000, "host": "h"}, "children": ["x"], "allow_fewer_regions": true}`, true},
	{`{"protocol": "tcp", "target": {"host": "h", "port": 80}, "interval": "soon"}`, false},              // an error: the YAML path words it
	{`{"protocol": "tcp", "target": {"host": "h", "port": "80"}}`, false},                                // a string for a number
	{`{"protocol": "tcp", "target": {"host": 5, "port": 80}}`, false},                                    // a number for a string
	{`{"Protocol": "tcp", "target": {"host": "h", "port": 80}}`, false},                                  // encoding/json ignores case
	{`{"protocol": "tcp", "target": {"Host": "h", "port": 80}}`, false},                                  // so in a target
	{`{"protocol": "tcp", "protocol": "http", "target": {"host": "h", "port": 80}}`, false},              // twice
	{`{"protocol": "tcp", "target": {"host": "h", "port": 80}, "headers": {"a": "1", "a": "2"}}`, false}, // twice in headers
	{`{"protocol": "tcp", "target": {"host": "h", "port": 80}, "path": null}`, false},                    // null
	{`{"protocol": "tcp", "target": {"host": "h\u0041", "port": 80}}`, false},                            // an escape
	{`{"protocol": "tcp", "target": {"host": "hé", "port": 80}}`, false},                                 // not ASCII
	{"{\"protocol\": \"tcp\", \"target\": {\"host\": \"h\x7f\", \"port\": 80}}", false},                  // YAML: a control character
	{"{\"protocol\": \"tcp\",\t\"target\": {\"host\": \"h\", \"port\": 80}}", false},                     // a tab
	{"{\"protocol\": \"tcp\",\r\n  \"target\": {\"host\": \"h\", \"port\": 80}\r\n}", true},
	{`{"protocol": "tcp", "target": {"host": "h", "port": 80}, "healthy_threshold": -0}`, false},   // YAML: 0, not -0
	{`{"protocol": "tcp", "target": {"host": "h", "port": 80}, "healthy_threshold": 5e-1}`, false}, // an exponent
	{`{"protocol": "tcp", "target": {"host": "h", "port": 80}, "regions": []}`, false},             // normalised to none
	{`{"protocol": "http", "target": {"host": "h"}}`, false},                                       // its port is a default
	{`{"protocol": "http", "target": {"host": "h", "port": 80}, "method": "get"}`, false},          // normalised to GET
	{`{"protocol": "dns", "target": {"host": "h", "port": 53}, "dns": {"name": "a"}}`, false},      // a probe
	{`{"protocol": "grpc", "target": {"host": "h", "port": 1}, "grpc": {"service": "s"}}`, false},  // a probe
	{`{"protocol": "calculated", "children": ["a", "b"]}`, false},                                  // normalised
	{`{"protocol": "tcp", "target": {"host": "h", "port": 80}, "colour": "red"}`, false},           // unknown
	{`{"protocol": "tcp", "target": {"host": "h", "port": 80}, "regions": [1]}`, false},            // not strings
	{`{"protocol": "tcp", "target": {"host": "h", "port": 80}} {}`, false},                         // two values
	{`{"protocol": "tcp", "target": {"host": "h", "port": 80}}], "checks": [{"id": "f"}`, false},
}

// TestDecodeCheckJSONAsYAML: the bodies the JSON path takes decode to the same check as
// through the document's YAML decoder; the others are left to it.
func TestDecodeCheckJSONAsYAML(t *testing.T) {
	for _, tc := range fastCheckBodies {
		fast, ok := decodeCheckJSON([]byte(tc.body))
		if ok != tc.fast {
			t.Errorf("%s: taken by the JSON path: %v, want %v", tc.body, ok, tc.fast)
		}
		if !ok {
			continue
		}
		slow, err := decodeCheckDocument([]byte(tc.body))
		if err != nil || !reflect.DeepEqual(fast, slow) {
			t.Errorf("%s:\n JSON path: %+v\n YAML path: %+v, %v", tc.body, fast, slow, err)
		}
	}
}

// FuzzDecodeCheckJSON: whatever body the JSON path takes, the YAML path decodes to the same
// check.
func FuzzDecodeCheckJSON(f *testing.F) {
	for _, tc := range fastCheckBodies {
		f.Add(tc.body)
	}
	f.Fuzz(func(t *testing.T, body string) {
		fast, ok := decodeCheckJSON([]byte(body))
		if !ok {
			return
		}
		slow, err := decodeCheckDocument([]byte(body))
		if err != nil || !reflect.DeepEqual(fast, slow) {
			t.Fatalf("%q:\n JSON path: %+v\n YAML path: %+v, %v", body, fast, slow, err)
		}
	})
}
