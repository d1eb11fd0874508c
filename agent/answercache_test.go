package agent

import (
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/location"
)

// Config.AnswerCache and Config.UDPSockets reach the location's server: a node with the
// cache off has none (every UDP query takes the full path) and binds the sockets asked for,
// and still answers, also a question asked again; a node with the defaults has the default
// cache.
func TestAnswerCacheAndUDPSocketsReachTheLocation(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	node := func(id string, set func(*Config)) *started {
		cfg := DefaultConfig()
		cfg.ID, cfg.Region, cfg.DataDir = id, "us-east", t.TempDir()
		cfg.Roles = RoleLocation
		cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile = "127.0.0.1:0", [][]byte{testKey}, gossip.ProfileLocal
		cfg.DNSAddr, cfg.HTTPAddr = "127.0.0.1:0", "off"
		cfg.Static = demoDoc(t, targets)
		cfg.Logger, cfg.Registerer = testLogger(), newReg()
		set(&cfg)
		n, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return start(t, n)
	}
	off := node("off", func(c *Config) { c.AnswerCache, c.UDPSockets = -1, 3 })
	def := node("default", func(*Config) {})

	if got := off.dns.AnswerCacheSize(); got != 0 {
		t.Errorf("AnswerCache -1: the location's cache holds %d answers, want none", got)
	}
	if got := def.dns.AnswerCacheSize(); got != location.DefaultAnswerCache {
		t.Errorf("AnswerCache 0: the location's cache holds %d answers, want %d", got, location.DefaultAnswerCache)
	}
	if runtime.GOOS == "linux" {
		if got := off.dns.UDPSockets(); got != 3 {
			t.Errorf("UDPSockets 3: the location bound %d", got)
		}
		if got, want := def.dns.UDPSockets(), runtime.GOMAXPROCS(0); got != want {
			t.Errorf("UDPSockets 0: the location bound %d, want one per core (%d)", got, want)
		}
	}
	for _, s := range []*started{off, def} {
		eventually(t, 10*time.Second, "static answers", func() (bool, string) {
			got, err := query(s.DNSAddr(), "static.demo.vigil.test")
			return err == nil && slices.Equal(got, []string{"192.0.2.100"}), fmtAnswer(got, err)
		})
		for range 5 { // asked again: from the cache of one, by the full path of the other
			if got, err := query(s.DNSAddr(), "static.demo.vigil.test"); err != nil || !slices.Equal(got, []string{"192.0.2.100"}) {
				t.Fatalf("node %s: static asked again: %s", s.cfg.ID, fmtAnswer(got, err))
			}
		}
	}
}
