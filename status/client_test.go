package status

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/checker"
)

// TestClientTables reads every view through the client from a real HTTP server and prints it
// as `vigil status` does.
func TestClientTables(t *testing.T) {
	loc := newTestLocation(t)
	demoScenario(loc)
	a, _, _ := newTestAPI(t, loc, nil)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	c, err := NewClient(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	out := writeTables(t, c)
	for _, want := range []string{
		"location loc-us (us-east), 4 checks",
		"CHECK         STATE      SINCE   HEALTHY/FRESH  STALE  RULE       EU-WEST        SA-EAST        US-EAST",
		"web-eu-west   unhealthy  0s ago  0/6            0      threshold  unhealthy 0/2  unhealthy 0/2  unhealthy 0/2",
		"web-sa-east   unknown    0s ago  0/0            2      short      -              stale (2)      -",
		"web-us-east   healthy    0s ago  4/4            0      threshold  healthy 2/2    unknown        healthy 2/2",
		"web-majority  healthy    0s ago  2/3 children",
		"check web-eu-west: unhealthy since 2026-11-30T12:00:00Z",
		"0 of 6 fresh reports are healthy (0%), not more than the 18% threshold: unhealthy",
		"ap-9",
		"never heard",
		"sa-3     sa-east  stale  1m0s ago       55s ago",
		"us-1     us-east  unhealthy    status: HTTP 503  12ms     1s ago      counted unhealthy",
		"1  198.51.100.1  web-eu-west  unhealthy  secondary    yes       no",
		"www.demo.vigil.test. A: failover policy, rule primary",
		"answer: 192.0.2.1",
		"configuration: running from the copy on disk (index 42): no voter has answered yet\n",
		"version test-1.2.3",
		"loc-us  us-east  location  127.0.0.1:7960  alive",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}

	checkClientErrors(t, c)
	for _, bad := range []string{"", "http://", "::nope"} {
		if _, err := NewClient(bad); err == nil {
			t.Errorf("NewClient(%q): no error", bad)
		}
	}
}

// writeTables reads every view of the location through c and writes it as `vigil status` does.
func writeTables(t *testing.T, c *Client) string {
	t.Helper()
	ctx := context.Background()
	var b bytes.Buffer

	l, err := c.Verdicts(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteVerdicts(&b, l, t0); err != nil {
		t.Fatal(err)
	}
	e, err := c.Check(ctx, "web-eu-west")
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCheck(&b, e, t0); err != nil {
		t.Fatal(err)
	}
	hs, err := c.Checkers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteCheckers(&b, hs, t0); err != nil {
		t.Fatal(err)
	}
	an, err := c.Answer(ctx, "www.demo.vigil.test", "A")
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteAnswer(&b, an); err != nil {
		t.Fatal(err)
	}
	n, err := c.Node(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := c.Members(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteMembers(&b, n, ms); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// checkClientErrors checks that the API's errors reach the client's caller.
func checkClientErrors(t *testing.T, c *Client) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Check(ctx, "nope"); err == nil || !strings.Contains(err.Error(), `no check "nope" at this location (HTTP 404)`) {
		t.Errorf("unknown check: %v", err)
	}
	if _, err := c.Answer(ctx, "www.demo.vigil.test", "NOPE"); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
		t.Errorf("bad type: %v", err)
	}
	if _, err := c.Probes(ctx); err == nil || !strings.Contains(err.Error(), "not a checker") {
		t.Errorf("probes of a location: %v", err)
	}
}

// TestCleanCells: a message with control characters cannot break a table or a terminal.
func TestCleanCells(t *testing.T) {
	var b bytes.Buffer
	l := ProbeList{Checker: "c\x1b[31m", Self: checker.SelfHealth{Healthy: true}, Probes: []ProbeStatus{{Check: "x", Target: "h:1", Protocol: "tcp",
		Status: "unhealthy", Last: &ProbeResult{Reason: "error", Message: "bad\ttab\nnewline\x1b]0;title\x07"}}}}
	if err := WriteProbes(&b, l, t0); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\x1b\x07") || strings.Count(b.String(), "\n") != 3 {
		t.Errorf("control characters leaked:\n%q", b.String())
	}
}

// TestClientDigest: the digest the network view, the verifier and the notifier read through
// the client is the one the location serves; a location that fails is shown in the network
// view as unreachable, answering an HTTP error, or serving what is not a digest.
func TestClientDigest(t *testing.T) {
	loc := newTestLocation(t)
	demoScenario(loc)
	a, _, _ := newTestAPI(t, loc, nil)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)
	d, err := (&Client{Base: srv.URL + "/"}).Digest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := a.digest(); d.Location != want.Location || len(d.Checks) != len(want.Checks) || len(d.Checks) == 0 {
		t.Errorf("digest of %s with %d checks, want %s with %d", d.Location, len(d.Checks), want.Location, len(want.Checks))
	}
	if _, err := (&Client{Base: srv.URL, MaxBytes: 64}).Digest(context.Background()); err == nil {
		t.Error("a digest over MaxBytes was read")
	}

	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(failing.Close)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("{not json"))
	}))
	t.Cleanup(garbage.Close)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	n := &network{opts: NetworkOptions{Client: &http.Client{}}}
	for base, want := range map[string]string{
		failing.URL: "its status API answered HTTP 503",
		garbage.URL: "reading its digest: invalid character 'n' looking for beginning of object key string",
		gone.URL:    "unreachable: Get \"" + gone.URL + "/v1/network/digest\": dial tcp",
	} {
		if _, err := n.fetchOne(context.Background(), base); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %s…", base, err, want)
		}
	}
}
