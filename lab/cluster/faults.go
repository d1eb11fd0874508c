package cluster

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vigil-dns/vigil/regions"
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

// Apply makes a fault between regions happen on every pair of simulated links, one of
// each region: those of the regions' locations and of their checkers, gossip and probes.
func (c *Cluster) Apply(f regions.Fault) error {
	if err := f.Validate(c.o.Regions); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	if f.Kind == regions.Heal && f.A == "" {
		c.sim.HealAll()
		return nil
	}
	if f.A == f.B {
		return fmt.Errorf("cluster: %s: want two regions of %s", f, strings.Join(c.o.Regions, ", "))
	}
	for _, b := range c.o.Regions {
		if b == f.A || f.B != "" && b != f.B {
			continue
		}
		for _, x := range c.links(f.A) {
			for _, y := range c.links(b) {
				between := f
				between.A, between.B = x, y
				if err := c.sim.Apply(between); err != nil {
					return fmt.Errorf("cluster: %w", err)
				}
			}
		}
	}
	return nil
}

// Cut cuts one region from every other, or two regions apart.
func (c *Cluster) Cut(rs ...string) error {
	if len(rs) != 1 && len(rs) != 2 {
		return fmt.Errorf("cluster: a cut names one region or two, not %q", rs)
	}
	f := regions.Fault{Kind: regions.Cut, A: rs[0]}
	if len(rs) == 2 {
		f.B = rs[1]
	}
	return c.Apply(f)
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
