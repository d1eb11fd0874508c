package node

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/vigil-dns/vigil/routing"
)

// localityInterval is how often a location orders the regions again by the round-trip
// times its gossip pings measure.
const localityInterval = 2 * time.Second

// runLocality keeps the DNS server's locality (for nearest record sets) up to date until ctx
// ends: the node's region first, then the configuration's other regions by the round-trip
// time measured to their nodes.
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
	n.dns.SetLocality(locality(n.cfg.Region, regions, rtt))
}

// locality orders regions for a location in own: own first, then the regions measured
// (rtt), nearest first, then the rest in the configuration's order.
func locality(own string, regions []string, rtt map[string]time.Duration) routing.Locality {
	loc := routing.Locality{Region: own, RTT: rtt}
	for _, r := range regions {
		if r != own {
			loc.Order = append(loc.Order, r)
		}
	}
	slices.SortStableFunc(loc.Order, func(a, b string) int {
		da, oka := rtt[a]
		db, okb := rtt[b]
		switch {
		case oka && okb:
			return cmp.Compare(da, db)
		case oka:
			return -1
		case okb:
			return 1
		}
		return 0
	})
	return loc
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
