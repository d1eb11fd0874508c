package notify

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// startAlertmanager runs the real Prometheus Alertmanager (Debian's prometheus-alertmanager)
// on loopback, without clustering, until the test ends; it skips the test when it is not
// installed.
func startAlertmanager(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus-alertmanager")
	if err != nil {
		if bin, err = exec.LookPath("alertmanager"); err != nil {
			t.Skip("Alertmanager is not installed (apt-get install prometheus-alertmanager)")
		}
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(cfg, []byte("route: {receiver: none}\nreceivers: [{name: none}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=", "--log.level=warn")
	cmd.Stdout, cmd.Stderr = t.Output(), t.Output()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	base := "http://" + addr
	waitFor(t, 20*time.Second, "Alertmanager ready", func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base
}

// amState is an alert as Alertmanager's API lists it.
type amState struct {
	Labels map[string]string `json:"labels"`
	EndsAt time.Time         `json:"endsAt"`
	Status struct {
		State string `json:"state"`
	} `json:"status"`
}

func amAlerts(t *testing.T, base string) []amState {
	t.Helper()
	resp, err := http.Get(base + "/api/v2/alerts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []amState
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAlertmanagerSideBySide: the real Alertmanager takes the leader's firing alert (active,
// with the rule, check and location labels) and, when the check recovers, the resolved one
// (the alert leaves its list of alerts in force).
func TestAlertmanagerSideBySide(t *testing.T) {
	am := startAlertmanager(t)
	loc := newLocation(t, "loc-a")
	v := &voter{id: "v0", dir: filepath.Join(t.TempDir(), "v0"), raft: freeAddr(t)}
	v.start(t, &Digests{URLs: []string{loc.srv.URL}})
	t.Cleanup(v.kill)
	if err := v.node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	leaderOf(t, []*voter{v})
	doc, err := config.Parse(fmt.Appendf(nil, `
regions: [r]
notifications:
  receivers: [{name: am, kind: alertmanager, url: %q}]
  rules: [{name: web-down, scope: regional, checks: [web], receivers: [am]}]
`, am))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.node.Apply(&state.Command{Op: state.OpApplyDocument, Document: doc}); err != nil {
		t.Fatal(err)
	}
	loc.state.Store("unhealthy")
	var firing amState
	waitFor(t, 15*time.Second, "the alert active in Alertmanager", func() bool {
		for _, a := range amAlerts(t, am) {
			if a.Labels["alertname"] == "web-down" && a.Status.State == "active" {
				firing = a
				return true
			}
		}
		return false
	})
	if firing.Labels["check"] != "web" || firing.Labels["location"] != "loc-a" {
		t.Errorf("labels in Alertmanager: %v", firing.Labels)
	}
	loc.state.Store("healthy")
	waitFor(t, 15*time.Second, "the alert resolved in Alertmanager", func() bool {
		for _, a := range amAlerts(t, am) {
			if a.Labels["alertname"] == "web-down" && a.EndsAt.After(time.Now()) {
				return false
			}
		}
		return true
	})
	out, _ := v.node.State().Outbox()
	t.Logf("Alertmanager at %s took firing and resolved; outbox now %d, labels %v", am, len(out), firing.Labels)
}
