package agent

import (
	"fmt"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/quorum"
)

// A step that changes more verdicts than the history records at once (historyChunk) records
// every one of them: the location's first load decides all its checks in a step or a few.
func TestHistoryRecordsEveryChangeOfALargeStep(t *testing.T) {
	checks := historyChunk + historyChunk/4
	doc := config.Scale{Checks: checks, Regions: []string{"us-east"}, Protocol: config.ProtocolHTTP}.Document()
	cfg := DefaultConfig()
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir = "loc", "us-east", RoleLocation, t.TempDir()
	cfg.Gossip.Bind, cfg.Gossip.Keys, cfg.Gossip.Profile = "127.0.0.1:0", [][]byte{testKey}, gossip.ProfileLocal
	cfg.DNSAddr, cfg.HTTPAddr, cfg.Static = "127.0.0.1:0", "off", doc
	cfg.Logger, cfg.Registerer = testLogger(), newReg()
	n := mustNew(t, cfg)
	start(t, n)
	chk := fakeChecker(t, "chk", "us-east", n.GossipAddr())
	for i := range checks {
		if err := chk.Publish(fmt.Sprintf("c%d", i), gossip.Entry{Status: checker.StatusHealthy, Consecutive: 3}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "every check decided healthy and recorded so", func() (bool, string) {
		n.loc.mu.Lock()
		healthy := n.loc.engine.Counts()[quorum.StateHealthy]
		n.loc.mu.Unlock()
		recorded := 0
		for after := ""; ; {
			page, next, err := n.HistorySummaries(after, 1000, time.Now())
			if err != nil {
				return false, err.Error()
			}
			for _, h := range page {
				if h.State == quorum.StateHealthy.String() {
					recorded++
				}
			}
			if next == "" {
				break
			}
			after = next
		}
		return healthy == checks && recorded == checks, fmt.Sprintf("%d of %d healthy, %d recorded healthy", healthy, checks, recorded)
	})
}
