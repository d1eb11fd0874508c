package agent

import (
	"context"
	"time"

	"github.com/vigil-dns/vigil/location/routing"
)

// localityInterval is how often a location orders the regions again by the round-trip
// times its gossip pings measure.
const localityInterval = 2 * time.Second

// runLocality keeps the DNS server's locality (for nearest record sets) up to date until ctx
// ends: the node's region first, then the configuration's other regions by the round-trip
// time measured to their nodes (routing.NewLocality).
func (n *Node) runLocality(ctx context.Context) error {
	t := time.NewTicker(localityInterval)
	defer t.Stop()
	for {
		n.updateLocality(time.Now())
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// updateLocality sets the DNS server's locality from the pool's measurements at now.
func (n *Node) updateLocality(now time.Time) {
	var rtt map[string]time.Duration
	if n.pool != nil {
		rtt = n.pool.RegionRTTs(now)
	}
	n.mu.Lock()
	st := n.state
	n.mu.Unlock()
	var regions []string
	if st != nil {
		regions = st.Regions()
	}
	n.dns.SetLocality(routing.NewLocality(n.cfg.Region, regions, rtt))
}

// Locality returns where the location stands for nearest record sets: its region, the other
// regions nearest first and the round-trip times measured to them; the zero value without
// the location role.
func (n *Node) Locality() routing.Locality {
	if n.dns == nil {
		return routing.Locality{}
	}
	return n.dns.Locality()
}
