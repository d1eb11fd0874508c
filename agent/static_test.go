package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/gossip"
)

const testToken = "node-test-token"

var testTiming = control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond,
	LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// putDocument writes doc through the control API, as `vigil apply` does.
func putDocument(api string, doc *config.Document) error {
	body, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPut, api+"/v1/document", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("PUT /v1/document: %s", resp.Status)
	}
	return nil
}

// startVoter starts one control voter over real sockets, which bootstraps the control plane,
// with edit (when set) changing its configuration last, and writes doc through its API; it
// returns the voter, running until the test ends, and its API's URL.
func startVoter(t *testing.T, doc *config.Document, edit func(*Config)) (*started, string) {
	t.Helper()
	vc := DefaultConfig()
	vc.ID, vc.Roles, vc.DataDir, vc.HTTPAddr = "voter", RoleControl, t.TempDir(), "off"
	vc.Control.RaftAddr, vc.Control.APIAddr = freeAddr(t), "127.0.0.1:0"
	vc.Control.Bootstrap, vc.Control.WriteTokens, vc.Control.Timing = true, []string{testToken}, testTiming
	vc.Logger, vc.Registerer = testLogger().With("id", "voter"), newReg()
	if edit != nil {
		edit(&vc)
	}
	voter := start(t, mustNew(t, vc))
	api := voter.Self().ControlAPI
	eventually(t, 15*time.Second, "the voter accepts the document", func() (bool, string) {
		err := putDocument(api, doc)
		return err == nil, fmt.Sprint(err)
	})
	return voter, api
}

// dataNode configures a checker+location on the real network, following the voters.
func dataNode(t *testing.T, id, region, dir string, voters []string, join ...string) Config {
	cfg := DefaultConfig()
	cfg.ID, cfg.Region, cfg.DataDir = id, region, dir
	cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile = "127.0.0.1:0", [][]byte{testKey}, gossip.ProfileLocal
	cfg.Gossip.Join, cfg.Gossip.RejoinInterval = join, time.Second
	cfg.Voters, cfg.Token = voters, testToken
	cfg.DNSAddr, cfg.HTTPAddr, cfg.EvalInterval = "127.0.0.1:0", "127.0.0.1:0", 100*time.Millisecond
	cfg.Probe.AllowLoopback = true
	cfg.Logger, cfg.Registerer = testLogger().With("id", id), newReg()
	return cfg
}

// Real sockets end to end: a control voter, two data-plane nodes over memberlist's own
// network transport with an encryption key, fed by the Watcher. Then the voter stops: the
// data plane keeps answering, and a node restarted from its data directory answers again
// from the disk copy (static stability), while a node that never saw a configuration serves
// nothing and says so.
func TestStaticStabilityOverRealSockets(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	doc := demoDoc(t, targets)

	voter, api := startVoter(t, doc, nil)

	dirA := t.TempDir()
	a := start(t, mustNew(t, dataNode(t, "a", "us-east", dirA, []string{api})))
	b := start(t, mustNew(t, dataNode(t, "b", "eu-west", t.TempDir(), []string{api}, a.GossipAddr())))
	for _, s := range []*started{a, b} {
		eventually(t, 20*time.Second, s.cfg.ID+": www from a healthy quorum", func() (bool, string) {
			v, err := s.Verdicts()
			if err != nil || v["web-us-east"].State.String() != "healthy" || v["web-us-east"].Counts.Fresh != 2 {
				return false, fmt.Sprintf("%+v %v", v["web-us-east"], err)
			}
			got, err := query(s.DNSAddr(), "www.demo.vigil.test")
			return err == nil && slices.Equal(got, []string{"192.0.2.1"}), fmtAnswer(got, err)
		})
		if ci := s.ConfigInfo(); ci.Source != state.SourceControlPlane || ci.Index == 0 {
			t.Errorf("%s: config info %+v, want the control plane's", s.cfg.ID, ci)
		}
	}

	// The control plane goes away: the data plane keeps deciding and answering.
	voter.stop(t)
	targets["us-east"].down.Store(true)
	eventually(t, 8*time.Second, "failover without the control plane", func() (bool, string) {
		for _, s := range []*started{a, b} {
			got, err := query(s.DNSAddr(), "www.demo.vigil.test")
			if err != nil || !slices.Equal(got, []string{"198.51.100.1"}) {
				return false, s.cfg.ID + ": " + fmtAnswer(got, err)
			}
		}
		return true, ""
	})

	// Restart a from its data directory, the voter still down: it answers from the disk copy.
	a.stop(t)
	a2 := start(t, mustNew(t, dataNode(t, "a", "us-east", dirA, []string{api}, b.GossipAddr())))
	if ci := a2.ConfigInfo(); ci.Source != state.SourceDisk || ci.Checks != len(doc.Checks) {
		t.Fatalf("restarted node: config info %+v, want the disk copy", ci)
	}
	eventually(t, 15*time.Second, "restarted node answers from its disk copy", func() (bool, string) {
		got, err := query(a2.DNSAddr(), "www.demo.vigil.test")
		return err == nil && slices.Equal(got, []string{"198.51.100.1"}), fmtAnswer(got, err)
	})

	// A node that has never seen a configuration serves nothing, and says so.
	c := start(t, mustNew(t, dataNode(t, "c", "eu-west", t.TempDir(), []string{api}, b.GossipAddr())))
	time.Sleep(500 * time.Millisecond)
	_, err := query(c.DNSAddr(), "www.demo.vigil.test")
	var rc *rcodeError
	if !errors.As(err, &rc) || rc.rcode != 5 { // REFUSED
		t.Errorf("node without configuration: %v, want REFUSED", err)
	}
	rd := c.Ready()
	// The reason names the voter that failed (its API is gone) and how.
	named := slices.ContainsFunc(rd.Reasons, func(r string) bool {
		return strings.HasPrefix(r, "no configuration yet, serving nothing: the voter at "+api+" failed: connection refused")
	})
	if ci := c.ConfigInfo(); rd.Ready || ci.Source != state.SourceNone || !named {
		t.Errorf("node without configuration: ready %+v, config %+v", rd, ci)
	}
}

func mustNew(t *testing.T, cfg Config) *Node {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
