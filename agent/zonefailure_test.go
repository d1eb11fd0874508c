package agent

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/status"
)

// TestZoneFailureKeepsOthersCurrent: a location given a configuration with one zone it cannot
// install (a TXT value no parser takes, as a control plane of another version might send it)
// serves every other zone with its new data, stays ready, and says which zone and why on
// /readyz and in its metrics; a configuration that fixes the zone ends all of it.
func TestZoneFailureKeepsOthersCurrent(t *testing.T) {
	doc := demoDoc(t, nil)
	doc.Quorum.FreshnessWindow = config.Duration(time.Second) // warm quickly
	zone := func(apex, addr, txt string) config.Zone {
		z := config.DefaultZone()
		z.Name, z.NameServers = apex, []string{"ns1." + apex}
		z.RecordSets = []config.RecordSet{
			{Name: "www." + apex, Type: config.TypeA, Records: []config.Record{{Value: addr}}},
			{Name: "txt." + apex, Type: config.TypeTXT, Records: []config.Record{{Value: txt}}},
		}
		return z
	}
	withZones := func(zs ...config.Zone) *config.Document {
		d := *doc
		d.Zones = append(slices.Clone(doc.Zones), zs...)
		return &d
	}
	cfg := DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = "loc", "us-east", RoleLocation, t.TempDir()
	cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile = "127.0.0.1:0", [][]byte{testKey}, gossip.ProfileLocal
	cfg.DNSAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Static = withZones(zone("good.test.", "192.0.2.1", "ok"), zone("bad.test.", "192.0.2.2", `"unbalanced`))
	cfg.Logger, cfg.Registerer = testLogger(), newReg()
	n := mustNew(t, cfg)
	s := start(t, n)

	eventually(t, 10*time.Second, "good.test answers", func() (bool, string) {
		got, err := query(s.DNSAddr(), "www.good.test")
		return err == nil && slices.Equal(got, []string{"192.0.2.1"}), fmtAnswer(got, err)
	})
	if _, err := query(s.DNSAddr(), "www.bad.test"); err == nil || !strings.Contains(err.Error(), "REFUSED") {
		t.Errorf("www.bad.test: %v, want REFUSED (never installed)", err)
	}
	var rd status.Readiness
	eventually(t, 10*time.Second, "/readyz: ready, degraded by bad.test", func() (bool, string) {
		code, body := get(t, "http://"+s.HTTPAddr()+"/readyz")
		rd = status.Readiness{}
		_ = json.Unmarshal([]byte(body), &rd)
		return code == http.StatusOK && rd.Ready && len(rd.Degraded) == 1, body
	})
	if want := "zone bad.test. not installed, not serving it: "; !strings.HasPrefix(rd.Degraded[0], want) || !strings.Contains(rd.Degraded[0], "unbalanced quotes") {
		t.Errorf("degraded %q, want %q and the parser's words", rd.Degraded[0], want)
	}
	_, metrics := get(t, "http://"+s.HTTPAddr()+"/metrics")
	if !strings.Contains(metrics, `vigil_location_zone_install_failed{served="none",zone="bad.test."} 1`) {
		t.Errorf("/metrics lacks the failed zone:\n%s", grepLines(metrics, "zone_install_failed"))
	}

	// A new configuration: bad.test still broken (its last version is none), good.test
	// changed; then bad.test fixed.
	n.setConfig(state.NewState(withZones(zone("good.test.", "192.0.2.10", "ok"), zone("bad.test.", "192.0.2.2", `"still`))), SourceStatic)
	eventually(t, 10*time.Second, "good.test's new data", func() (bool, string) {
		got, err := query(s.DNSAddr(), "www.good.test")
		return err == nil && slices.Equal(got, []string{"192.0.2.10"}), fmtAnswer(got, err)
	})
	n.setConfig(state.NewState(withZones(zone("good.test.", "192.0.2.10", "ok"), zone("bad.test.", "192.0.2.2", `"fixed"`))), SourceStatic)
	eventually(t, 10*time.Second, "bad.test installed, nothing degraded", func() (bool, string) {
		got, err := query(s.DNSAddr(), "www.bad.test")
		rd := n.Ready()
		return err == nil && slices.Equal(got, []string{"192.0.2.2"}) && len(rd.Degraded) == 0, fmt.Sprint(got, err, rd.Degraded)
	})
	if _, metrics := get(t, "http://"+s.HTTPAddr()+"/metrics"); strings.Contains(metrics, `vigil_location_zone_install_failed{`) {
		t.Errorf("/metrics still has a failed zone:\n%s", grepLines(metrics, "zone_install_failed"))
	}
}

// grepLines returns the lines of s that hold sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
