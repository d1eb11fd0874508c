package abuse

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/state"
)

// TestAbuseCheckHeaders: with the write token, checks whose headers set what frames the
// request or manages the connection (Content-Length, Transfer-Encoding, Upgrade,
// Connection, Host, TE, Trailer, ...), in several spellings, are posted to a raft voter's
// API. Each must be refused (422, the API's answer to an invalid configuration) with an error
// that names the check's header path, and the configuration must not change. The control
// posts a check with an ordinary header: applied.
func TestAbuseCheckHeaders(t *testing.T) {
	v := startVoter(t)
	client := &http.Client{Timeout: 10 * time.Second}
	auth := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+writeToken) }
	headers := map[string]string{
		"Content-Length": "0", "content-length": "5", "Transfer-Encoding": "chunked",
		"TRANSFER-ENCODING": "chunked, identity", "Upgrade": "websocket", "Connection": "Upgrade",
		"connection": "close, X-Probe", "Host": "internal.example.test", "host": "169.254.169.254",
		"TE": "trailers", "te": "gzip", "Trailer": "X-Late", "Keep-Alive": "timeout=5",
		"Proxy-Connection": "keep-alive", "HTTP2-Settings": "AAMAAABkAARAAAAAAAIAAAAA", "Expect": "100-continue",
	}
	before := v.node.State().Index // the configuration's index: raft's own entries (the leader's no-op) do not move it
	through, unnamed := 0, 0
	for name, value := range headers {
		h, _ := json.Marshal(map[string]string{name: value})
		body := fmt.Sprintf(`{"id": "smuggle", "protocol": "http", "target": {"host": "192.0.2.1"}, "path": "/", "headers": %s}`, h)
		code, out := send(t, client, v.base, writeReq{"POST", "/v1/checks", "application/json", body}, auth)
		if code != http.StatusUnprocessableEntity && code != http.StatusBadRequest {
			through++
			t.Errorf("header %s: %d %s", name, code, out)
			continue
		}
		var e state.ErrorBody
		if json.Unmarshal(out, &e) != nil || !strings.Contains(string(out), "headers."+name) {
			unnamed++
			t.Errorf("header %s: the error does not name the check's header path: %s", name, out)
		}
	}
	after := v.node.State().Index

	// Control: an ordinary header is applied.
	code, out := send(t, client, v.base, writeReq{"POST", "/v1/checks", "application/json",
		`{"id": "ordinary", "protocol": "http", "target": {"host": "192.0.2.1"}, "path": "/", "headers": {"X-Probe": "vigil"}}`}, auth)
	row(t, "check headers that frame the request or manage the connection (Content-Length, Transfer-Encoding, Upgrade, Connection, Host, TE, Trailer, Keep-Alive, Proxy-Connection, HTTP2-Settings, Expect, in several spellings), posted with the write token to a raft voter's API",
		fmt.Sprintf("%d checks", len(headers)),
		fmt.Sprintf("accepted %d, all refused with 422 at validation (configuration index %d before and after); %d refusals without the check's header path (control: a check with X-Probe answered %d)", through, before, unnamed, code))
	if through != 0 || after != before || unnamed != 0 {
		t.Errorf("got through: %d accepted, configuration index %d -> %d, %d errors without the path", through, before, after, unnamed)
	}
	if code != http.StatusCreated && code != http.StatusOK {
		t.Errorf("control: a check with an ordinary header: %d %s", code, out)
	}
}
