package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/safetext"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/status"
)

// forged is text a hostile or old server could send: a line break and a forged row, a
// carriage return, a terminal escape sequence (clear screen), an OSC (window title), a C1
// control and a bidi override.
const forged = "deploy\n9999  2026-01-01T00:00:00Z  admin  delete_zone  DELETE /v1/zones/x.  forged\rX\x1b[2J\x1b]0;pwned\x07\u009b1m\u202eevil"

// unsafeOutput reports whether out holds any unsafe character besides the line feeds that
// end its lines and the spaces of its columns.
func unsafeOutput(out string) bool {
	return strings.ContainsFunc(out, func(r rune) bool { return r != '\n' && safetext.Unsafe(r) })
}

// TestHostileServerTextEscaped: a server answering `vigil override list`, `vigil audit`
// and an error with text that holds line breaks and escape sequences, and a location whose
// checkers' reasons hold them (`vigil status`): what the CLI prints holds one line per
// row and no control character, the text escaped.
func TestHostileServerTextEscaped(t *testing.T) {
	q := strings.NewReplacer("\n", `\n`, "\r", `\r`, "\x1b", `\u001b`, "\x07", `\u0007`, "\u009b", `\u009b`, "\u202e", `\u202e`).Replace(forged)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/overrides":
			_, _ = w.Write([]byte(`{"data": [{"id": "o1", "kind": "unhealthy", "check": "web", "reason": "` + q + `", "author": "` + q + `", "created": "2026-01-01T00:00:00Z", "expires": "2099-01-01T00:00:00Z", "active": true}]}`))
		case "/v1/audit":
			_, _ = w.Write([]byte(`{"data": {"entries": [{"seq": 1, "index": 3, "op": "set_override", "time": "2026-01-01T00:00:00Z", "token": "` + q + `", "method": "POST", "path": "/v1/overrides", "summary": "` + q + `"}], "newest": 1}}`))
		default:
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error": "` + q + `", "errors": [{"path": "` + q + `", "message": "` + q + `"}]}`))
		}
	}))
	t.Cleanup(srv.Close)
	t.Setenv("VIGIL_TOKEN", "t")
	for _, tc := range []struct {
		args []string
		rows int // lines of stdout: the header and one row
	}{
		{[]string{"override", "list", "-server", srv.URL}, 2},
		{[]string{"audit", "-server", srv.URL}, 2},
		{[]string{"override", "clear", "-server", srv.URL, "o1"}, 0},
	} {
		var out, errOut bytes.Buffer
		run(context.Background(), tc.args, &out, &errOut)
		if unsafeOutput(out.String()) || unsafeOutput(errOut.String()) {
			t.Errorf("%v printed control characters:\nstdout %q\nstderr %q", tc.args, out.String(), errOut.String())
		}
		if n := strings.Count(out.String(), "\n"); n != tc.rows {
			t.Errorf("%v printed %d lines, want %d:\n%s", tc.args, n, tc.rows, out.String())
		}
		if tc.rows > 0 && !strings.Contains(out.String(), `deploy\n9999`) {
			t.Errorf("%v: the reason is not shown escaped:\n%s", tc.args, out.String())
		}
		if tc.rows == 0 && (!strings.Contains(errOut.String(), `deploy\n9999`) || strings.Count(errOut.String(), "\n") != 2) {
			t.Errorf("%v: the error is not shown escaped, on two lines:\n%q", tc.args, errOut.String())
		}
	}

	// vigil status, against the real status API of a location whose checker reports the text.
	now := time.Now()
	loc := newDemoLocation(t, map[string][]quorum.Report{
		"web-us-east": {{Checker: "us-1", Region: "us-east", Healthy: false, Reason: forged, Latency: time.Millisecond, LastProgress: now.Add(-time.Second)}},
	}, now)
	api, err := status.New(status.Options{Node: demoNode{}, Location: loc})
	if err != nil {
		t.Fatal(err)
	}
	ss := httptest.NewServer(api)
	t.Cleanup(ss.Close)
	code, stdout, stderr := runValidateCmd(t, "status", "--addr", strings.TrimPrefix(ss.URL, "http://"), "check", "web-us-east")
	if code != 0 || unsafeOutput(stdout) || !strings.Contains(stdout, `deploy\n9999`) || strings.Contains(stdout, "\n9999") {
		t.Errorf("status check: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
