package abuse

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/api"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/internal/syncbuf"
	"github.com/vigil-dns/vigil/internal/tlsconf"
	yaml "go.yaml.in/yaml/v3"
)

// getPaths returns every GET path of the OpenAPI document (the control API's and the
// status API's), its parameters filled in to name what the test configures.
func getPaths(t *testing.T) []string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(api.Document(), &doc); err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("{id}", "web-us-east", "{zone}", "demo.vigil.test.", "{name}", "www", "{type}", "A")
	var out []string
	for p, ops := range doc.Paths {
		if _, ok := ops["get"]; !ok {
			continue
		}
		q := fill.Replace(p)
		switch p {
		case "/v1/changes":
			out = append(out, q+"?index=0", q+"?index=1&wait=1ms")
		case "/v1/answer":
			out = append(out, q+"?name=www.demo.vigil.test.&type=A")
		default:
			out = append(out, q, q+"?consistent")
		}
	}
	slices.Sort(out)
	return out
}

// TestAbuseSecretsReadBack: the write token puts notification receivers with secrets (a
// webhook's HMAC key and the token in its URL, a Slack URL, an Alertmanager password in its
// URL) into a voter (`vigil agent -roles control` with TLS and tokens) whose leader delivers
// them; the Slack URL points at a closed port, so each delivery fails and is logged. Then
// every GET route of the API document is read from the voter with a read token, a scoped
// token, the location's certificate and a checker's, and from the location's status API;
// the location's data directory (its configuration copy and journal) and every log line of
// the voter and the location are searched for the secrets' bytes. The control: the voter's
// own data directory (its raft log) holds every secret, and net/http's error for the Slack
// delivery holds the URL, so the same search finds them where nothing redacts.
func TestAbuseSecretsReadBack(t *testing.T) {
	const (
		hmacKey   = "abuse-hmac-key-Vb81Qz"
		hookToken = "abuse-hook-token-Hx29Lm"
		slackPath = "TABUSE01/BABUSE02/abuseSlackPathJk44"
		amPass    = "abuse-am-pass-Pw55Rt"
		readTok   = "abuse-read-token-91"
	)
	secrets := []string{hmacKey, hookToken, slackPath, amPass}
	count := func(b []byte) int {
		n := 0
		for _, s := range secrets {
			n += bytes.Count(b, []byte(s)) * len(s)
		}
		return n
	}

	p := newPKI(t)
	// A stand-in location status API whose digest holds web-us-east unhealthy: the leader
	// fires the rule and delivers.
	digest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"location": "loc-x", "region": "us-east", "checks": [{"id": "web-us-east", "state": "unhealthy"}]}`)
	}))
	t.Cleanup(digest.Close)
	closedLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := closedLn.Addr().String()
	closedLn.Close()

	var voterLog, locLog syncbuf.Buffer
	scoped, line, err := control.NewToken("web-team", control.Scope{Write: true, Checks: []string{"web-"}, Zones: []string{"web.test."}})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := control.ParseTokenLine(line)
	if err != nil {
		t.Fatal(err)
	}
	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Roles, cfg.DataDir, cfg.HTTPAddr = "v0", agent.RoleControl, t.TempDir(), "off"
	cfg.TLS = p.store(t, p.dir, "v0")
	cfg.Control.RaftAddr, cfg.Control.APIAddr, cfg.Control.Bootstrap = "127.0.0.1:0", "127.0.0.1:0", true
	cfg.Control.WriteTokens, cfg.Control.ReadTokens, cfg.Control.Tokens = []string{writeToken}, []string{readTok}, []control.Token{tok}
	cfg.Control.NotifyLocations, cfg.Control.NotifyInterval = []string{digest.URL}, 200*time.Millisecond
	cfg.Control.Timing = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
	cfg.Logger = slog.New(slog.NewTextHandler(&voterLog, &slog.HandlerOptions{Level: slog.LevelDebug}))
	v := runNode(t, cfg)
	base := v.Self().ControlAPI

	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(filepath.Join(p.dir, "ca.pem"))
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("CA", err)
	}
	tokenClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	certClient := func(name string) *http.Client {
		return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: p.store(t, p.dir, name).ClientConfig(tlsconf.Peer{})}}
	}
	bearer := func(tok string) func(*http.Request) {
		return func(r *http.Request) {
			if tok != "" {
				r.Header.Set("Authorization", "Bearer "+tok)
			}
		}
	}
	demo, err := os.ReadFile("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !waitFor(15*time.Second, func() bool {
		code, _ := send(t, tokenClient, base, writeReq{"PUT", "/v1/document", "application/yaml", string(demo)}, bearer(writeToken))
		return code == http.StatusOK
	}) {
		t.Fatal("the write token does not write the demo document")
	}
	notifications := fmt.Sprintf(`{"receivers": [
  {"name": "hook", "url": "https://hooks.example.com/in/%[2]s", "secret": %[1]q},
  {"name": "chat", "kind": "slack", "url": "http://%[5]s/services/%[3]s"},
  {"name": "am", "kind": "alertmanager", "url": "https://vigil:%[4]s@alertmanager.example:9093/"}],
 "rules": [{"name": "down", "checks": ["web-us-east"], "receivers": ["chat"]}]}`, hmacKey, hookToken, slackPath, amPass, closed)
	if code, out := send(t, tokenClient, base, writeReq{"PUT", "/v1/notifications", "application/json", notifications}, bearer(writeToken)); code != http.StatusOK {
		t.Fatalf("PUT notifications: %d %s", code, out)
	}

	// The location follows with its certificate and serves its status API.
	locDir := t.TempDir()
	lcfg := agent.DefaultConfig()
	lcfg.ID, lcfg.Region, lcfg.Roles, lcfg.DataDir = "loc", "us-east", agent.RoleLocation, locDir
	lcfg.Voters, lcfg.TLS = []string{base}, p.store(t, p.dir, "loc")
	lcfg.Gossip.Bind, lcfg.Gossip.Keys = "127.0.0.1:0", [][]byte{[]byte("0123456789abcdef")}
	lcfg.DNSAddr, lcfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	lcfg.Logger = slog.New(slog.NewTextHandler(&locLog, &slog.HandlerOptions{Level: slog.LevelDebug}))
	loc, err := agent.New(lcfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := loc.MountStatus(nil); err != nil {
		t.Fatal(err)
	}
	runStarted(t, loc)
	if !waitFor(15*time.Second, func() bool { return loc.ConfigInfo().Zones == 1 }) {
		t.Fatalf("the location does not follow the voter: %+v", loc.ConfigInfo())
	}
	// A change after the location has its copy reaches it as a delta (its journal).
	changed := strings.Replace(notifications, `"down"`, `"down-2"`, 1)
	if code, out := send(t, tokenClient, base, writeReq{"PUT", "/v1/notifications", "application/json", changed}, bearer(writeToken)); code != http.StatusOK {
		t.Fatalf("PUT notifications again: %d %s", code, out)
	}
	// The leader delivers to the Slack URL and fails, at least twice.
	if !waitFor(20*time.Second, func() bool {
		return bytes.Count(voterLog.Bytes(), []byte("notify: delivery failed")) >= 2
	}) {
		t.Fatalf("no failed Slack delivery logged:\n%s", voterLog.Bytes())
	}
	time.Sleep(500 * time.Millisecond) // the location takes the second change

	statusBase := "http://" + loc.HTTPAddr()
	readers := []struct {
		name, base string
		c          *http.Client
		cred       func(*http.Request)
	}{
		{"the voter's API with a read token", base, tokenClient, bearer(readTok)},
		{"the voter's API with a scoped token", base, tokenClient, bearer(scoped)},
		{"the voter's API with the location's certificate", base, certClient("loc"), bearer("")},
		{"the voter's API with a checker's certificate", base, certClient("checker"), bearer("")},
		{"the location's status API", statusBase, &http.Client{Timeout: 10 * time.Second}, bearer("")},
	}
	paths := getPaths(t)
	reads, answered, found := 0, 0, 0
	var where []string
	for _, r := range readers {
		for _, path := range paths {
			code, body := send(t, r.c, r.base, writeReq{"GET", path, "", ""}, r.cred)
			reads++
			if code == http.StatusOK {
				answered++
			}
			if n := count(body); n > 0 {
				found += n
				where = append(where, fmt.Sprintf("%s GET %s: %d bytes", r.name, path, n))
			}
		}
	}
	files, fileBytes := 0, 0
	err = filepath.WalkDir(locDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		fileBytes += len(b)
		if n := count(b); n > 0 {
			found += n
			where = append(where, fmt.Sprintf("the location's file %s: %d bytes", filepath.Base(path), n))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(locDir, "config.json")); err != nil {
		t.Fatalf("the location keeps no configuration copy: %v", err)
	}
	logs := append(voterLog.Bytes(), locLog.Bytes()...)
	if n := count(logs); n > 0 {
		found += n
		where = append(where, fmt.Sprintf("the logs: %d bytes", n))
	}

	// The controls: the voter's data directory holds every secret (its raft log: the secrets
	// are stored, and only the voters hold them), and net/http's own error for the Slack
	// delivery says the whole URL.
	stored := 0
	_ = filepath.WalkDir(cfg.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(path); err == nil {
				stored += count(b)
			}
		}
		return nil
	})
	_, rawErr := http.Post("http://"+closed+"/services/"+slackPath, "application/json", strings.NewReader("{}"))
	rawLog := 0
	if rawErr != nil {
		rawLog = count([]byte(rawErr.Error()))
	}
	failed := bytes.Count(voterLog.Bytes(), []byte("notify: delivery failed"))
	row(t, "notification secrets (webhook HMAC key, webhook URL token, Slack URL, Alertmanager password; 4 secrets, "+itoa(len(strings.Join(secrets, "")))+" bytes) read back after the write token set them: every GET route of the API document from the voter with a read token, a scoped token, the location's certificate and a checker's, and from the location's status API; the location's data directory; the voter's and location's logs with "+plural(failed, "failed Slack delivery attempt")+" logged",
		plural(reads, "read")+" ("+itoa(answered)+" answered 200), "+plural(files, "file")+" ("+itoa(fileBytes)+" bytes), "+itoa(len(logs))+" log bytes",
		itoa(found)+" secret bytes found; control: the voter's data directory (raft log) holds "+itoa(stored)+" secret bytes and net/http's error for the Slack delivery "+itoa(rawLog))
	if found != 0 {
		t.Errorf("secrets read back:\n%s", strings.Join(where, "\n"))
	}
	if stored == 0 || rawLog == 0 {
		t.Errorf("control: the voter's data directory holds %d secret bytes, net/http's error %d: the search would find nothing", stored, rawLog)
	}
	if answered < 4*20 {
		t.Errorf("only %d reads answered 200: the routes were not read", answered)
	}
}

// runStarted runs the node n (made by agent.New) until the test ends.
func runStarted(t *testing.T, n *agent.Node) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}
