package abuse

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

const tlsDoc = `regions: [us-east]
zones:
  - name: tls.test.
    record_sets:
      - {name: www, type: A, records: [{value: 192.0.2.1}]}
`

// runNode starts a node and stops it when the test ends.
func runNode(t *testing.T, cfg agent.Config) *agent.Node {
	t.Helper()
	n, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return n
}

// tlsVoter runs `vigil agent -roles control` with mutual TLS and no token at all: only
// certificates of the CA get in.
func tlsVoter(t *testing.T, p pkiSet) *agent.Node {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Roles, cfg.DataDir, cfg.HTTPAddr = "v0", agent.RoleControl, t.TempDir(), "off"
	cfg.TLS = p.store(t, p.dir, "v0")
	cfg.Control.RaftAddr, cfg.Control.APIAddr, cfg.Control.Bootstrap = "127.0.0.1:0", "127.0.0.1:0", true
	cfg.Control.Timing = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
	cfg.Logger = logger()
	return runNode(t, cfg)
}

// follower runs a location that follows the voter at api, with tlsStore's certificate, or
// with none (then client is its HTTP client).
func follower(t *testing.T, id, api string, store *tlsconf.Store, client *http.Client) *agent.Node {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = id, "us-east", agent.RoleLocation, t.TempDir()
	cfg.Voters, cfg.TLS, cfg.WatcherClient = []string{api}, store, client
	cfg.Gossip.Bind, cfg.Gossip.Keys = "127.0.0.1:0", [][]byte{[]byte("0123456789abcdef")}
	cfg.DNSAddr, cfg.HTTPAddr = "127.0.0.1:0", "off"
	cfg.Logger = logger()
	return runNode(t, cfg)
}

// TestAbuseAPIClientCerts: a voter whose API takes only client certificates (no token is
// configured) is sent zone writes with an operator certificate of another CA, an expired
// operator certificate of its CA, a checker's certificate of its CA (it may read, not
// write), no certificate, and in plaintext with a made-up token; a location without a
// certificate tries to follow it. The controls: an operator certificate's writes are
// applied, and a location with its certificate follows the voter over TLS.
func TestAbuseAPIClientCerts(t *testing.T) {
	p := newPKI(t)
	v := tlsVoter(t, p)
	api := v.Self().ControlAPI
	if !strings.HasPrefix(api, "https://") {
		t.Fatalf("the voter's API is %s, not https", api)
	}
	opClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: p.store(t, p.dir, "op").ClientConfig(tlsconf.Peer{})}}
	if !waitFor(15*time.Second, func() bool {
		code, _ := send(t, opClient, api, writeReq{"PUT", "/v1/document", "application/yaml", tlsDoc}, func(*http.Request) {})
		return code == http.StatusOK
	}) {
		t.Fatal("the operator's certificate does not write")
	}
	const tries = 20
	client := func(cfg *tls.Config) *http.Client {
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
	}
	plainAPI := "http://" + strings.TrimPrefix(api, "https://")
	attacks := []struct {
		row, base string
		c         *http.Client
	}{
		{"an operator certificate of another CA", api, client(attacker(t, p.other, "evil-op"))},
		{"an expired operator certificate of the voters' CA (expired 1h59m ago)", api, client(attacker(t, p.dir, "expired-op"))},
		{"a checker's certificate of the voters' CA (reads only)", api, client(attacker(t, p.dir, "checker"))},
		{"no certificate", api, client(&tls.Config{InsecureSkipVerify: true})}, //nolint:gosec // the attacker's side
		{"plaintext HTTP to the TLS API port, with a bearer token", plainAPI, client(nil)},
	}
	for k, a := range attacks {
		codes := map[int]int{}
		for i := range tries {
			body := fmt.Sprintf(`{"name": "attack-%d-%d.test.", "record_sets": []}`, k, i)
			code := trySend(a.c, a.base, "POST", "/v1/zones", body, "made-up-token")
			codes[code]++
		}
		applied := 0
		for i := range tries {
			code, _ := send(t, opClient, api, writeReq{"GET", fmt.Sprintf("/v1/zones/attack-%d-%d.test.", k, i), "", ""}, func(*http.Request) {})
			if code == http.StatusOK {
				applied++
			}
		}
		row(t, "control API writes (POST /v1/zones) to a voter that takes client certificates and no token, with "+a.row,
			plural(tries, "request"), itoa(applied)+" applied; answers "+answerCodes(codes))
		if applied != 0 || codes[http.StatusCreated] != 0 {
			t.Errorf("%s: %d applied, answers %v", a.row, applied, codes)
		}
	}
	// A location without a certificate: it trusts the CA, has no token, and asks for the
	// configuration; one with its certificate follows.
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(p.dir, "ca.pem"))
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA", err)
	}
	anon := follower(t, "loc-anon", api, nil, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}})
	good := follower(t, "loc", api, p.store(t, p.dir, "loc"), nil)
	if !waitFor(15*time.Second, func() bool { return good.ConfigInfo().Zones == 1 }) {
		t.Fatalf("control: the location with its certificate did not follow the voter: %+v", good.ConfigInfo())
	}
	time.Sleep(time.Second)
	ci := anon.ConfigInfo()
	row(t, "a location without a certificate (trusting the CA, no token) follows a voter that takes client certificates",
		"1 location, "+time.Second.String()+" after the certified one had the configuration",
		itoa(ci.Zones)+" zones received (watcher: "+strings.Join(strings.Fields(ci.LastError), " ")+"); control, a location with its certificate: "+itoa(good.ConfigInfo().Zones)+" zone")
	if ci.Zones != 0 || ci.Source == state.SourceControlPlane {
		t.Errorf("the location without a certificate got the configuration: %+v", ci)
	}
	// The control of the writes: an operator's certificate writes.
	for i := range tries {
		body := fmt.Sprintf(`{"name": "op-%d.test.", "record_sets": []}`, i)
		if code, out := send(t, opClient, api, writeReq{"POST", "/v1/zones", "application/json", body}, func(*http.Request) {}); code != http.StatusCreated {
			t.Fatalf("control: the operator's write %d: %d %s", i, code, out)
		}
	}
	t.Logf("control: %d of %d writes with the operator's certificate applied", tries, tries)
}

// answerCodes writes the count of each status code, 0 standing for no answer.
func answerCodes(codes map[int]int) string {
	var parts []string
	for code, n := range codes {
		what := fmt.Sprint(code)
		if code == 0 {
			what = "no HTTP answer (handshake refused)"
		}
		parts = append(parts, itoa(n)+" "+what)
	}
	return strings.Join(parts, ", ")
}

// trySend sends one request and returns its status code, 0 when no HTTP answer came.
func trySend(c *http.Client, base, method, path, body, token string) int {
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestAPIRequireClientCert: with RequireClientCert (-tls-require-client-cert) a client
// without a certificate is refused at the handshake even with the write token; one with a
// certificate still needs what its role allows.
func TestAPIRequireClientCert(t *testing.T) {
	p := newPKI(t)
	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Roles, cfg.DataDir, cfg.HTTPAddr = "v0", agent.RoleControl, t.TempDir(), "off"
	cfg.TLS = p.store(t, p.dir, "v0")
	cfg.Control.RaftAddr, cfg.Control.APIAddr, cfg.Control.Bootstrap = "127.0.0.1:0", "127.0.0.1:0", true
	cfg.Control.WriteTokens, cfg.Control.RequireClientCert = []string{writeToken}, true
	cfg.Control.Timing = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
	cfg.Logger = logger()
	api := runNode(t, cfg).Self().ControlAPI
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(p.dir, "ca.pem"))
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA", err)
	}
	anon := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	op := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: p.store(t, p.dir, "op").ClientConfig(tlsconf.Peer{})}}
	checker := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: p.store(t, p.dir, "checker").ClientConfig(tlsconf.Peer{})}}
	if !waitFor(15*time.Second, func() bool {
		return trySend(op, api, "POST", "/v1/zones", `{"name": "op.test.", "record_sets": []}`, "") == http.StatusCreated
	}) {
		t.Fatal("the operator's certificate does not write")
	}
	if code := trySend(anon, api, "POST", "/v1/zones", `{"name": "anon.test.", "record_sets": []}`, writeToken); code != 0 {
		t.Errorf("a client without a certificate, with the write token: HTTP %d, want the handshake refused", code)
	}
	if code := trySend(checker, api, "POST", "/v1/zones", `{"name": "chk.test.", "record_sets": []}`, "made-up"); code != http.StatusUnauthorized {
		t.Errorf("a checker's certificate writing: HTTP %d, want 401", code)
	}
	if code := trySend(checker, api, "POST", "/v1/zones", `{"name": "chk2.test.", "record_sets": []}`, writeToken); code != http.StatusCreated {
		t.Errorf("a checker's certificate with the write token: HTTP %d, want 201 (the token adds to the certificate)", code)
	}
}
