package verdict

import (
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/quorum"
)

// TestCheckersStaleSince: the engine says when each stale checker went stale (its progress
// plus the freshness window), and nothing for a fresh checker or one never heard.
func TestCheckersStaleSince(t *testing.T) {
	e := New()
	window := quorum.FreshnessWindow(config.QuorumSettings{})
	e.Progress("fresh", "r1", t0)
	e.Progress("stale", "r2", t0.Add(-time.Hour))
	e.Progress("never", "r3", time.Time{})
	e.Advance(t0.Add(time.Second))
	got := map[string]quorum.HeardChecker{}
	e.Checkers(func(c quorum.HeardChecker) { got[c.ID] = c })
	if c := got["fresh"]; !c.Fresh || !c.StaleSince.IsZero() {
		t.Errorf("fresh checker: %+v", c)
	}
	if c := got["stale"]; c.Fresh || !c.StaleSince.Equal(t0.Add(-time.Hour+window)) || c.Region != "r2" {
		t.Errorf("stale checker: %+v, want stale since %s", c, t0.Add(-time.Hour+window))
	}
	if c := got["never"]; c.Fresh || !c.StaleSince.IsZero() {
		t.Errorf("checker never heard: %+v", c)
	}
}
