package abuse

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// rotationDoc: www fails over from the target of web-a (192.0.2.1) to web-b's (192.0.2.2);
// a checker unheard for 2s stops counting, and a verdict is held 2s more.
const rotationDoc = `regions: [us-east]
quorum: {freshness_window: 2s, hold: 2s}
checks:
  - {id: web-a, protocol: http, target: {host: 127.0.0.1, port: %d}, interval: 1s, timeout: 300ms, failure_threshold: 2, success_threshold: 1, allow_fewer_regions: true}
  - {id: web-b, protocol: http, target: {host: 127.0.0.1, port: %d}, interval: 1s, timeout: 300ms, failure_threshold: 2, success_threshold: 1, allow_fewer_regions: true}
zones:
  - name: rot.test.
    record_sets:
      - name: www
        type: A
        policy: failover
        records:
          - {value: 192.0.2.1, health_check: web-a, role: primary}
          - {value: 192.0.2.2, health_check: web-b, role: secondary}
`

// askA asks addr for name's A records over UDP.
func askA(addr, name string) ([]string, error) {
	c := &dns.Client{Timeout: 500 * time.Millisecond}
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			out = append(out, a.A.String())
		}
	}
	slices.Sort(out)
	return out, nil
}

// TestRotationWhileServingDNS: a voter, a checker and a location on mutual TLS and an
// encrypted pool serve www.rot.test from a healthy primary. Meanwhile every certificate is
// renewed on disk (same CA) and the gossip key is rotated (install, use, remove) across the
// pool; a query every 10ms must get the primary, every time. After both, the primary's
// target fails and the answer must move to the secondary: the whole path (probes, gossip on
// the new key, verdicts) still works.
func TestRotationWhileServingDNS(t *testing.T) {
	p := newPKI(t)
	var down atomic.Bool
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer a.Close()
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer b.Close()
	stores := map[string]*tlsconf.Store{}
	load := func(name string) *tlsconf.Store {
		s, err := tlsconf.Load(tlsconf.Files{Cert: filepath.Join(p.dir, name+".pem"), Key: filepath.Join(p.dir, name+"-key.pem"), CA: filepath.Join(p.dir, "ca.pem")},
			tlsconf.Options{Recheck: 100 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		stores[name] = s
		return s
	}
	v := tlsVoter(t, pkiSet{dir: p.dir}) // its own store, default recheck
	api := v.Self().ControlAPI
	op := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: load("op").ClientConfig(tlsconf.Peer{})}}
	doc := fmt.Sprintf(rotationDoc, a.Listener.Addr().(*net.TCPAddr).Port, b.Listener.Addr().(*net.TCPAddr).Port)
	if !waitFor(15*time.Second, func() bool {
		code, _ := send(t, op, api, writeReq{"PUT", "/v1/document", "application/yaml", doc}, func(*http.Request) {})
		return code == http.StatusOK
	}) {
		t.Fatal("the document was not applied")
	}
	regs := map[string]*prometheus.Registry{}
	data := func(id string, roles agent.Roles, store *tlsconf.Store, seeds ...string) *agent.Node {
		cfg := agent.DefaultConfig()
		cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = id, "us-east", roles, t.TempDir()
		cfg.Voters, cfg.TLS = []string{api}, store
		cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Join = "127.0.0.1:0", [][]byte{poolKey}, seeds
		cfg.Gossip.Profile, cfg.Gossip.HeartbeatInterval, cfg.Gossip.RejoinInterval = gossip.ProfileLocal, 200*time.Millisecond, time.Second
		cfg.DNSAddr, cfg.HTTPAddr, cfg.EvalInterval = "127.0.0.1:0", "off", 100*time.Millisecond
		cfg.Probe.AllowLoopback = true
		regs[id] = prometheus.NewRegistry()
		cfg.Logger, cfg.Registerer = logger(), regs[id]
		return runNode(t, cfg)
	}
	loc := data("loc", agent.RoleLocation, load("loc"))
	data("checker", agent.RoleChecker, load("checker"), loc.GossipAddr())
	dnsAddr := loc.DNSAddr()
	if !waitFor(20*time.Second, func() bool {
		got, err := askA(dnsAddr, "www.rot.test.")
		return err == nil && slices.Equal(got, []string{"192.0.2.1"})
	}) {
		t.Fatal("the location never answered the primary")
	}

	// A query every 10ms from now on.
	var mu sync.Mutex
	asked, wrong := 0, map[string]int{}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			got, err := askA(dnsAddr, "www.rot.test.")
			mu.Lock()
			asked++
			if err != nil {
				wrong[err.Error()]++
			} else if !slices.Equal(got, []string{"192.0.2.1"}) {
				wrong[strings.Join(got, ",")]++
			}
			mu.Unlock()
		}
	}()
	before := map[string]string{}
	for name, s := range stores {
		before[name] = s.Leaf().SerialNumber.String()
	}
	// Certificates renewed on disk, same CA.
	var reqs []tlsconf.Request
	for _, n := range []string{"v0", "loc", "checker", "op"} {
		role := map[string]string{"v0": "control", "loc": "location", "checker": "checker", "op": "operator"}[n]
		reqs = append(reqs, tlsconf.Request{Name: n, Roles: []string{role}, Hosts: []string{"127.0.0.1", "localhost"}})
	}
	if _, err := tlsconf.Init(p.dir, reqs, tlsconf.InitOptions{Now: time.Now(), CAValid: 24 * time.Hour, CertValid: 2 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	renewed := 0
	for name, s := range stores {
		if s.Leaf().SerialNumber.String() != before[name] {
			renewed++
		}
	}
	// A write with the renewed operator certificate, on a new connection, reaches the location.
	op.CloseIdleConnections()
	if code, out := send(t, op, api, writeReq{"PUT", "/v1/zones/rot.test./record_sets/new/A", "application/json",
		`{"name": "new", "type": "A", "records": [{"value": "192.0.2.9"}]}`}, func(*http.Request) {}); code/100 != 2 {
		t.Fatalf("write after the renewal: %d %s", code, out)
	}
	followed := waitFor(10*time.Second, func() bool {
		got, err := askA(dnsAddr, "new.rot.test.")
		return err == nil && slices.Equal(got, []string{"192.0.2.9"})
	})
	// The gossip key rotated across the pool.
	opNode, _, _ := keyNode(t, &sync.WaitGroup{}, "operator", gossip.RoleControl, [][]byte{poolKey}, loc.GossipAddr())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	waitFor(10*time.Second, func() bool { return len(opNode.Members()) == 3 })
	for _, s := range []struct {
		op  gossip.KeyringOp
		key []byte
	}{{gossip.KeyringInstall, newPoolKey}, {gossip.KeyringUse, newPoolKey}, {gossip.KeyringRemove, poolKey}} {
		if ans, err := opNode.Keyring(ctx, s.op, s.key, time.Second); err != nil || len(ans) != 2 {
			t.Fatalf("keyring %s: %d answers, %v", s.op, len(ans), err)
		}
	}
	time.Sleep(5 * time.Second) // past the freshness window and the hold
	close(stop)
	<-done
	refused := unauthenticated(t, regs["loc"], regs["checker"])
	mu.Lock()
	t.Logf("%d queries during the rotations, %d certificates renewed and in use, a write after it followed: %v, gossip messages refused %d, wrong or failed answers %v",
		asked, renewed, followed, refused, wrong)
	if len(wrong) != 0 || renewed != len(stores) || !followed || refused != 0 {
		t.Errorf("rotation: wrong answers %v, renewed %d of %d, followed %v, refused %d", wrong, renewed, len(stores), followed, refused)
	}
	mu.Unlock()
	// The whole path still works on the new key: the primary fails, the answer moves.
	down.Store(true)
	if !waitFor(10*time.Second, func() bool {
		got, err := askA(dnsAddr, "www.rot.test.")
		return err == nil && slices.Equal(got, []string{"192.0.2.2"})
	}) {
		got, err := askA(dnsAddr, "www.rot.test.")
		t.Errorf("after the rotation the answer did not fail over: %v %v", got, err)
	}
}
