package agent

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/gossip"
)

// TestKeyringSavedAndRestored: a keyring operation from the pool is saved in the node's data
// directory, and the node restarted with its old configured key starts with the saved
// keyring, the new key first.
func TestKeyringSavedAndRestored(t *testing.T) {
	newKey := bytes.Repeat([]byte{9}, 32)
	dir := t.TempDir()
	cfg := dataNode(t, "loc", "us-east", dir, nil)
	cfg.Roles, cfg.Static, cfg.HTTPAddr = RoleLocation, demoDoc(t, map[string]*target{}), "off"
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, n)
	op, err := gossip.New(gossip.Config{ID: "operator", Region: "us-east", Roles: gossip.RoleControl,
		Keys: [][]byte{testKey}, BindAddr: "127.0.0.1", Profile: gossip.ProfileLocal, Seeds: []string{n.GossipAddr()}, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); _ = op.Run(ctx) }()
	defer func() { cancel(); <-done }()
	for len(op.Members()) < 2 && ctx.Err() == nil {
		time.Sleep(50 * time.Millisecond)
	}
	for _, o := range []gossip.KeyringOp{gossip.KeyringInstall, gossip.KeyringUse} {
		if _, err := op.Keyring(ctx, o, newKey, time.Second); err != nil {
			t.Fatalf("%s: %v", o, err)
		}
	}
	s.stop(t)
	cfg.Registerer = newReg()
	n2, err := New(cfg) // the configured key is still the old one
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	primary, keys := n2.pool.Keys()
	if !bytes.Equal(primary, newKey) || len(keys) != 2 {
		t.Fatalf("restarted with primary %s and %d keys, want the new key first of 2", gossip.KeyFingerprint(primary), len(keys))
	}
}
