package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/gossip"
)

// TestKeyringCommand rotates the key of a running pool of three nodes (real sockets) with
// vigil keyring install, use and remove, as docs/security.md says, and lists it.
func TestKeyringCommand(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32)
	dir := t.TempDir()
	write := func(name string, k []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(base64.StdEncoding.EncodeToString(k)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oldFile, newFile := write("old.key", oldKey), write("new.key", newKey)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	var nodes []*gossip.Pool
	for i, roles := range []gossip.Roles{gossip.RoleLocation, gossip.RoleChecker, gossip.RoleChecker} {
		cfg := gossip.Config{ID: "n" + string(rune('0'+i)), Region: "r1", Roles: roles, Keys: [][]byte{oldKey},
			BindAddr: "127.0.0.1", Profile: gossip.ProfileLocal}
		if i > 0 {
			cfg.Seeds = []string{nodes[0].Addr()}
		}
		n, err := gossip.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); _ = n.Run(ctx) }()
		nodes = append(nodes, n)
	}
	deadline := time.Now().Add(15 * time.Second)
	for len(nodes[0].Members()) < 3 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	join := nodes[0].Addr()
	for _, step := range [][]string{
		{"-gossip-key-file", oldFile, "install", "@" + newFile},
		{"-gossip-key-file", oldFile, "use", "@" + newFile},
		{"-gossip-key-file", newFile, "remove", "@" + oldFile},
	} {
		var out, errb bytes.Buffer
		if code := runKeyring(ctx, append([]string{"-join", join, "-timeout", "15s"}, step...), &out, &errb); code != 0 {
			t.Fatalf("vigil keyring %v: exit %d\n%s%s", step, code, out.String(), errb.String())
		}
		if !strings.Contains(out.String(), step[2]+": 3 nodes answered, 0 failed") {
			t.Fatalf("vigil keyring %v:\n%s", step, out.String())
		}
	}
	for _, n := range nodes {
		primary, keys := n.Keys()
		if !bytes.Equal(primary, newKey) || len(keys) != 1 {
			t.Errorf("%s: primary %s, %d keys; want only the new key", n.ID(), gossip.KeyFingerprint(primary), len(keys))
		}
	}
	var out, errb bytes.Buffer
	if code := runKeyring(ctx, []string{"-join", join, "-gossip-key-file", newFile, "list"}, &out, &errb); code != 0 {
		t.Fatalf("list: %d %s", code, errb.String())
	}
	want := "key " + gossip.KeyFingerprint(newKey) + ": installed on 3 of 3 nodes, primary on 3"
	if !strings.Contains(out.String(), want) {
		t.Fatalf("list:\n%s\nwant %q", out.String(), want)
	}
	// The retired key no longer joins.
	errb.Reset()
	if code := runKeyring(ctx, []string{"-join", join, "-gossip-key-file", oldFile, "-timeout", "2s", "list"}, &out, &errb); code == 0 {
		t.Fatal("vigil keyring with the retired key succeeded")
	}
}
