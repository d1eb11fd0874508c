package abuse

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// startNode starts a node; stop ends it and waits for it.
func startNode(t *testing.T, cfg agent.Config) (n *agent.Node, stop func()) {
	t.Helper()
	n, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = n.Run(ctx) }()
	var once bool
	stop = func() {
		if !once {
			once = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return n, stop
}

// voterWith runs a one-voter control plane serving its API at apiAddr with certName's
// certificate of the pool's CA.
func voterWith(t *testing.T, p pkiSet, id, certName, apiAddr string) (*agent.Node, func()) {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Roles, cfg.DataDir, cfg.HTTPAddr = id, agent.RoleControl, t.TempDir(), "off"
	cfg.TLS = p.store(t, p.dir, certName)
	cfg.Control.RaftAddr, cfg.Control.APIAddr, cfg.Control.Bootstrap = "127.0.0.1:0", apiAddr, true
	cfg.Control.Timing = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}
	cfg.Logger = logger()
	return startNode(t, cfg)
}

// locationAt runs a location with its certificate and the data directory dir, following
// the voter at api.
func locationAt(t *testing.T, p pkiSet, dir, api string) (*agent.Node, func()) {
	t.Helper()
	cfg := agent.DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = "loc", "us-east", agent.RoleLocation, dir
	cfg.Voters, cfg.TLS = []string{api}, p.store(t, p.dir, "loc")
	cfg.Gossip.Bind, cfg.Gossip.Keys = "127.0.0.1:0", [][]byte{[]byte("0123456789abcdef")}
	cfg.DNSAddr, cfg.HTTPAddr = "127.0.0.1:0", "off"
	cfg.Logger = logger()
	return startNode(t, cfg)
}

// askWWW asks the location for www.tls.test. A and returns the rcode's name.
func askWWW(addr string) string {
	m := new(dns.Msg)
	m.SetQuestion("www.tls.test.", dns.TypeA)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		return "no answer"
	}
	return dns.RcodeToString[r.Rcode]
}

// forge makes the voter at api hold the zone and then delete it, with writes enough that its
// state's index is above the genuine voter's: a state a location would take as newer.
func forge(t *testing.T, op *http.Client, api string) {
	t.Helper()
	if !waitFor(15*time.Second, func() bool {
		code, _ := send(t, op, api, writeReq{"PUT", "/v1/document", "application/yaml", tlsDoc}, func(*http.Request) {})
		return code == http.StatusOK
	}) {
		t.Fatal("the forger's voter takes no writes")
	}
	for i := range 5 {
		body := fmt.Sprintf(`{"name": "filler-%d.test.", "record_sets": []}`, i)
		if code, out := send(t, op, api, writeReq{"POST", "/v1/zones", "application/json", body}, func(*http.Request) {}); code != http.StatusCreated {
			t.Fatalf("forge: %d %s", code, out)
		}
	}
	if code, out := send(t, op, api, writeReq{"DELETE", "/v1/zones/tls.test.", "", ""}, func(*http.Request) {}); code/100 != 2 {
		t.Fatalf("forge: delete the zone: %d %s", code, out)
	}
}

// TestAbuseVoterImpersonation: a location that follows the control plane over mutual TLS
// is made to follow instead a "voter" served with a checker's certificate of the same CA
// (its address taken over, or its URL pointed elsewhere), whose state is newer and deletes
// the zone the location serves. The location must refuse it (the control role is required
// of the server) and go on serving the zone from its last configuration. The control serves
// the same forged state with a control-role certificate: the location follows it and the
// zone is gone (REFUSED).
func TestAbuseVoterImpersonation(t *testing.T) {
	p := newPKI(t)
	op := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: p.store(t, p.dir, "op").ClientConfig(tlsconf.Peer{})}}
	genuine, stopGenuine := voterWith(t, p, "v0", "v0", "127.0.0.1:0")
	api := genuine.Self().ControlAPI
	if !waitFor(15*time.Second, func() bool {
		code, _ := send(t, op, api, writeReq{"PUT", "/v1/document", "application/yaml", tlsDoc}, func(*http.Request) {})
		return code == http.StatusOK
	}) {
		t.Fatal("the genuine voter takes no writes")
	}
	dir := t.TempDir()
	loc, stop := locationAt(t, p, dir, api)
	if !waitFor(15*time.Second, func() bool { return loc.ConfigInfo().Zones == 1 && askWWW(loc.DNSAddr()) == "NOERROR" }) {
		t.Fatalf("the location did not follow the genuine voter: %+v", loc.ConfigInfo())
	}
	genuineIndex := loc.ConfigInfo().Index
	stop()
	// The attacker takes over the genuine voter's address (the genuine one down, its name or
	// route pointed elsewhere): the location, restarted, follows the same URL.
	stopGenuine()
	apiAddr := strings.TrimPrefix(api, "https://")

	// The attack: the location restarts and finds a checker's certificate at its voter.
	_, stopFake := voterWith(t, p, "fake", "checker", apiAddr)
	forge(t, op, api)
	loc, stop = locationAt(t, p, dir, api)
	roleErr := ""
	waitFor(10*time.Second, func() bool {
		if e := loc.ConfigInfo().LastError; strings.Contains(e, "role") {
			roleErr = e
		}
		return roleErr != "" || loc.ConfigInfo().Index != genuineIndex
	})
	time.Sleep(2 * time.Second) // retries of the watcher (at most 2 s apart)
	ci, rcode := loc.ConfigInfo(), askWWW(loc.DNSAddr())
	stop()
	stopFake()

	// Control: the same forged state behind a control-role certificate is followed.
	voterWith(t, p, "v1", "v1", apiAddr)
	forge(t, op, api)
	loc, _ = locationAt(t, p, dir, api)
	followed := waitFor(15*time.Second, func() bool { return loc.ConfigInfo().Index > genuineIndex && loc.ConfigInfo().Zones == 5 })
	ctlRcode := askWWW(loc.DNSAddr())

	row(t, "voter impersonation: a location following the control plane over mutual TLS finds at its voter's address a \"voter\" served with a checker's certificate of the same CA, whose newer state deletes the zone it serves",
		"1 location, watched for "+(2*time.Second).String()+" after its first refusal",
		fmt.Sprintf("forged states taken %d (index held %d, the genuine voter's %d; zones %d; www.tls.test. answered %s; watcher: %s) (control, the same forgery behind a control-role certificate: followed %v, www.tls.test. %s)",
			boolInt(ci.Index != genuineIndex), ci.Index, genuineIndex, ci.Zones, rcode, roleErr, followed, ctlRcode))
	if ci.Index != genuineIndex || ci.Zones != 1 || rcode != "NOERROR" {
		t.Errorf("the location took the checker-certified voter's state: %+v, www %s", ci, rcode)
	}
	if roleErr == "" {
		t.Errorf("the watcher never said the role is missing: %+v", ci)
	}
	if !followed || ctlRcode != "REFUSED" {
		t.Errorf("control: the location did not follow the control-role impostor (%v, www %s): %+v, so the test cannot fail", followed, ctlRcode, loc.ConfigInfo())
	}
}

// boolInt is 1 for true, 0 for false.
func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
