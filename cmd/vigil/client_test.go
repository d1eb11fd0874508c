package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/internal/syncbuf"
	"github.com/vigil-dns/vigil/internal/tlsconf"
	"github.com/vigil-dns/vigil/lab/dev"
)

// clientEnv lists every variable of the client configuration: each test starts with all of
// them empty, whatever the shell running it exported.
var clientEnv = []string{envServer, envToken, envTokenFile, envCACert, envClientCert, envClientKey}

// mtlsNet is a voter whose API requires a client certificate of its CA, and the files of
// that CA: the voter's, an operator's and a checker's certificates, and another CA's.
type mtlsNet struct {
	api, pki, other string
	tokenFile       string // holds agentToken, which the voter takes too
}

// file returns the path of a file of the voter's PKI.
func (m mtlsNet) file(name string) string { return filepath.Join(m.pki, name) }

// startTLSVoter starts a voter "control-1" (a real agent node: raft, BoltDB, the API over
// TLS with the certificate store) whose control settings set changes, and returns its API URL
// once it listens.
func startTLSVoter(t *testing.T, store *tlsconf.Store, set func(*agent.ControlConfig)) string {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Roles, cfg.DataDir, cfg.HTTPAddr = "control-1", agent.RoleControl, t.TempDir(), "off"
	cfg.TLS = store
	cfg.Control.RaftAddr, cfg.Control.APIAddr, cfg.Control.Bootstrap = "127.0.0.1:0", "127.0.0.1:0", true
	cfg.Control.Timing = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
	set(&cfg.Control)
	n, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitUntil(t, 10*time.Second, "the voter's API address", func() bool { return strings.HasPrefix(n.Self().ControlAPI, "https://") })
	return n.Self().ControlAPI
}

// startMTLSVoter starts a control voter (a real node: raft, BoltDB, the API) whose API
// requires client certificates (-tls-require-client-cert) and takes agentToken, and waits
// until it has applied the demo document through an operator's certificate.
func startMTLSVoter(t *testing.T) mtlsNet {
	t.Helper()
	for _, v := range clientEnv {
		t.Setenv(v, "")
	}
	m := mtlsNet{pki: filepath.Join(t.TempDir(), "pki"), other: filepath.Join(t.TempDir(), "other")}
	var out, errb bytes.Buffer
	if code := runTLS(context.Background(), []string{"init", "-days", "30", m.pki, "control-1=control", "operator=operator", "checker=checker"}, &out, &errb); code != 0 {
		t.Fatalf("tls init: %s", errb.String())
	}
	if code := runTLS(context.Background(), []string{"init", "-days", "30", m.other, "evil=control"}, &out, &errb); code != 0 {
		t.Fatalf("tls init other: %s", errb.String())
	}
	m.tokenFile = filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(m.tokenFile, []byte("# the test's write token\n"+agentToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	store, err := tlsconf.Load(tlsconf.Files{Cert: m.file("control-1.pem"), Key: m.file("control-1-key.pem"), CA: m.file("ca.pem")}, tlsconf.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.api = startTLSVoter(t, store, func(c *agent.ControlConfig) {
		c.WriteTokens, c.RequireClientCert = []string{agentToken}, true
	})
	waitUntil(t, 15*time.Second, "the demo applied with the operator's certificate", func() bool {
		code, _, _ := vigilRun("apply", "-f", "../../examples/demo.yaml", "-server", m.api, "-timeout", "2s",
			"-tls-ca", m.file("ca.pem"), "-tls-cert", m.file("operator.pem"), "-tls-key", m.file("operator-key.pem"))
		return code == 0
	})
	return m
}

// vigilRun runs the vigil command line args.
func vigilRun(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// clientCommands are the commands that talk to the control API, as an operator runs them
// against the demo document, each with what its success prints.
var clientCommands = []struct {
	name string
	args []string
	want string
}{
	{"apply", []string{"apply", "-f", "../../examples/demo.yaml"}, "applied at index"},
	{"override set", []string{"override", "set", "-check", "web-eu-west", "-state", "unhealthy", "-reason", "maintenance", "-for", "10m"}, "set until"},
	{"override list", []string{"override", "list"}, "web-eu-west"},
	{"override clear", []string{"override", "clear", "-check", "web-eu-west"}, "cleared"},
	{"audit", []string{"audit"}, "set_override"},
	{"audit -verify", []string{"audit", "-verify"}, "OK: "},
	{"audit -refusals", []string{"audit", "-refusals"}, "refusals recorded"},
	{"dnssec keys", []string{"dnssec", "keys", "demo.vigil.test"}, "demo.vigil.test. signed: false"},
	{"load writes", []string{"load", "writes", "-writes", "2", "-duration", "5s", "-prefix", "client-test"}, "clients=1 kind=check"},
}

// TestClientSharedConfig: every command that talks to the control plane (apply, override,
// audit, dnssec, load writes, externaldns) reaches a voter that requires client
// certificates, once with the shared flags alone (-server, -token-file, -tls-ca,
// -tls-cert, -tls-key) and once with the environment variables alone (VIGIL_SERVER,
// VIGIL_TOKEN_FILE, VIGIL_CACERT, VIGIL_CLIENT_CERT, VIGIL_CLIENT_KEY); a flag overrides its
// variable. The token variables are checked with a checker's certificate, which reads
// but writes only with the token. On the code before the shared configuration, override,
// audit and dnssec refuse -tls-ca (exit 2) and every command ignores the variables.
func TestClientSharedConfig(t *testing.T) {
	m := startMTLSVoter(t)
	flags := []string{"-server", m.api, "-token-file", m.tokenFile, "-tls-ca", m.file("ca.pem"),
		"-tls-cert", m.file("operator.pem"), "-tls-key", m.file("operator-key.pem")}
	env := map[string]string{envServer: m.api, envTokenFile: m.tokenFile, envCACert: m.file("ca.pem"),
		envClientCert: m.file("operator.pem"), envClientKey: m.file("operator-key.pem")}
	setEnv := func(vars map[string]string) {
		for _, v := range clientEnv {
			t.Setenv(v, vars[v])
		}
	}
	for _, mode := range []string{"flags", "env"} {
		for _, c := range clientCommands {
			args := c.args
			if mode == "flags" {
				setEnv(nil)
				args = append(append([]string(nil), c.args...), flags...)
			} else {
				setEnv(env)
			}
			code, out, errOut := vigilRun(args...)
			if code != 0 || !strings.Contains(out, c.want) {
				t.Errorf("%s with the %s only: exit %d\n%s%s\nwant exit 0 and %q", c.name, mode, code, out, errOut, c.want)
			}
		}
		t.Run("externaldns with the "+mode, func(t *testing.T) {
			args := []string{"-listen", freePort(t), "-zone", "demo.vigil.test"}
			if mode == "flags" {
				setEnv(nil)
				args = append(args, flags...)
			} else {
				setEnv(env)
			}
			externalDNSRecords(t, args)
		})
	}

	// A flag overrides its variable: a wrong server and CA in the environment, the right
	// ones as flags.
	setEnv(map[string]string{envServer: "http://" + closedAddr(t), envCACert: filepath.Join(m.other, "ca.pem"),
		envClientCert: m.file("operator.pem"), envClientKey: m.file("operator-key.pem")})
	if code, out, errOut := vigilRun("override", "list", "-server", m.api, "-tls-ca", m.file("ca.pem")); code != 0 {
		t.Errorf("flags over variables: exit %d\n%s%s", code, out, errOut)
	}

	// The token: a checker's certificate reads, and writes only with the token of
	// VIGIL_TOKEN_FILE or VIGIL_TOKEN (without one, 401 is the control).
	checker := map[string]string{envServer: m.api, envCACert: m.file("ca.pem"),
		envClientCert: m.file("checker.pem"), envClientKey: m.file("checker-key.pem")}
	set := []string{"override", "set", "-check", "web-us-east", "-reason", "token test", "-for", "1m"}
	for _, tc := range []struct {
		name, envVar, value string
		code                int
	}{
		{"no token", "", "", 1},
		{envTokenFile, envTokenFile, m.tokenFile, 0},
		{envToken, envToken, agentToken, 0},
	} {
		vars := map[string]string{}
		for k, v := range checker {
			vars[k] = v
		}
		if tc.envVar != "" {
			vars[tc.envVar] = tc.value
		}
		setEnv(vars)
		code, out, errOut := vigilRun(set...)
		if code != tc.code {
			t.Errorf("override set with a checker's certificate and %s: exit %d, want %d\n%s%s", tc.name, code, tc.code, out, errOut)
		}
		if tc.code == 1 && !strings.Contains(errOut, "HTTP 401") {
			t.Errorf("override set with a checker's certificate and no token: %s, want HTTP 401", errOut)
		}
	}
}

// externalDNSRecords runs vigil externaldns with args and asks its webhook for the records,
// which it reads from the voter: the answer must be 200 and name the demo's www.
func externalDNSRecords(t *testing.T, args []string) {
	t.Helper()
	listen := args[1]
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncbuf.Buffer
	done := make(chan int, 1)
	go func() { done <- runExternalDNS(ctx, args, &stdout, &stderr) }()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("externaldns exit %d: %s", code, stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("vigil externaldns did not stop within 10s")
		}
	}()
	var status int
	var body []byte
	waitUntil(t, 10*time.Second, "the webhook's records", func() bool {
		resp, err := http.Get("http://" + listen + "/records")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		status = resp.StatusCode
		body, _ = io.ReadAll(resp.Body)
		return true
	})
	if status != http.StatusOK || !strings.Contains(string(body), "www.demo.vigil.test") {
		t.Errorf("GET /records: %d %s\nstderr: %s", status, body, stderr.String())
	}
}

// TestClientErrorsNameTheFix: each failure a client command meets on the way to a voter
// prints the flag or variable that fixes it, for every client command, with exit 1 for a
// failure of the network or the server and 2 for a configuration it cannot use.
func TestClientErrorsNameTheFix(t *testing.T) {
	m := startMTLSVoter(t)
	plain := plainVoter(t)
	tlsClient := []string{"-tls-ca", m.file("ca.pem"), "-tls-cert", m.file("operator.pem"), "-tls-key", m.file("operator-key.pem")}
	checkerCert := []string{"-tls-ca", m.file("ca.pem"), "-tls-cert", m.file("checker.pem"), "-tls-key", m.file("checker-key.pem")}
	missing := filepath.Join(t.TempDir(), "missing")
	cases := []struct {
		name  string
		env   map[string]string
		flags []string
		code  int
		fix   string
	}{
		{"connection refused", nil, []string{"-server", "http://" + closedAddr(t)}, 1,
			"no voter answers at http://"},
		{"a wrong token", map[string]string{envToken: "wrong-token"}, []string{"-server", plain}, 1,
			"the server refused the token (from $VIGIL_TOKEN): give -token-file or VIGIL_TOKEN"},
		{"no token", nil, append([]string{"-server", m.api}, checkerCert...), 1,
			"none was sent: give -token-file or set VIGIL_TOKEN"},
		{"an unknown CA", map[string]string{envCACert: filepath.Join(m.other, "ca.pem")}, []string{"-server", m.api}, 1,
			"give -tls-ca or set VIGIL_CACERT"},
		{"no client certificate", map[string]string{envCACert: m.file("ca.pem")}, []string{"-server", m.api}, 1,
			"a client certificate of its CA: give -tls-cert and -tls-key"},
		{"https to a plain voter", nil, []string{"-server", strings.Replace(plain, "http://", "https://", 1)}, 1,
			"the voter speaks plain HTTP: give -server http://"},
		{"http to a TLS voter", nil, []string{"-server", strings.Replace(m.api, "https://", "http://", 1)}, 1,
			"if it speaks TLS, give -server https://"},
		{"a certificate without its key", nil, []string{"-server", m.api, "-tls-ca", m.file("ca.pem"), "-tls-cert", m.file("operator.pem")}, 2,
			"give -tls-cert and -tls-key (or VIGIL_CLIENT_CERT and VIGIL_CLIENT_KEY) together"},
		{"a certificate without the CA", map[string]string{envClientCert: m.file("operator.pem"), envClientKey: m.file("operator-key.pem")}, []string{"-server", m.api}, 2,
			"$VIGIL_CLIENT_CERT needs the CA that verifies the voters: give -tls-ca or set VIGIL_CACERT"},
		{"a missing token file", map[string]string{envTokenFile: missing}, []string{"-server", m.api}, 2,
			"$VIGIL_TOKEN_FILE: tokens: open " + missing},
		{"a missing CA file", map[string]string{envCACert: missing}, []string{"-server", m.api}, 2,
			"$VIGIL_CACERT: open " + missing},
		{"a server that is no URL", nil, append([]string{"-server", "127.0.0.1:7100"}, tlsClient...), 2,
			"want a base URL such as http://127.0.0.1:7100"},
	}
	// The commands' own arguments, besides the client configuration.
	commands := map[string][]string{
		"apply":          {"apply", "-f", "../../examples/demo.yaml", "-timeout", "1s"},
		"override set":   {"override", "set", "-check", "web-eu-west", "-reason", "fix test", "-for", "1m"},
		"override list":  {"override", "list"},
		"override clear": {"override", "clear", "-check", "web-eu-west"},
		"audit":          {"audit"},
		"dnssec ds":      {"dnssec", "ds", "demo.vigil.test"},
	}
	readOnly := map[string]bool{"override list": true, "audit": true, "dnssec ds": true}
	for _, c := range cases {
		for name, args := range commands {
			if c.name == "no token" && readOnly[name] {
				continue // a checker's certificate reads without a token
			}
			for _, v := range clientEnv {
				t.Setenv(v, c.env[v])
			}
			code, out, errOut := vigilRun(append(append([]string(nil), args...), c.flags...)...)
			if code != c.code || !strings.Contains(errOut, c.fix) {
				t.Errorf("%s, vigil %s: exit %d\n%s%s\nwant exit %d and %q", c.name, name, code, out, errOut, c.code, c.fix)
			} else if name == "override list" {
				t.Logf("%s (exit %d):\n%s", c.name, code, errOut)
			}
		}
	}
	// The same fix from `vigil load writes`, whose errors are its first failed write's text,
	// and from externaldns, whose configuration errors stop it at start.
	for _, v := range clientEnv {
		t.Setenv(v, "")
	}
	if code, _, errOut := vigilRun("externaldns", "-zone", "demo.vigil.test", "-server", m.api, "-tls-cert", m.file("operator.pem")); code != 2 || !strings.Contains(errOut, "give -tls-cert and -tls-key") {
		t.Errorf("externaldns with a certificate without its key: exit %d %s", code, errOut)
	}
	if code, _, errOut := vigilRun("load", "writes", "-writes", "1", "-server", m.api, "-tls-cert", m.file("operator.pem")); code != 2 || !strings.Contains(errOut, "give -tls-cert and -tls-key") {
		t.Errorf("load writes with a certificate without its key: exit %d %s", code, errOut)
	}
	for _, c := range []struct {
		name, server, token, fix string
	}{
		{"connection refused", "http://" + closedAddr(t), agentToken, "no voter answers at http://"},
		{"a wrong token", plain, "wrong-token", "the server refused the token (from $VIGIL_TOKEN)"},
	} {
		t.Setenv(envToken, c.token)
		if code, _, errOut := vigilRun("load", "writes", "-writes", "1", "-duration", "3s", "-server", c.server); code != 1 || !strings.Contains(errOut, c.fix) {
			t.Errorf("load writes, %s: exit %d %s, want exit 1 and %q", c.name, code, errOut, c.fix)
		}
	}
}

// plainVoter starts a voter whose API is plain HTTP and takes agentToken and the named
// tokens, and returns its URL.
func plainVoter(t *testing.T, named ...control.Token) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	srv, err := control.NewServer(control.ServerConfig{ID: "plain", DataDir: filepath.Join(t.TempDir(), "data"), RaftAddr: freePort(t), APIURL: url,
		RaftSecret: []byte("cmd-test-raft-secret-00000000000"),
		Timing:     control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	if err := srv.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	api, err := control.NewAPI(control.APIConfig{Node: srv, WriteTokens: []string{agentToken}, Tokens: named})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() { _ = hs.Close() })
	waitUntil(t, 5*time.Second, "the plain voter's leadership", srv.IsLeader)
	return url
}

// TestDevPrintsExports: vigil dev prints the line that points the client commands at it,
// and that line reaches a voter at the dev control address with the dev token.
func TestDevPrintsExports(t *testing.T) {
	line := devExports(devConfigForTest())
	for _, want := range []string{"export VIGIL_SERVER=http://127.0.0.1:7700 VIGIL_TOKEN=vigil-dev;", "unset VIGIL_TOKEN_FILE VIGIL_CACERT VIGIL_CLIENT_CERT VIGIL_CLIENT_KEY"} {
		if !strings.Contains(line, want) {
			t.Errorf("vigil dev's export line %q lacks %q", line, want)
		}
	}
	var b bytes.Buffer
	printDevAddresses(&b, devConfigForTest(), "demo.yaml")
	if !strings.Contains(b.String(), line) {
		t.Errorf("vigil dev does not print its export line:\n%s", b.String())
	}
}

// devConfigForTest is vigil dev's configuration, as it prints it.
func devConfigForTest() dev.Config {
	cfg := dev.DefaultConfig()
	cfg.CheckerHTTP = dev.DefaultCheckerHTTP()
	return cfg
}
