package control

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// A TSIG key put through the API is stored sealed: no read (the list, the state, the changes,
// the audit log) shows its secret, the sealed form opens with the voters' seal secret to the
// secret put, a checker's certificate gets neither; a scoped token may not write keys; weak
// algorithms, short secrets and bad names are refused and change nothing; a voter without a
// seal secret refuses with 422 and why; the keys survive a document applied, the state's
// JSON form, a snapshot and a restart; a delete removes the key.
func TestTSIGKeysAPI(t *testing.T) {
	c := newClusterWith(t, 1, &cluster{maxBody: 1 << 20, timing: testTiming})
	v := c.voters[0]
	api, sec, _ := scopedAPI(t, v)
	raw := []byte("tsig-test secret bytes 0123456789")
	secret := base64.StdEncoding.EncodeToString(raw)
	body := fmt.Sprintf(`{"algorithm": "hmac-sha256", "secret": %q}`, secret)

	if code, out := serve(api, "PUT", "/v1/tsig-keys/xfr.test", sec["web-team"], body); code != 403 {
		t.Errorf("a zone-scoped token puts a key: %d %s, want 403", code, out)
	}
	if code, out := serve(api, "PUT", "/v1/tsig-keys/xfr.test", sec["viewer"], body); code != 401 {
		t.Errorf("a read token puts a key: %d %s, want 401", code, out)
	}
	for _, bad := range []struct{ name, body, want string }{
		{"xfr.test", fmt.Sprintf(`{"algorithm": "hmac-sha1", "secret": %q}`, secret), "algorithm"},
		{"xfr.test", fmt.Sprintf(`{"algorithm": "hmac-md5", "secret": %q}`, secret), "algorithm"},
		{"xfr.test", fmt.Sprintf(`{"secret": %q}`, base64.StdEncoding.EncodeToString([]byte("fifteen bytes.."))), "at least 16 bytes"},
		{"xfr.test", `{"secret": "not base64!"}`, "base64"},
		{"bad..name", fmt.Sprintf(`{"secret": %q}`, secret), "not a domain name"},
	} {
		code, out := serve(api, "PUT", "/v1/tsig-keys/"+bad.name, sec["admin"], bad.body)
		if code != 422 || !strings.Contains(out, bad.want) {
			t.Errorf("put %s %s: %d %s, want 422 saying %q", bad.name, bad.body, code, out, bad.want)
		}
	}
	n := 0
	for range v.node.State().TSIGKeys() {
		n++
	}
	if n != 0 {
		t.Fatalf("%d keys stored after refusals", n)
	}
	if code, out := serve(api, "PUT", "/v1/tsig-keys/Xfr.Test", sec["admin"], body); code != 200 {
		t.Fatalf("admin puts a key: %d %s", code, out)
	}
	stored, ok := v.node.State().TSIGKey("xfr.test.")
	if !ok || stored.Algorithm != "hmac-sha256" || len(stored.Sealed) == 0 {
		t.Fatalf("stored key %+v %v", stored, ok)
	}
	sealer, _ := dnssec.NewSealer([]byte(testDNSSECSecret))
	if got, err := sealer.OpenTSIG("xfr.test.", stored.Sealed); err != nil || string(got) != secret {
		t.Fatalf("the sealed secret opens to %q, %v", got, err)
	}
	if _, err := sealer.OpenTSIG("other.test.", stored.Sealed); err == nil {
		t.Fatal("the sealed secret opens under another key's name")
	}

	// Every read, the audit log included, holds neither the secret nor its bytes.
	secretFree := func(what, out string) {
		t.Helper()
		if strings.Contains(out, secret) || bytes.Contains([]byte(out), raw) || strings.Contains(out, base64.StdEncoding.EncodeToString(raw[:12])) {
			t.Errorf("%s holds the secret: %s", what, out)
		}
	}
	code, out := serve(api, "GET", "/v1/tsig-keys", sec["viewer"], "")
	if code != 200 || !strings.Contains(out, `"name": "xfr.test."`) || !strings.Contains(out, `"secret": "(set)"`) || !strings.Contains(out, `"algorithm": "hmac-sha256"`) {
		t.Fatalf("list: %d %s", code, out)
	}
	secretFree("the list", out)
	for _, path := range []string{"/v1/state", "/v1/changes?index=0", "/v1/audit", "/v1/document"} {
		code, out := serve(api, "GET", path, sec["viewer"], "")
		if code != 200 {
			t.Fatalf("%s: %d %s", path, code, out)
		}
		secretFree(path, out)
	}
	_, out = serve(api, "GET", "/v1/audit", sec["viewer"], "")
	if !strings.Contains(out, "put TSIG key xfr.test. (hmac-sha256; secret sealed)") || !strings.Contains(out, `"token": "admin"`) {
		t.Errorf("the audit log does not record the put by admin: %s", out)
	}

	// A checker's certificate gets the key's name and algorithm, never the sealed form: in
	// the whole state and in a delta.
	sealedText := base64.StdEncoding.EncodeToString(stored.Sealed)
	at := v.node.State().Index
	checker := func(path string) string {
		req := httptest.NewRequest("GET", path, nil)
		req = req.WithContext(context.WithValue(req.Context(), principalKey{}, Principal{Name: "cert:checker", NoSealedKeys: true}))
		rec := httptest.NewRecorder()
		api.getChanges(rec, req)
		return rec.Body.String()
	}
	if out := checker("/v1/changes?index=0"); strings.Contains(out, sealedText) || !strings.Contains(out, "xfr.test.") {
		t.Errorf("a checker's whole state: %s", out)
	}
	if code, out := serve(api, "PUT", "/v1/tsig-keys/second.test", sec["admin"], body); code != 200 {
		t.Fatalf("second key: %d %s", code, out)
	}
	second, _ := v.node.State().TSIGKey("second.test")
	out = checker(fmt.Sprintf("/v1/changes?index=%d", at))
	if !strings.Contains(out, `"delta"`) || !strings.Contains(out, "second.test.") || strings.Contains(out, sealedText) || strings.Contains(out, base64.StdEncoding.EncodeToString(second.Sealed)) {
		t.Errorf("a checker's delta: %s", out)
	}
	if _, out := serve(api, "GET", fmt.Sprintf("/v1/changes?index=%d", at), sec["viewer"], ""); !strings.Contains(out, base64.StdEncoding.EncodeToString(second.Sealed)) {
		t.Errorf("a location's delta lacks the sealed key: %s", out)
	}

	// A whole document applied keeps the keys: they are not part of it.
	if code, out := serve(api, "PUT", "/v1/document", sec["admin"], `{"regions": ["a", "b", "c"]}`); code != 200 {
		t.Fatalf("document: %d %s", code, out)
	}
	if _, ok := v.node.State().TSIGKey("xfr.test"); !ok {
		t.Fatal("applying a document dropped the TSIG keys")
	}

	// The state's JSON form (snapshots, a data-plane node's copy) keeps the sealed keys.
	var js bytes.Buffer
	if err := v.node.State().WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	back, err := state.ReadState(&js)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := back.TSIGKey("xfr.test"); !ok || !bytes.Equal(k.Sealed, stored.Sealed) {
		t.Fatalf("read back: %+v %v", k, ok)
	}

	// A voter without a seal secret refuses: the key would reach no location.
	v.node.cfg.DNSSECSecret = nil
	code, out = serve(api, "PUT", "/v1/tsig-keys/third.test", sec["admin"], body)
	if code != 422 || !strings.Contains(out, "no DNSSEC secret") || !strings.Contains(out, "-dnssec-secret-file") {
		t.Errorf("a voter without a seal secret: %d %s, want 422 saying why", code, out)
	}
	if _, ok := v.node.State().TSIGKey("third.test"); ok {
		t.Error("the refused key is stored")
	}

	if code, out := serve(api, "DELETE", "/v1/tsig-keys/xfr.test.", sec["web-team"], ""); code != 403 {
		t.Errorf("a zone-scoped token deletes a key: %d %s", code, out)
	}
	if code, out := serve(api, "DELETE", "/v1/tsig-keys/xfr.test.", sec["admin"], ""); code != 200 {
		t.Fatalf("delete: %d %s", code, out)
	}
	if code, _ := serve(api, "DELETE", "/v1/tsig-keys/xfr.test.", sec["admin"], ""); code != 404 {
		t.Errorf("delete again: %d, want 404", code)
	}
	if _, out := serve(api, "GET", "/v1/tsig-keys", sec["viewer"], ""); strings.Contains(out, "xfr.test.") || !strings.Contains(out, "second.test.") {
		t.Errorf("list after the delete: %s", out)
	}

	// A raft snapshot and a restart keep the sealed key.
	if err := v.node.Snapshot(); err != nil {
		t.Fatal(err)
	}
	c.stop(0)
	c.start(0)
	c.leader(5 * time.Second)
	waitFor(t, 5*time.Second, "the restarted voter to be ready", func() bool { return c.voters[0].node.Ready() })
	if k, ok := c.voters[0].node.State().TSIGKey("second.test"); !ok || !bytes.Equal(k.Sealed, second.Sealed) {
		t.Errorf("after a snapshot and a restart: %+v %v", k, ok)
	}
	if _, ok := c.voters[0].node.State().TSIGKey("xfr.test"); ok {
		t.Error("the deleted key came back after a restart")
	}
}

// Over mutual TLS, with real certificates: an operator's certificate puts a TSIG key; a
// location's certificate reads the sealed form (in the whole state and in a delta), a
// checker's never does, and neither ever reads the secret.
func TestTSIGKeysCertificates(t *testing.T) {
	dir := testPKI(t, "v0=control", "op=operator", "loc=location", "checker=checker")
	st := testStore(t, dir, "v0")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "https://" + ln.Addr().String()
	n, err := NewServer(ServerConfig{ID: "v0", DataDir: filepath.Join(t.TempDir(), "d"), RaftAddr: "127.0.0.1:0", RaftTLS: st, APIURL: url,
		Timing: testTiming, Allocators: newSeqAllocator, Logger: testLogger(t), DNSSECSecret: []byte(testDNSSECSecret)})
	if err != nil {
		t.Fatal(err)
	}
	api, err := NewAPI(APIConfig{Node: n, ClientCerts: st.PeerRoles})
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
	waitFor(t, 10*time.Second, "v0 leads", n.IsLeader)
	op, loc, checker := certClient(t, dir, "op"), certClient(t, dir, "loc"), certClient(t, dir, "checker")
	if code, out := doWith(t, op, "PUT", url+"/v1/document", "", "application/yaml", testDoc); code != http.StatusOK {
		t.Fatalf("document: %d %s", code, out)
	}
	at := n.State().Index
	secret := base64.StdEncoding.EncodeToString([]byte("tsig certificate test secret 0123"))
	if code, out := doWith(t, op, "PUT", url+"/v1/tsig-keys/cert-xfr.", "", "application/json", fmt.Sprintf(`{"secret": %q}`, secret)); code != http.StatusOK {
		t.Fatalf("operator's put: %d %s", code, out)
	}
	if code, out := doWith(t, checker, "PUT", url+"/v1/tsig-keys/cert-xfr.", "", "application/json", fmt.Sprintf(`{"secret": %q}`, secret)); code != http.StatusUnauthorized {
		t.Errorf("checker's put: %d %s, want 401", code, out)
	}
	k, ok := n.State().TSIGKey("cert-xfr.")
	if !ok {
		t.Fatal("the key is not stored")
	}
	sealed := base64.StdEncoding.EncodeToString(k.Sealed)
	for _, path := range []string{"/v1/state", "/v1/changes?index=0", fmt.Sprintf("/v1/changes?index=%d", at)} {
		code, out := doWith(t, loc, "GET", url+path, "", "", "")
		if code != http.StatusOK || !strings.Contains(string(out), sealed) || strings.Contains(string(out), secret) {
			t.Errorf("location's %s: %d, sealed form %v, secret %v", path, code, strings.Contains(string(out), sealed), strings.Contains(string(out), secret))
		}
		code, out = doWith(t, checker, "GET", url+path, "", "", "")
		if code != http.StatusOK || strings.Contains(string(out), sealed) || strings.Contains(string(out), secret) || !strings.Contains(string(out), "cert-xfr.") {
			t.Errorf("checker's %s: %d %s", path, code, out)
		}
	}
}
