package abuse

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestAbuseTextInjection: free text that would forge output where it is shown (a line
// break that adds a row to `vigil override list` or `vigil audit`, a carriage return that
// rewrites one, a terminal escape sequence, a C1 control, a Unicode line separator, a
// bidirectional override) written through the control API of a raft voter, as an override
// reason and in the other free-text fields of overrides, checks (body_match), record values
// and voter joins. Every write must be refused with 422 and the field's path, and the raft
// log must not grow. The control writes the same fields with plain text: accepted.
func TestAbuseTextInjection(t *testing.T) {
	v := startVoter(t)
	client := &http.Client{Timeout: 10 * time.Second}
	demo, err := os.ReadFile("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	auth := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+writeToken) }
	if code, out := send(t, client, v.base, writeReq{"PUT", "/v1/document", "application/yaml", string(demo)}, auth); code != http.StatusOK {
		t.Fatalf("put the demo document: %d %s", code, out)
	}
	hostile := map[string]string{
		"line feed (forged row)":    "maintenance\n9999  2026-01-01T00:00:00Z  admin  delete_zone  DELETE /v1/zones/x.  forged",
		"carriage return":           "ok\rrewritten",
		"tab":                       "col\tumn",
		"CSI escape (clear screen)": "\x1b[2J\x1b[Hfake prompt",
		"OSC escape (window title)": "\x1b]0;pwned\x07",
		"C1 CSI":                    "\u009b31mred",
		"NEL":                       "a\u0085b",
		"line separator U+2028":     "a\u2028b",
		"right-to-left override":    "safe \u202eevil",
		"isolate U+2066":            "x\u2066y\u2069",
		"NUL":                       "a\x00b",
	}
	// q writes s as a JSON string with every character outside printable ASCII as a \u
	// escape, so that the text reaches the API's validation as it is (a raw NEL, say, is a
	// line break to the YAML reader of some routes, which folds it into a space).
	q := func(s string) string {
		var b strings.Builder
		b.WriteByte('"')
		for _, r := range s {
			switch {
			case r == '"' || r == '\\':
				b.WriteByte('\\')
				b.WriteRune(r)
			case r < 0x20 || r >= 0x7f:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
		return b.String()
	}
	// Each field that takes free text, as a request that is valid but for the text.
	fields := []struct {
		field, path string
		write       func(text string) writeReq
	}{
		{"override reason", "reason", func(s string) writeReq {
			return writeReq{"POST", "/v1/overrides", "application/json", `{"kind": "unhealthy", "check": "web-us-east", "reason": ` + q(s) + `, "for": "1h"}`}
		}},
		{"check body_match", "body_match", func(s string) writeReq {
			return writeReq{"POST", "/v1/checks", "application/json", `{"id": "text-check", "protocol": "http", "target": {"host": "127.0.0.1", "port": 9}, "body_match": ` + q(s) + `}`}
		}},
		{"TXT record value", "value", func(s string) writeReq {
			return writeReq{"POST", "/v1/zones/demo.vigil.test./record_sets", "application/json", `{"name": "note", "type": "TXT", "records": [{"value": ` + q(s) + `}]}`}
		}},
		{"voter id", "id", func(s string) writeReq {
			return writeReq{"POST", "/v1/cluster/voters", "application/json", `{"id": ` + q("v9"+s) + `, "raft_address": "127.0.0.1:1", "api": "http://127.0.0.1:1"}`}
		}},
	}
	before := v.logIndex(t)
	tried, refused := 0, 0
	codes := map[int]int{}
	for _, f := range fields {
		for name, text := range hostile {
			tried++
			code, out := send(t, client, v.base, f.write(text), auth)
			codes[code]++
			if code == http.StatusUnprocessableEntity && strings.Contains(string(out), `"path"`) && strings.Contains(string(out), f.path) {
				refused++
				continue
			}
			t.Errorf("%s with %s: %d %s, want 422 naming %s", f.field, name, code, out, f.path)
		}
	}
	grew := v.logIndex(t) - before

	// Control: the same fields with plain text (the voter join is left out: it would add a
	// voter that does not exist to the one-voter cluster).
	accepted := 0
	for _, f := range fields[:3] {
		code, out := send(t, client, v.base, f.write("maintenance window, ticket OPS-12 (café ✓)"), auth)
		if code/100 == 2 {
			accepted++
		} else {
			t.Errorf("control: %s with plain text: %d %s", f.field, code, out)
		}
	}
	row(t, "forged output: override reasons, check body_match, TXT values and voter ids holding line feeds (a forged `vigil audit` row), carriage returns, tabs, CSI/OSC escape sequences, C1 controls, NEL, U+2028, bidi overrides and isolates, NUL, written through the control API of a raft voter",
		fmt.Sprintf("%d writes (%d fields × %d texts)", tried, len(fields), len(hostile)),
		fmt.Sprintf("refused with 422 and the field's path %d of %d (%s); raft log grew by %d entries (control: the same fields with plain text accepted %d of 3)",
			refused, tried, answerCodes(codes), grew, accepted))
	if grew != 0 {
		t.Errorf("the raft log grew by %d entries under refused writes", grew)
	}
	if accepted != 3 {
		t.Errorf("control: %d of 3 plain writes accepted, so the test cannot fail", accepted)
	}
}
