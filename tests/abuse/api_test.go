package abuse

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/state"
)

const (
	writeToken = "abuse-write-token-7f3a9c"
	readToken  = "abuse-read-token-19b2e4"
)

// voter is one raft voter (TCP transport, BoltDB log) with its API on a real HTTP server.
type voter struct {
	node *control.Server
	api  *control.API
	base string
}

// startVoter bootstraps a one-voter cluster and serves its API on loopback until the test
// ends, with the plain write and read tokens.
func startVoter(t *testing.T) *voter {
	t.Helper()
	return startVoterWith(t, voterOptions{ReadTokens: []string{readToken}})
}

// voterOptions are what the abuse tests' voters differ in; the plain write token is always
// accepted.
type voterOptions struct {
	// ReadTokens are plain read tokens; Tokens are named tokens (namedTokens makes them).
	ReadTokens []string
	Tokens     []control.Token
	// DNSSECSecret, when set, lets the voter generate and seal zone keys.
	DNSSECSecret []byte
	// Logger is the voter's and its API's (default: logger()).
	Logger *slog.Logger
}

// startVoterWith bootstraps a one-voter cluster (TCP raft authenticated by a cluster secret,
// BoltDB log) with o, serves its API on loopback until the test ends, and returns once it
// leads and has recorded its API URL, so that a test comparing the configuration's index sees
// only the writes it makes.
func startVoterWith(t *testing.T, o voterOptions) *voter {
	t.Helper()
	raftLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := raftLn.Addr().String()
	raftLn.Close()
	apiLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + apiLn.Addr().String()
	log := o.Logger
	if log == nil {
		log = logger()
	}
	node, err := control.NewServer(control.ServerConfig{
		ID: "v0", DataDir: filepath.Join(t.TempDir(), "control"), RaftAddr: raftAddr, APIURL: base, RaftSecret: []byte("abuse-test-raft-secret-000000000"),
		Timing:       control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond},
		DNSSECSecret: o.DNSSECSecret, Logger: log,
	})
	if err != nil {
		apiLn.Close()
		t.Fatal(err)
	}
	api, err := control.NewAPI(control.APIConfig{Node: node, WriteTokens: []string{writeToken}, ReadTokens: o.ReadTokens, Tokens: o.Tokens, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(apiLn)
	t.Cleanup(func() {
		srv.Close()
		if err := node.Close(); err != nil {
			t.Logf("close voter: %v", err)
		}
	})
	if err := node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(10*time.Second, func() bool { return node.IsLeader() && node.State().Voters["v0"] == base }) {
		t.Fatal("the voter did not become leader and record its API URL")
	}
	return &voter{node: node, api: api, base: base}
}

// namedTokens makes a named token for each name and scope of pairs ({name, scope}, in
// order): the tokens a voter stores, and each one's secret and token-file line by name.
func namedTokens(t *testing.T, pairs ...[2]string) (toks []control.Token, secrets, lines map[string]string) {
	t.Helper()
	secrets, lines = map[string]string{}, map[string]string{}
	for _, nt := range pairs {
		sc, err := control.ParseScope(nt[1])
		if err != nil {
			t.Fatal(err)
		}
		secret, line, err := control.NewToken(nt[0], sc)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := control.ParseTokenLine(line)
		if err != nil {
			t.Fatal(err)
		}
		toks, secrets[nt[0]], lines[nt[0]] = append(toks, tok), secret, line
	}
	return toks, secrets, lines
}

// logIndex is the index of the last entry in the voter's raft log.
func (v *voter) logIndex(t *testing.T) uint64 {
	t.Helper()
	n, err := strconv.ParseUint(v.node.Stats()["last_log_index"], 10, 64)
	if err != nil {
		t.Fatalf("raft stats: %v", err)
	}
	return n
}

// writeReq is one write the API would apply with the write token.
type writeReq struct {
	method, path, ctype, body string
}

// credential is one way of presenting (or not) a token.
type credential struct {
	name string
	set  func(r *http.Request)
}

func credentials() []credential {
	bearer := func(v string) func(*http.Request) {
		return func(r *http.Request) { r.Header.Set("Authorization", v) }
	}
	return []credential{
		{"no token", func(*http.Request) {}},
		{"wrong token", bearer("Bearer not-the-token")},
		{"empty bearer", bearer("Bearer ")},
		{"write token truncated", bearer("Bearer " + writeToken[:len(writeToken)-1])},
		{"write token with a suffix", bearer("Bearer " + writeToken + "x")},
		{"read-only token", bearer("Bearer " + readToken)},
		{"write token without the Bearer scheme", bearer(writeToken)},
		{"write token as Basic credentials", bearer("Basic " + base64.StdEncoding.EncodeToString([]byte("vigil:"+writeToken)))},
		{"write token in the query", func(r *http.Request) {
			q := r.URL.Query()
			q.Set("token", writeToken)
			q.Set("access_token", writeToken)
			r.URL.RawQuery = q.Encode()
		}},
		{"write token in another header", func(r *http.Request) {
			r.Header.Set("X-Vigil-Token", writeToken)
			r.Header.Set("X-Auth-Token", writeToken)
		}},
		{"write token in a cookie", func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "token", Value: writeToken}) }},
		{"write token in a second Authorization header", func(r *http.Request) {
			r.Header.Add("Authorization", "Bearer wrong")
			r.Header.Add("Authorization", "Bearer "+writeToken)
		}},
	}
}

// send makes one request and returns its status code and body.
func send(t *testing.T, client *http.Client, base string, w writeReq, cred func(*http.Request)) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(w.method, base+w.path, strings.NewReader(w.body))
	if err != nil {
		t.Fatal(err)
	}
	if w.ctype != "" {
		req.Header.Set("Content-Type", w.ctype)
	}
	cred(req)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", w.method, w.path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, out
}

// TestAbuseUnauthenticatedWrites: every write route of the control API, with a write that
// would be applied, sent with no token, a wrong one, the read-only token, and the write token
// in every wrong place, over real HTTP to a raft voter with its BoltDB log. Every request must
// get a 401 or 403 with a JSON error and the raft log must not grow. The control sends the
// same writes with the write token, in an order where each is valid: they are applied.
func TestAbuseUnauthenticatedWrites(t *testing.T) {
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

	const check = `{"id": "intruder", "protocol": "http", "target": {"host": "127.0.0.1", "port": 9}}`
	const zone = `{"name": "abuse.test.", "record_sets": []}`
	const rs = `{"name": "a", "type": "A", "records": [{"value": "192.0.2.66"}]}`
	// Each route's write, in an order in which the write token applies every one.
	writes := map[string]writeReq{
		"POST /v1/checks":                                   {"POST", "/v1/checks", "application/json", check},
		"PUT /v1/checks/{id}":                               {"PUT", "/v1/checks/intruder", "application/json", check},
		"POST /v1/zones":                                    {"POST", "/v1/zones", "application/json", zone},
		"PUT /v1/zones/{zone}":                              {"PUT", "/v1/zones/abuse.test.", "application/json", zone},
		"POST /v1/zones/{zone}/record_sets":                 {"POST", "/v1/zones/abuse.test./record_sets", "application/json", rs},
		"PUT /v1/zones/{zone}/record_sets/{name}/{type}":    {"PUT", "/v1/zones/abuse.test./record_sets/a/A", "application/json", rs},
		"DELETE /v1/zones/{zone}/record_sets/{name}/{type}": {"DELETE", "/v1/zones/abuse.test./record_sets/a/A", "", ""},
		"DELETE /v1/zones/{zone}":                           {"DELETE", "/v1/zones/abuse.test.", "", ""},
		"DELETE /v1/checks/{id}":                            {"DELETE", "/v1/checks/intruder", "", ""},
		"PUT /v1/document":                                  {"PUT", "/v1/document", "application/yaml", string(demo)},
		"PUT /v1/notifications":                             {"PUT", "/v1/notifications", "application/json", `{"receivers": [{"name": "x", "url": "http://192.0.2.9/hook"}], "rules": [{"name": "r", "receivers": ["x"]}]}`},
		"POST /v1/overrides":                                {"POST", "/v1/overrides", "application/json", `{"kind": "unhealthy", "check": "web-us-east", "reason": "intruder", "for": "1h"}`},
		"DELETE /v1/overrides/{id}":                         {"DELETE", "/v1/overrides/" + state.OverrideID("web-us-east", "", "", "", ""), "", ""},
		// A rollover of a zone that does not sign: its control is that the write token gets
		// past authentication to the handler, which refuses it.
		"POST /v1/zones/{zone}/dnssec/rollover": {"POST", "/v1/zones/abuse.test./dnssec/rollover", "application/json", `{"role": "zsk"}`},
		// A join would add a voter that does not exist; its control is a body that only
		// the handler behind authentication refuses (400), and a removal of a voter that
		// does not exist (404).
		"POST /v1/cluster/voters":        {"POST", "/v1/cluster/voters", "application/json", `{"id": "intruder", "raft_address": "127.0.0.1:9"}`},
		"DELETE /v1/cluster/voters/{id}": {"DELETE", "/v1/cluster/voters/v0", "", ""},
		// TSIG keys: this voter holds no DNSSEC seal secret, so the write token gets past
		// authentication to a handler that refuses to store a key it cannot seal (422), and
		// the removal of a key that does not exist is 404.
		"PUT /v1/tsig-keys/{name}":    {"PUT", "/v1/tsig-keys/intruder.", "application/json", `{"algorithm": "hmac-sha256", "secret": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0IQ=="}`},
		"DELETE /v1/tsig-keys/{name}": {"DELETE", "/v1/tsig-keys/intruder.", "", ""},
	}
	order := []string{
		"POST /v1/checks", "PUT /v1/checks/{id}", "POST /v1/zones", "PUT /v1/zones/{zone}",
		"POST /v1/zones/{zone}/record_sets", "PUT /v1/zones/{zone}/record_sets/{name}/{type}",
		"DELETE /v1/zones/{zone}/record_sets/{name}/{type}", "DELETE /v1/zones/{zone}",
		"DELETE /v1/checks/{id}", "PUT /v1/document", "PUT /v1/notifications", "POST /v1/overrides",
		"DELETE /v1/overrides/{id}",
	}
	var routes []string
	for _, rt := range v.api.Routes() {
		if rt.Method == http.MethodGet {
			continue
		}
		key := rt.Method + " " + rt.Path
		if _, ok := writes[key]; !ok {
			t.Fatalf("write route %s has no abuse request: add one", key)
		}
		routes = append(routes, key)
	}

	const rounds = 4
	before, stateBefore := v.logIndex(t), v.node.State().Index
	attempts, through, notJSON := 0, 0, 0
	codes := map[int]int{}
	for range rounds {
		for _, cred := range credentials() {
			for _, key := range routes {
				attempts++
				code, out := send(t, client, v.base, writes[key], cred.set)
				codes[code]++
				if code != http.StatusUnauthorized && code != http.StatusForbidden {
					through++
					t.Errorf("%s with %s: %d %s", key, cred.name, code, out)
					continue
				}
				var e state.ErrorBody
				if json.Unmarshal(out, &e) != nil || e.Error == "" {
					notJSON++
				}
			}
		}
	}
	after, stateAfter := v.logIndex(t), v.node.State().Index

	// Control: the same writes with the write token are applied.
	applied := 0
	for _, key := range order {
		code, out := send(t, client, v.base, writes[key], auth)
		if code != http.StatusOK && code != http.StatusCreated {
			t.Errorf("control %s with the write token: %d %s", key, code, out)
			continue
		}
		applied++
	}
	join := writes["POST /v1/cluster/voters"]
	join.body = `{"id": "intruder"}`
	remove := writes["DELETE /v1/cluster/voters/{id}"]
	remove.path = "/v1/cluster/voters/nobody"
	for _, w := range []writeReq{join, remove} {
		if code, out := send(t, client, v.base, w, auth); code != http.StatusBadRequest && code != http.StatusNotFound {
			t.Errorf("control %s %s with the write token: %d %s, want it past authentication", w.method, w.path, code, out)
		}
	}
	if code, out := send(t, client, v.base, writes["POST /v1/zones/{zone}/dnssec/rollover"], auth); code == http.StatusUnauthorized || code == http.StatusForbidden || code/100 != 4 {
		t.Errorf("control: a rollover of a zone that does not sign, with the write token: %d %s, want it refused past authentication", code, out)
	}
	for _, key := range []string{"PUT /v1/tsig-keys/{name}", "DELETE /v1/tsig-keys/{name}"} {
		if code, out := send(t, client, v.base, writes[key], auth); code == http.StatusUnauthorized || code == http.StatusForbidden || code/100 != 4 {
			t.Errorf("control: %s with the write token on a voter without the seal secret: %d %s, want it refused past authentication", key, code, out)
		}
	}
	final := v.logIndex(t)

	t.Logf("status codes: %v; raft log %d -> %d during the attempts, %d after the control", codes, before, after, final)
	row(t, fmt.Sprintf("unauthenticated writes: the %d write routes of the control API (raft voter with BoltDB, real HTTP) × %d credentials (none, wrong, empty, truncated or extended write token, read-only token, write token without `Bearer`, as Basic, in the query, in other headers, in a cookie, as a second Authorization header)", len(routes), len(credentials())),
		fmt.Sprintf("%s requests", itoa(attempts)),
		fmt.Sprintf("applied %d (raft log index %d before and after), %d answered other than 401/403, %d without a JSON error (control: %d of %d writes applied with the write token)", after-before, before, through, notJSON, applied, len(order)))
	if after != before || stateAfter != stateBefore || through != 0 || notJSON != 0 {
		t.Errorf("got through: raft log %d -> %d, state %d -> %d, %d not refused, %d without a JSON error", before, after, stateBefore, stateAfter, through, notJSON)
	}
	if applied != len(order) || final <= after {
		t.Errorf("control: %d of %d writes applied with the write token (log %d -> %d), so the test cannot fail", applied, len(order), after, final)
	}
}
