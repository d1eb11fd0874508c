package agent

import (
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
)

// A checker's canaries reach the checker: a canary it cannot probe is refused by New, with
// the checker's reason, and a good one is taken.
func TestCheckerCanaries(t *testing.T) {
	tg := newTarget(t)
	doc := demoDoc(t, map[string]*target{"us-east": tg, "eu-west": tg, "sa-east": tg})
	cfg := DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = "canary", "us-east", RoleChecker, t.TempDir()
	cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile = "127.0.0.1:0", [][]byte{testKey}, gossip.ProfileLocal
	cfg.HTTPAddr, cfg.Static, cfg.Probe.AllowLoopback = "off", doc, true
	cfg.Logger, cfg.Registerer = testLogger(), newReg()

	bad := config.DefaultCheck()
	bad.ID, bad.Protocol = "canary-bad", config.ProtocolTCP // no target
	cfg.Probe.Canaries = []config.Check{bad}
	if n, err := New(cfg); err == nil {
		n.Close()
		t.Fatal("a canary without a target was accepted")
	} else if !strings.Contains(err.Error(), "canary") {
		t.Errorf("error %q does not name the canary", err)
	}

	good := config.DefaultCheck()
	good.ID, good.Protocol = "canary-ok", config.ProtocolTCP
	good.Target = config.Target{Host: "127.0.0.1", Port: tg.port()}
	cfg.Probe.Canaries = []config.Check{good}
	cfg.Registerer = newReg()
	n, err := New(cfg)
	if err != nil {
		t.Fatalf("a good canary: %v", err)
	}
	n.Close()
}
