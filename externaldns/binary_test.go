package externaldns

import (
	"context"
	"encoding/gob"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
)

// externalDNSVersion is the ExternalDNS release the test builds: the newest the module proxy
// serves that this toolchain builds (v0.23.0 needs Go 1.27).
const externalDNSVersion = "v0.20.0"

// externalDNS returns the path of a real external-dns binary: $VIGIL_EXTERNAL_DNS, or one
// built from its Go module (sigs.k8s.io/external-dns) into the user's cache directory, once;
// the test skips, saying why, when it cannot be built here.
func externalDNS(t *testing.T) string {
	t.Helper()
	switch p := os.Getenv("VIGIL_EXTERNAL_DNS"); p {
	case "":
	case "none":
		t.Skip("VIGIL_EXTERNAL_DNS=none: no external-dns binary here (.ci/run says so when its build failed)")
	default:
		return p
	}
	if testing.Short() {
		t.Skip("-short: building external-dns takes minutes")
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Skipf("no cache directory to build external-dns into: %v", err)
	}
	dir := filepath.Join(cache, "vigil-test", "external-dns-"+externalDNSVersion)
	bin := filepath.Join(dir, "external-dns")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build external-dns with")
	}
	// The build takes minutes (ExternalDNS links every cloud provider's SDK: 7m45s with its
	// modules downloaded, on a quiet 2-core machine): it gets at most 10 minutes, and no more
	// than what is left of the test's deadline but a minute for the test itself.
	limit := 10 * time.Minute
	if d, ok := t.Deadline(); ok {
		limit = min(limit, time.Until(d)-time.Minute)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, gobin, "install", "sigs.k8s.io/external-dns@"+externalDNSVersion)
	cmd.Env = append(os.Environ(), "GOBIN="+dir)
	out, err := cmd.CombinedOutput()
	switch {
	case ctx.Err() != nil:
		t.Skipf("building external-dns %s took more than %v; give the first run a longer -timeout (the binary is kept in %s)", externalDNSVersion, limit.Round(time.Second), dir)
	case err != nil:
		t.Skipf("external-dns %s cannot be built here: %v\n%s", externalDNSVersion, err, lastLines(string(out), 10))
	}
	return bin
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// runExternalDNS runs one synchronisation of external-dns (--once) against the provider at
// url with the source args, and returns its log.
func runExternalDNS(t *testing.T, bin, url string, source ...string) string {
	t.Helper()
	metrics, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := metrics.Addr().String()
	metrics.Close()
	args := append([]string{"--provider=webhook", "--webhook-provider-url=" + url, "--registry=txt",
		"--txt-owner-id=vigil-test", "--once", "--log-level=debug", "--metrics-address=" + addr}, source...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("external-dns %s: %v\n%s", strings.Join(source, " "), err, lastLines(string(out), 30))
	}
	return string(out)
}

// connector is the TCP server of ExternalDNS's connector source: each connection gets the
// endpoints, gob-encoded (gob matches ExternalDNS's endpoint.Endpoint by field names).
type connector struct {
	ln   net.Listener
	eps  chan []*Endpoint
	cur  []*Endpoint
	done chan struct{}
}

func startConnector(t *testing.T, eps []*Endpoint) *connector {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &connector{ln: ln, eps: make(chan []*Endpoint, 1), cur: eps, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case c.cur = <-c.eps:
			default:
			}
			_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
			_ = gob.NewEncoder(conn).Encode(c.cur)
			conn.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-c.done })
	return c
}

// set makes the next connection get eps.
func (c *connector) set(eps []*Endpoint) { c.eps <- eps }

// The real external-dns, built from its module, drives record sets into a running Vigil
// through the provider, from sources that need no cluster. Its fake source's records carry a
// set identifier, which Vigil does not store: the provider leaves them out at adjustment and
// nothing is written. Its connector source (endpoints from a TCP server of the test) brings a
// plain record set, a CNAME and a health-checked record set (annotation properties): they are
// created with their ownership records and checks; a second run finds everything up to date;
// a third, without the health-checked endpoint, deletes it and its checks.
func TestRealExternalDNS(t *testing.T) {
	bin := externalDNS(t)
	v := startVigil(t)
	p := startProvider(t, v)
	count := func() int {
		n := 0
		for range v.node.State().RecordSets("ext.example.test") {
			n++
		}
		return n
	}

	out := runExternalDNS(t, bin, p.URL, "--source=fake", "--fqdn-template=ext.example.test")
	if n := count(); n != 0 || !strings.Contains(out, "up to date") {
		t.Fatalf("the fake source's set-identifier records: %d record sets written\n%s", n, lastLines(out, 10))
	}

	web := &Endpoint{DNSName: "web.ext.example.test", RecordType: "A", Targets: []string{"192.0.2.1", "192.0.2.2"},
		ProviderSpecific: []ProviderSpecific{{Name: PropHealthCheck, Value: "https"}, {Name: PropHealthPath, Value: "/ready"}}}
	api := &Endpoint{DNSName: "api.ext.example.test", RecordType: "A", Targets: []string{"192.0.2.10"}, RecordTTL: 120}
	docs := &Endpoint{DNSName: "docs.ext.example.test", RecordType: "CNAME", Targets: []string{"web.ext.example.test"}}
	conn := startConnector(t, []*Endpoint{web, api, docs})
	source := []string{"--source=connector", "--connector-source-server=" + conn.ln.Addr().String()}
	out = runExternalDNS(t, bin, p.URL, source...)
	rs, ok := v.recordSet("web", "A")
	if !ok || rs.Policy != config.PolicyMultivalue || len(rs.Records) != 2 {
		t.Fatalf("web A: %+v %v\n%s", rs, ok, lastLines(out, 20))
	}
	for _, r := range rs.Records {
		if c, ok := v.node.State().Check(r.HealthCheck); !ok || c.Protocol != config.ProtocolHTTPS || c.Path != "/ready" || c.Target.Port != 443 {
			t.Fatalf("check of %s: %+v", r.Value, c)
		}
	}
	if a, ok := v.recordSet("api", "A"); !ok || a.Policy != config.PolicySimple || *a.TTL != 120 {
		t.Fatalf("api A: %+v %v", a, ok)
	}
	if c, ok := v.recordSet("docs", "CNAME"); !ok || c.Records[0].Value != "web.ext.example.test." {
		t.Fatalf("docs CNAME: %+v %v", c, ok)
	}
	owners := 0
	for rs := range v.node.State().RecordSets("ext.example.test") {
		if rs.Type == config.TypeTXT && strings.Contains(rs.Records[0].Value, "external-dns/owner=vigil-test") {
			owners++
		}
	}
	if owners < 3 {
		t.Fatalf("ownership TXT records: %d, want one or more for each of 3 endpoints", owners)
	}

	conn.set([]*Endpoint{web, api, docs})
	out = runExternalDNS(t, bin, p.URL, source...)
	if !strings.Contains(out, "up to date") || strings.Contains(out, "Desired change") {
		t.Errorf("a second run with the same endpoints planned changes:\n%s", lastLines(out, 20))
	}
	t.Logf("second run: %s", lastLines(out, 1))

	conn.set([]*Endpoint{api, docs})
	runExternalDNS(t, bin, p.URL, source...)
	if _, ok := v.recordSet("web", "A"); ok {
		t.Fatal("web A survived the sync that dropped it")
	}
	for _, r := range rs.Records {
		if _, ok := v.node.State().Check(r.HealthCheck); ok {
			t.Errorf("check %s survived its record set", r.HealthCheck)
		}
	}
	if _, ok := v.recordSet("api", "A"); !ok {
		t.Error("api A went with web")
	}
}
