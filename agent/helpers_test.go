package agent

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/internal/calibrate"
)

// testKey is the pool key of the tests' clusters.
var testKey = []byte("vigil-node-test-key-0123456789ab")

func testLogger() *slog.Logger {
	if os.Getenv("VIGIL_NODE_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// target is a real HTTP endpoint whose /healthz can be made to fail.
type target struct {
	srv  *httptest.Server
	down atomic.Bool
}

func newTarget(t *testing.T) *target {
	t.Helper()
	tg := &target{}
	tg.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tg.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	t.Cleanup(tg.srv.Close)
	return tg
}

func (tg *target) addr() string { return tg.srv.Listener.Addr().String() }

func (tg *target) port() int { return tg.srv.Listener.Addr().(*net.TCPAddr).Port }

// demoDoc loads examples/demo.yaml with each region's check pointed at its test target.
func demoDoc(t *testing.T, targets map[string]*target) *config.Document {
	t.Helper()
	ports := map[string]int{}
	for region, tg := range targets {
		ports[region] = tg.port()
	}
	return demoDocPorts(t, ports)
}

// demoDocPorts loads examples/demo.yaml with each region's check pointed at its port on
// loopback.
func demoDocPorts(t *testing.T, ports map[string]int) *config.Document {
	t.Helper()
	doc, err := config.Load("../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for i := range doc.Checks {
		c := &doc.Checks[i]
		for region, port := range ports {
			if c.ID == "web-"+region {
				c.Target.Port = port
			}
		}
	}
	return doc
}

// started is a node running in the background of a test.
type started struct {
	*Node
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// start runs n until the test ends (or stop).
func start(t *testing.T, n *Node) *started {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &started{Node: n, cancel: cancel, done: make(chan error, 1)}
	go func() { s.done <- n.Run(ctx) }()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop ends the node's Run and checks that it returned within a bound.
func (s *started) stop(t *testing.T) {
	s.once.Do(func() {
		s.cancel()
		select {
		case err := <-s.done:
			if err != nil {
				t.Errorf("node %s: run: %v", s.cfg.ID, err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("node %s: run did not return within 20s of its context ending", s.cfg.ID)
		}
	})
}

// query asks a DNS server over UDP and returns the A records of the answer. Like a stub
// resolver (dig tries three times), it asks once more when a second passes without an answer:
// on a loaded machine one datagram's answer can come late, which is not what a test asks.
func query(addr, name string) ([]string, error) {
	c := &dns.Client{Timeout: time.Second}
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	r, _, err := c.Exchange(m, addr)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		r, _, err = c.Exchange(m, addr)
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	if r.Rcode != dns.RcodeSuccess {
		return out, &rcodeError{r.Rcode}
	}
	return out, nil
}

type rcodeError struct{ rcode int }

func (e *rcodeError) Error() string { return "rcode " + dns.RcodeToString[e.rcode] }

// eventually polls cond every 100ms until it holds or within passes, and fails the test with
// what cond last said otherwise. within is the bound on an idle machine: the wait scales it
// by the slowdown measured meanwhile (internal/calibrate), at most calibrate.MaxSlowdown.
func eventually(t *testing.T, within time.Duration, what string, cond func() (bool, string)) time.Duration {
	t.Helper()
	t0 := time.Now()
	m := calibrate.Start()
	defer m.Stop()
	var last string
	for m.Within(within) {
		ok, msg := cond()
		if ok {
			return time.Since(t0)
		}
		last = msg
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s of an idle machine (%v); last: %s", what, within, m.Reading(), last)
	return 0
}

func newReg() *prometheus.Registry { return prometheus.NewRegistry() }

// soloConfig is one node with both data-plane roles in us-east, on loopback with an encrypted
// pool, serving the demo document over targets with one checker a region, deciding every 100ms.
func soloConfig(t *testing.T, id string, targets map[string]*target) Config {
	t.Helper()
	doc := demoDoc(t, targets)
	for i := range doc.Checks {
		doc.Checks[i].CheckersPerRegion = 1
	}
	cfg := DefaultConfig()
	cfg.ID, cfg.Region, cfg.DataDir = id, "us-east", t.TempDir()
	cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile = "127.0.0.1:0", [][]byte{testKey}, gossip.ProfileLocal
	cfg.DNSAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Static, cfg.Probe.AllowLoopback, cfg.EvalInterval = doc, true, 100*time.Millisecond
	cfg.Logger, cfg.Registerer = testLogger(), newReg()
	return cfg
}
