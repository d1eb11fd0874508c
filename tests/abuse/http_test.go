package abuse

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/internal/httpguard"
)

// controlAgent runs a node as `vigil agent --roles control` with an HTTP listener does: a raft
// voter (TCP transport, BoltDB) and its API behind the node's own outer router and servers,
// and the node's HTTP listener (/metrics, /healthz, /readyz).
type controlAgent struct {
	api, http string // base URLs
	node      *agent.Node
}

func startAgent(t *testing.T, limits httpguard.Limits) *controlAgent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	raftAddr := ln.Addr().String()
	ln.Close()
	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Roles, cfg.DataDir = "agent", agent.RoleControl, t.TempDir()
	cfg.HTTPAddr, cfg.HTTPLimits = "127.0.0.1:0", limits
	cfg.Control.RaftAddr, cfg.Control.APIAddr = raftAddr, "127.0.0.1:0"
	cfg.Control.Bootstrap, cfg.Control.WriteTokens, cfg.Control.ReadTokens = true, []string{writeToken}, []string{readToken}
	cfg.Control.Timing = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
	cfg.Logger = logger()
	n, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	a := &controlAgent{api: n.Self().ControlAPI, http: "http://" + n.HTTPAddr(), node: n}
	client := &http.Client{Timeout: 5 * time.Second}
	if !waitFor(15*time.Second, func() bool {
		code, _ := send(t, client, a.api, writeReq{"POST", "/v1/zones", "application/json", `{"name": "ready.test.", "record_sets": []}`}, bearer(writeToken))
		return code == http.StatusCreated
	}) {
		t.Fatal("the agent's voter does not accept writes")
	}
	return a
}

func bearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

// dotPaths are paths with "." and ".." segments, plain and encoded, and empty segments, that
// a router that cleans paths turns into the zone victim.test. or another of its resources.
func dotPaths() []string {
	z := "/v1/zones/victim.test."
	return []string{
		z + "/record_sets/www/..", z + "/record_sets/www/../..", z + "/record_sets/www/A/../../..",
		z + "/record_sets/www/./../..", z + "/record_sets/www/%2e%2e/%2e%2e", z + "/record_sets/www/.%2e/%2E.",
		z + "/record_sets//..", z + "//record_sets/www/A/../../..", z + "/./record_sets/www/A",
		"/v1/zones/victim.test./record_sets/www/A/..%2f..%2f..", z + "/record_sets/www/A/..\\..\\..",
		"/v1/zones/x/../victim.test.", "//v1/zones/victim.test.",
	}
}

// zoneExists asks base whether the zone victim.test. is there with its record set www A.
func zoneExists(t *testing.T, client *http.Client, base string) bool {
	t.Helper()
	code, _ := send(t, client, base, writeReq{"GET", "/v1/zones/victim.test./record_sets/www/A", "", ""}, bearer(readToken))
	return code == http.StatusOK
}

// makeVictim creates the zone victim.test. with a record set www A.
func makeVictim(t *testing.T, client *http.Client, base string) {
	t.Helper()
	code, out := send(t, client, base, writeReq{"POST", "/v1/zones", "application/json",
		`{"name": "victim.test.", "record_sets": [{"name": "www", "type": "A", "records": [{"value": "192.0.2.7"}]}]}`}, bearer(writeToken))
	if code != http.StatusCreated {
		t.Fatalf("create victim.test.: %d %s", code, out)
	}
}

// TestAbuseDotSegmentsThroughAgent: with the write token and a client that follows
// redirects (Go's, as curl -L), DELETEs and PUTs on paths whose "." and ".." segments
// resolve to the zone victim.test. are sent to the agent's control API (the node's own
// outer router and server, a raft voter behind it) and to its HTTP listener. Every request
// must get a 400, and the zone must stay. The control sends the same DELETEs through the
// agent's earlier wiring (an http.ServeMux in front of the API), which redirects them
// (307) to the zone and deletes it.
func TestAbuseDotSegmentsThroughAgent(t *testing.T) {
	a := startAgent(t, httpguard.Limits{})
	client := &http.Client{Timeout: 5 * time.Second} // follows redirects, keeping method and token
	makeVictim(t, client, a.api)
	sent, refused := 0, 0
	codes := map[int]int{}
	for _, base := range []string{a.api, a.http} {
		for _, p := range dotPaths() {
			for _, w := range []writeReq{{"DELETE", p, "", ""}, {"PUT", p, "application/json", `{"name": "victim.test.", "record_sets": []}`}} {
				sent++
				code, _ := send(t, client, base, w, bearer(writeToken))
				codes[code]++
				if code == http.StatusBadRequest {
					refused++
				}
			}
		}
	}
	kept := zoneExists(t, client, a.api)

	// Control: the earlier wiring, a ServeMux in front of the API of another voter.
	v := startVoter(t)
	mux := http.NewServeMux()
	mux.Handle("/", v.api)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	old := "http://" + ln.Addr().String()
	makeVictim(t, client, v.base)
	deleted := 0
	for _, p := range dotPaths()[:3] {
		if !zoneExists(t, client, v.base) {
			makeVictim(t, client, v.base)
		}
		send(t, client, old, writeReq{"DELETE", p, "", ""}, bearer(writeToken))
		if !zoneExists(t, client, v.base) {
			deleted++
		}
	}

	t.Logf("status codes: %v", codes)
	row(t, fmt.Sprintf("dot segments through the agent: DELETE and PUT with the write token on %d paths whose `.`/`..` segments (plain, percent-encoded, with empty segments or backslashes) resolve to the zone victim.test., to the agent's control API and its HTTP listener, by a client that follows redirects", len(dotPaths())),
		fmt.Sprintf("%d requests", sent),
		fmt.Sprintf("zones deleted or replaced 0 (victim.test. and its www A still there: %v); %d of %d answered 400 (control, the earlier wiring with a ServeMux in front of the API: %d of 3 DELETEs redirected to the zone and deleted it)", kept, refused, sent, deleted))
	if !kept || refused != sent {
		t.Errorf("got through: zone kept %v, %d of %d refused with 400", kept, refused, sent)
	}
	if deleted == 0 {
		t.Error("control: no DELETE deleted the zone through the earlier wiring, so the test cannot fail")
	}
}

// drip opens a connection to addr, sends head, then one byte every interval (of a chunked
// body, or of a header value when head ends in a header name), and returns how long the
// server kept the connection open (at most within).
func drip(addr, head string, interval, within time.Duration) time.Duration {
	each := "1\r\nx\r\n"
	if strings.HasSuffix(head, ": ") {
		each = "a"
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetDeadline(start.Add(within))
	if _, err := io.WriteString(c, head); err != nil {
		return time.Since(start)
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		_, _ = io.Copy(io.Discard, bufio.NewReader(c)) // until the server closes, or within
	}()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-closed:
			return time.Since(start)
		case <-tick.C:
			if _, err := io.WriteString(c, each); err != nil {
				<-closed
				return time.Since(start)
			}
		}
	}
}

// TestAbuseSlowBodies: clients drip a request body, one byte every 200 ms, at the agent's
// control API (no token) and at its HTTP listener, and others drip a request header; the
// agent runs with a body and header timeout of 1 s (flags -http-body-timeout,
// -http-header-timeout; default 30 s and 10 s). Every connection must be closed within 2.5 s.
// Meanwhile a legitimate client's write is applied. The control drips at an http.Server
// without the limits (the earlier wiring), which keeps every connection open for the whole
// 5 s.
func TestAbuseSlowBodies(t *testing.T) {
	const (
		perTarget = 10
		interval  = 200 * time.Millisecond
		within    = 5 * time.Second
		bound     = 2500 * time.Millisecond
	)
	a := startAgent(t, httpguard.Limits{HeaderTimeout: time.Second, BodyTimeout: time.Second})
	host := func(base string) string { return strings.TrimPrefix(base, "http://") }
	body := "Transfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n"
	targets := map[string]string{
		"control API, body":    host(a.api) + "|POST /v1/checks HTTP/1.1\r\nHost: x\r\n" + body,
		"control API, header":  host(a.api) + "|POST /v1/checks HTTP/1.1\r\nHost: x\r\nX-Slow: ",
		"HTTP listener, body":  host(a.http) + "|POST /healthz HTTP/1.1\r\nHost: x\r\n" + body,
		"HTTP listener header": host(a.http) + "|GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ",
	}
	var mu sync.Mutex
	longest := map[string]time.Duration{}
	var wg sync.WaitGroup
	for name, tg := range targets {
		addr, head, _ := strings.Cut(tg, "|")
		for range perTarget {
			wg.Go(func() {
				d := drip(addr, head, interval, within)
				mu.Lock()
				longest[name] = max(longest[name], d)
				mu.Unlock()
			})
		}
	}
	// A legitimate client meanwhile.
	client := &http.Client{Timeout: 5 * time.Second}
	code, out := send(t, client, a.api, writeReq{"POST", "/v1/zones", "application/json", `{"name": "legit.test.", "record_sets": []}`}, bearer(writeToken))
	wg.Wait()
	over := 0
	worst := time.Duration(0)
	for _, d := range longest {
		worst = max(worst, d)
		if d > bound {
			over++
		}
	}

	// Control: the same body drip at a server without the limits.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) }), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	ctl := drip(ln.Addr().String(), "POST /v1/checks HTTP/1.1\r\nHost: x\r\n"+body, interval, within)

	t.Logf("longest open per target: %v", longest)
	row(t, fmt.Sprintf("slow requests: %d connections each drip a body (one byte a %v, chunked) or a header at the agent's control API (no token) and its HTTP listener, with -http-body-timeout and -http-header-timeout 1s", perTarget*len(targets), interval),
		fmt.Sprintf("%d connections", perTarget*len(targets)),
		fmt.Sprintf("connections open past 2.5 s: %d (longest %v); a legitimate write meanwhile answered %d (control, a server without the limits: the drip stayed open %v, the whole test)", over, worst.Round(10*time.Millisecond), code, ctl.Round(10*time.Millisecond)))
	if over != 0 {
		t.Errorf("got through: %d targets kept a dripping connection open past %v (%v)", over, bound, longest)
	}
	if code != http.StatusCreated {
		t.Errorf("a legitimate write during the drip: %d %s", code, out)
	}
	if ctl < within-500*time.Millisecond {
		t.Errorf("control: a server without the limits closed the drip after %v, so the test cannot fail", ctl)
	}
}
