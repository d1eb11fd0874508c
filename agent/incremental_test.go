package agent

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/control/state"
)

// put writes one item through the control API.
func put(api, path, body string) error {
	req, err := http.NewRequest(http.MethodPut, api+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("PUT %s: %s", path, resp.Status)
	}
	return nil
}

// TestConfigChangesApplied: a data-plane node following the control plane applies one
// changed check and one changed record set as changes: its assignment plan is changed in
// place (not built again), the location's verdict engine takes the new check alone (not the
// whole configuration again), the DNS answer follows the new record set, and the new check is
// probed; the disk copy holds them.
func TestConfigChangesApplied(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	doc := demoDoc(t, targets)
	_, api := startVoter(t, doc, nil)
	dir := t.TempDir()
	a := start(t, mustNew(t, dataNode(t, "a", "us-east", dir, []string{api})))
	eventually(t, 15*time.Second, "the node runs the control plane's configuration", func() (bool, string) {
		ci := a.ConfigInfo()
		return ci.Source == state.SourceControlPlane && ci.Checks == len(doc.Checks), fmt.Sprintf("%+v", ci)
	})
	a.mu.Lock()
	plan, index := a.asg.Plan(), a.state.Index
	a.mu.Unlock()
	var wholes uint64
	eventually(t, 10*time.Second, "the engine holds the configuration", func() (bool, string) {
		a.loc.mu.Lock()
		defer a.loc.mu.Unlock()
		configured, _ := a.loc.engine.Len()
		wholes = a.loc.wholes
		return a.loc.cfg != nil && configured == len(doc.Checks), fmt.Sprint(configured)
	})

	check := fmt.Sprintf(`{"protocol": "tcp", "target": {"host": "127.0.0.1", "port": %d}, "checkers_per_region": 1, "regions": ["us-east", "eu-west", "sa-east"]}`, targets["us-east"].port())
	if err := put(api, "/v1/checks/extra", check); err != nil {
		t.Fatal(err)
	}
	if err := put(api, "/v1/zones/demo.vigil.test/record_sets/extra/A", `{"records": [{"value": "203.0.113.9"}]}`); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the new record set answers", func() (bool, string) {
		got, err := query(a.DNSAddr(), "extra.demo.vigil.test")
		return err == nil && slices.Equal(got, []string{"203.0.113.9"}), fmtAnswer(got, err)
	})
	a.mu.Lock()
	samePlan, shard, newIndex := a.asg.Plan() == plan, a.asg.Plan().Shard("extra", "us-east"), a.state.Index
	a.mu.Unlock()
	if !samePlan || !slices.Equal(shard, []string{"a"}) || newIndex <= index {
		t.Fatalf("plan changed in place: %v; shard of the new check in us-east %v; index %d -> %d", samePlan, shard, index, newIndex)
	}
	eventually(t, 10*time.Second, "the engine takes the new check alone", func() (bool, string) {
		a.loc.mu.Lock()
		defer a.loc.mu.Unlock()
		configured, _ := a.loc.engine.Len()
		return configured == len(doc.Checks)+1 && a.loc.wholes == wholes, fmt.Sprintf("%d configured, %d whole configurations (%d before)", configured, a.loc.wholes, wholes)
	})
	eventually(t, 10*time.Second, "the new check is probed", func() (bool, string) {
		for _, r := range a.CheckerResults() {
			if r.CheckID == "extra" {
				return true, ""
			}
		}
		return false, fmt.Sprint(a.CheckerResults())
	})
	disk, err := client.LoadCache(dir + "/config.json")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := disk.Check("extra"); !ok || disk.Index < newIndex {
		t.Fatalf("disk copy at %d lacks the new check", disk.Index)
	}
	if _, ok := disk.RecordSet("demo.vigil.test", "extra", "A"); !ok {
		t.Fatal("disk copy lacks the new record set")
	}
}
