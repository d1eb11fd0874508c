package control

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// The secrets of testNotifications: a webhook's HMAC key, a webhook URL's token (path and
// query), a Slack URL's path and an Alertmanager password (in its URL).
const (
	secretHMAC   = "hmac-key-Zq81vXw3"
	secretHook   = "hook-token-Pp29sLk7"
	secretSlack  = "T0SECRET/B0SECRET/slackPathKm44"
	secretAMPass = "am-password-Rr55tNq2"
	readToken    = "read-only-token-x81"
	scopedToken  = "scoped-token-web-x82"
)

var testSecrets = []string{secretHMAC, secretHook, secretSlack, secretAMPass}

var testNotifications = fmt.Sprintf(`{"receivers": [
  {"name": "hook", "url": "https://hooks.example.com/in/%[2]s?sig=%[2]s", "secret": %[1]q},
  {"name": "chat", "kind": "slack", "url": "https://hooks.slack.com/services/%[3]s"},
  {"name": "am", "kind": "alertmanager", "url": "https://vigil:%[4]s@alertmanager.example:9093/"},
  {"name": "plain", "kind": "alertmanager", "url": "http://alertmanager.example:9093"}],
 "rules": [{"name": "down", "receivers": ["hook", "chat", "am", "plain"]}]}`, secretHMAC, secretHook, secretSlack, secretAMPass)

// secretBytes counts the bytes of every test secret found in b (each occurrence).
func secretBytes(b []byte) int {
	n := 0
	for _, s := range testSecrets {
		n += bytes.Count(b, []byte(s)) * len(s)
	}
	return n
}

// secretVoter is one voter whose API takes the write, read and scoped tokens and any client
// certificate of the CA in dir (api_certauth.go), over TLS.
type secretVoter struct {
	node *Server
	api  *API
	url  string
	dir  string
}

func newSecretVoter(t *testing.T) *secretVoter {
	t.Helper()
	dir := testPKI(t, "v0=control", "loc=location", "checker=checker")
	st := testStore(t, dir, "v0")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + ln.Addr().String()
	n, err := NewServer(ServerConfig{ID: "v0", DataDir: filepath.Join(t.TempDir(), "d"), RaftAddr: "127.0.0.1:0",
		RaftTLS: st, APIURL: url, Timing: testTiming, Allocators: newSeqAllocator, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := ParseScope("write:check=web-,zone=example.test.")
	if err != nil {
		t.Fatal(err)
	}
	api, err := NewAPI(APIConfig{Node: n, WriteTokens: []string{testToken}, ReadTokens: []string{readToken},
		Tokens: []Token{{Name: "web-team", Scope: sc, Hash: HashToken(scopedToken)}}, ClientCerts: st.PeerRoles, LeaderWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api, TLSConfig: st.ServerConfig(tlsconf.Peer{Optional: true}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = n.Close()
	})
	if err := n.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "v0 leads and records its API", func() bool { return n.IsLeader() && n.State().Voters["v0"] == url })
	return &secretVoter{node: n, api: api, url: url, dir: dir}
}

// tokenClient trusts the CA of dir and presents no certificate.
func tokenClient(t *testing.T, dir string) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pem, err := os.ReadFile(filepath.Join(dir, "ca.pem"))
	if err != nil || !pool.AppendCertsFromPEM(pem) {
		t.Fatal("CA", err)
	}
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// readPaths returns every GET route of the API with its parameters filled in to name what
// exists (the check web-1, the zone example.test., its record set www A), and the blocking
// and full forms of GET /v1/changes.
func readPaths(t *testing.T, a *API, index uint64) []string {
	t.Helper()
	fill := strings.NewReplacer("{id}", "web-1", "{zone}", "example.test.", "{name}", "www", "{type}", "A")
	var out []string
	for _, rt := range a.Routes() {
		if rt.Method != http.MethodGet {
			continue
		}
		p := fill.Replace(rt.Path)
		if strings.Contains(p, "{") {
			t.Fatalf("route %s has a parameter this test does not fill: add it", rt.Path)
		}
		switch p {
		case "/v1/changes":
			out = append(out, p+"?index=0", fmt.Sprintf("%s?index=%d&wait=1ms", p, index-1), fmt.Sprintf("%s?index=1&wait=1ms", p))
		default:
			out = append(out, p, p+"?consistent")
		}
	}
	return out
}

// TestSecretsNeverRead: notification secrets put with the write token are found (0 bytes)
// in no answer of any read route, read with a read token, a scoped token, a location's
// certificate or a checker's; nor in a data-plane Watcher's copy on disk (base and journal).
// The control: the voter's own state, as its raft snapshot holds it, has every secret.
func TestSecretsNeverRead(t *testing.T) {
	v := newSecretVoter(t)
	writer := tokenClient(t, v.dir)
	if code, out := doWith(t, writer, "PUT", v.url+"/v1/document", testToken, "application/yaml", testDoc); code != http.StatusOK {
		t.Fatalf("PUT document: %d %s", code, out)
	}
	code, out := doWith(t, writer, "PUT", v.url+"/v1/notifications", testToken, "application/json", testNotifications)
	if code != http.StatusOK {
		t.Fatalf("PUT notifications: %d %s", code, out)
	}
	var wr state.WriteResult
	if err := json.Unmarshal(out, &wr); err != nil {
		t.Fatal(err)
	}
	// The control: the voter holds every secret, and the scan finds them in its state.
	var raw bytes.Buffer
	if err := v.node.State().WriteJSON(&raw); err != nil {
		t.Fatal(err)
	}
	for _, s := range testSecrets {
		if !bytes.Contains(raw.Bytes(), []byte(s)) {
			t.Fatalf("control: the voter's state lacks the secret %q", s)
		}
	}
	// A data-plane Watcher follows with the location's certificate, from before a change
	// (so that the change reaches it as a delta, in its journal) to after.
	cache := filepath.Join(t.TempDir(), "config.json")
	w, err := client.NewWatcher(client.WatcherConfig{Voters: []string{v.url}, Client: certClient(t, v.dir, "loc"), CachePath: cache,
		Wait: 200 * time.Millisecond, RetryMin: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; w.Close() })
	waitFor(t, 10*time.Second, "the watcher takes the configuration", func() bool {
		s, _ := w.Current()
		return s != nil && s.Index >= wr.Index
	})
	after := strings.Replace(testNotifications, `"down"`, `"down-2"`, 1)
	idx := mustWriteWith(t, writer, "PUT", v.url+"/v1/notifications", after)
	waitFor(t, 10*time.Second, "the watcher takes the change", func() bool {
		s, _ := w.Current()
		return s != nil && s.Index >= idx
	})

	found, reads := 0, 0
	clients := map[string]struct {
		c     *http.Client
		token string
	}{
		"read token":              {tokenClient(t, v.dir), readToken},
		"scoped token":            {tokenClient(t, v.dir), scopedToken},
		"location's certificate":  {certClient(t, v.dir, "loc"), ""},
		"checker's certificate":   {certClient(t, v.dir, "checker"), ""},
		"write token (reads too)": {tokenClient(t, v.dir), testToken},
	}
	for name, cl := range clients {
		for _, p := range readPaths(t, v.api, idx) {
			code, body := doWith(t, cl.c, "GET", v.url+p, cl.token, "", "")
			if code != http.StatusOK {
				t.Errorf("%s: GET %s: %d %s", name, p, code, body)
			}
			reads++
			if n := secretBytes(body); n > 0 {
				found += n
				t.Errorf("%s: GET %s shows %d bytes of secrets: %s", name, p, n, body)
			}
		}
	}
	for _, f := range []string{cache, cache + ".journal"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("the watcher's copy: %v", err)
		}
		if len(b) == 0 {
			t.Fatalf("the watcher's %s is empty: the scan would find nothing", f)
		}
		if n := secretBytes(b); n > 0 {
			found += n
			t.Errorf("the watcher's %s holds %d bytes of secrets", f, n)
		}
	}
	t.Logf("%d reads of %d routes with 5 credentials, the watcher's copy and journal: %d secret bytes found; control: the voter's state holds %d",
		reads, len(readPaths(t, v.api, idx)), found, secretBytes(raw.Bytes()))
}

// mustWriteWith makes a write with the write token through client, which must succeed.
func mustWriteWith(t *testing.T, client *http.Client, method, url, body string) uint64 {
	t.Helper()
	code, out := doWith(t, client, method, url, testToken, "application/json", body)
	if code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("%s %s: %d %s", method, url, code, out)
	}
	var res state.WriteResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	return res.Index
}

// TestSecretsRoundTrip: what GET /v1/notifications and GET /v1/document show, written back
// as it is, keeps every stored secret; SecretClear removes one; SecretSet, or a redacted
// URL, for a receiver with nothing stored is refused (422); a new secret replaces the old.
func TestSecretsRoundTrip(t *testing.T) {
	v := newSecretVoter(t)
	c := tokenClient(t, v.dir)
	mustWriteWith(t, c, "PUT", v.url+"/v1/document", testDoc)
	mustWriteWith(t, c, "PUT", v.url+"/v1/notifications", testNotifications)
	stored := func() *config.Notifications { return v.node.State().Settings().Notifications }
	want := stored()

	code, out := doWith(t, c, "GET", v.url+"/v1/notifications", readToken, "", "")
	if code != http.StatusOK {
		t.Fatalf("GET: %d %s", code, out)
	}
	var got struct {
		Data *config.Notifications `json:"data"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	r := got.Data.Receivers
	if r[0].Secret != config.SecretSet || r[0].URL != "https://hooks.example.com/…" || r[1].URL != "https://hooks.slack.com/…" ||
		r[2].URL != "https://alertmanager.example:9093/…" || r[3].URL != "http://alertmanager.example:9093" || r[3].Secret != "" {
		t.Fatalf("GET shows %+v", r)
	}
	shown, _ := json.Marshal(got.Data)
	mustWriteWith(t, c, "PUT", v.url+"/v1/notifications", string(shown))
	if s := stored(); !equalJSON(t, s, want) {
		t.Fatalf("the round trip changed the secrets: %+v, want %+v", s.Receivers, want.Receivers)
	}
	// The whole document, read and written back.
	code, out = doWith(t, c, "GET", v.url+"/v1/document", readToken, "", "")
	if code != http.StatusOK {
		t.Fatalf("GET document: %d %s", code, out)
	}
	var doc struct {
		Data json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	mustWriteWith(t, c, "PUT", v.url+"/v1/document", string(doc.Data))
	if s := stored(); !equalJSON(t, s, want) {
		t.Fatalf("the document's round trip changed the secrets: %+v", s.Receivers)
	}
	// Omitted keeps too; SecretClear removes; a new value replaces.
	omit := strings.Replace(string(shown), `"secret":"(set)"`, `"secret":""`, 1)
	mustWriteWith(t, c, "PUT", v.url+"/v1/notifications", omit)
	if s := stored(); s.Receivers[0].Secret != secretHMAC {
		t.Fatalf("an omitted secret: stored %q", s.Receivers[0].Secret)
	}
	mustWriteWith(t, c, "PUT", v.url+"/v1/notifications", strings.Replace(string(shown), `"secret":"(set)"`, `"secret":"(clear)"`, 1))
	if s := stored(); s.Receivers[0].Secret != "" || s.Receivers[1].URL != want.Receivers[1].URL {
		t.Fatalf("after a clear: %+v", s.Receivers)
	}
	mustWriteWith(t, c, "PUT", v.url+"/v1/notifications", strings.Replace(string(shown), `"secret":"(set)"`, `"secret":"a-new-key"`, 1))
	if s := stored(); s.Receivers[0].Secret != "a-new-key" {
		t.Fatalf("a new secret: stored %q", s.Receivers[0].Secret)
	}
	// Markers with nothing stored behind them are refused, and change nothing.
	before := v.node.State().Index
	for _, body := range []string{
		`{"receivers": [{"name": "fresh", "url": "https://x.example/hook", "secret": "(set)"}], "rules": []}`,
		`{"receivers": [{"name": "fresh", "kind": "slack", "url": "https://hooks.slack.com/…"}], "rules": []}`,
		`{"receivers": [{"name": "chat", "kind": "slack", "url": "https://elsewhere.example/…"}], "rules": []}`,
	} {
		code, out := doWith(t, c, "PUT", v.url+"/v1/notifications", testToken, "application/json", body)
		if code != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d %s, want 422", body, code, out)
		}
		if secretBytes(out) > 0 {
			t.Errorf("the refusal shows a secret: %s", out)
		}
	}
	if v.node.State().Index != before {
		t.Errorf("a refused write changed the state")
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}
