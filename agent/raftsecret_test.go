package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/syncbuf"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// A voter without certificates that bootstraps generates the cluster's raft secret in its
// data directory (0600) and keeps it across a restart; a voter that joins without it is
// refused at start with the flag to give; given a copy (-raft-secret-file), it joins.
func TestRaftSecretBootstrapAndJoin(t *testing.T) {
	var logBuf syncbuf.Buffer
	dirA := t.TempDir()
	voterCfg := func(id, dir string) Config {
		c := DefaultConfig()
		c.ID, c.Roles, c.DataDir, c.HTTPAddr = id, RoleControl, dir, "off"
		c.Control.RaftAddr, c.Control.APIAddr = freeAddr(t), "127.0.0.1:0"
		c.Control.WriteTokens, c.Control.Timing = []string{testToken}, testTiming
		c.Logger, c.Registerer = testLogger().With("id", id), newReg()
		return c
	}
	ca := voterCfg("a", dirA)
	ca.Control.Bootstrap = true
	ca.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	a := start(t, mustNew(t, ca))
	path := filepath.Join(dirA, "control", RaftSecretFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no secret generated: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("secret file mode %v, want 0600", fi.Mode().Perm())
	}
	if !strings.Contains(logBuf.String(), "every other voter needs a copy") || !strings.Contains(logBuf.String(), path) {
		t.Errorf("the log does not say where the secret is and who needs it:\n%s", logBuf.String())
	}
	first, _, err := tlsconf.ReadSecretFile(path)
	if err != nil {
		t.Fatal(err)
	}
	api := a.Self().ControlAPI

	cb := voterCfg("b", t.TempDir())
	cb.Control.Join = []string{api}
	if _, err := New(cb); err == nil || !strings.Contains(err.Error(), "-raft-secret-file") {
		t.Fatalf("a voter joining without the secret: %v, want an error naming -raft-secret-file", err)
	}
	cb.Control.RaftSecretFile, cb.Registerer = path, newReg()
	start(t, mustNew(t, cb))
	eventually(t, 20*time.Second, "two voters", func() (bool, string) {
		n, err := voterCount(api)
		return err == nil && n == 2, fmt.Sprint(n, err)
	})

	a.stop(t)
	ca.Registerer, ca.Logger = newReg(), testLogger()
	ca.Control.Bootstrap = false // a restart from the data directory
	start(t, mustNew(t, ca))
	again, _, err := tlsconf.ReadSecretFile(path)
	if err != nil || !bytes.Equal(first, again) {
		t.Fatalf("the secret changed across a restart (err %v)", err)
	}
}

// voterCount returns how many voters the cluster at api has.
func voterCount(api string) (int, error) {
	req, err := http.NewRequest("GET", api+"/v1/cluster", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var cv struct {
		Servers map[string]string `json:"servers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&cv); err != nil {
		return 0, err
	}
	return len(cv.Servers), nil
}
