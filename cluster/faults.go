package cluster

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// SetTargetDown makes region's demo target fail its health check (down), or pass it.
func (c *Cluster) SetTargetDown(region string, down bool) error {
	t, ok := c.o.Targets[region]
	if !ok {
		return fmt.Errorf("no target in region %q", region)
	}
	t.SetDown(down)
	return nil
}

// links returns the simulated links that make up region r: its own (its locations') and
// those of its checkers with a link of their own.
func (c *Cluster) links(r string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []string{r}
	for _, id := range c.checkers {
		if strings.HasPrefix(id, r+"-checker-") {
			out = append(out, id)
		}
	}
	return out
}

// betweenRegions calls f for every pair of simulated links, one of region a, one of b.
func (c *Cluster) betweenRegions(a, b string, f func(x, y string) error) error {
	if !slices.Contains(c.o.Regions, a) || !slices.Contains(c.o.Regions, b) || a == b {
		return fmt.Errorf("regions %q and %q: want two regions of %s", a, b, strings.Join(c.o.Regions, ", "))
	}
	for _, x := range c.links(a) {
		for _, y := range c.links(b) {
			if err := f(x, y); err != nil {
				return fmt.Errorf("cluster: %w", err)
			}
		}
	}
	return nil
}

// Cut cuts one region from every other, or two regions apart: every link between the nodes
// of one and those of the other, gossip and probes.
func (c *Cluster) Cut(rs ...string) error {
	if len(rs) == 2 {
		return c.betweenRegions(rs[0], rs[1], c.sim.Cut)
	}
	if len(rs) != 1 {
		return fmt.Errorf("a cut names one region or two, not %q", rs)
	}
	for _, o := range c.o.Regions {
		if o != rs[0] {
			if err := c.betweenRegions(rs[0], o, c.sim.Cut); err != nil {
				return err
			}
		}
	}
	return nil
}

// CutOneWay loses every packet from region from to region to; connections between them fail
// either way.
func (c *Cluster) CutOneWay(from, to string) error {
	return c.betweenRegions(from, to, c.sim.CutOneWay)
}

// SetLoss loses that fraction (0 to 1) of the packets between regions a and b, each way.
func (c *Cluster) SetLoss(a, b string, p float64) error {
	return c.betweenRegions(a, b, func(x, y string) error { return c.sim.SetLoss(x, y, p) })
}

// SetLatency delays every packet between regions a and b by d, each way.
func (c *Cluster) SetLatency(a, b string, d time.Duration) error {
	return c.betweenRegions(a, b, func(x, y string) error { return c.sim.SetLatency(x, y, d) })
}

// Heal restores every link: no cut, loss or delay is left.
func (c *Cluster) Heal() { c.sim.HealAll() }

// SetOffline cuts every link of one checker with a link of its own (gossip and probes), or
// restores them.
func (c *Cluster) SetOffline(checker string, offline bool) error {
	c.mu.Lock()
	ok := slices.Contains(c.checkers, checker)
	ids := strings.Join(c.checkers, ", ")
	c.mu.Unlock()
	if !ok {
		return fmt.Errorf("no checker %q (checkers: %s)", checker, ids)
	}
	if offline {
		return c.sim.Isolate(checker)
	}
	for _, r := range c.sim.Regions() {
		if r != checker {
			if err := c.sim.Heal(checker, r); err != nil {
				return err
			}
		}
	}
	return nil
}
