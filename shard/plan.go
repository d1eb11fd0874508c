package shard

import (
	"errors"
	"fmt"
	"slices"

	"github.com/vigil-dns/vigil/config"
)

// Membership is the live checkers of each region as one node sees them: region name to
// checker ids. Order does not matter; views of different nodes may differ during partitions.
type Membership map[string][]string

// Plan is the assignment of every probed check to its shards, one per region: which checkers
// probe what. It is built once per configuration and recomputed in place, without allocating,
// when membership changes; each check id is hashed once, at build time.
//
// Only checks that are probed have shards: calculated checks combine other checks and
// disabled checks are not probed.
//
// A Plan is not safe for concurrent use while Update runs; callers that share one across
// goroutines build a new Plan or guard it.
type Plan struct {
	regionNames []string       // the document's regions, sorted
	regionIndex map[string]int // name -> position in regionNames
	regions     []*Region      // live checkers, parallel to regionNames
	checks      []planCheck    // in document order
	checkIndex  map[string]int
	regionRefs  []uint16 // each check's regions, flattened
	slots       []int32  // k member positions per (check, region), -1 when the region is short
}

// planCheck is one check's entry in a Plan: 32 bytes plus its slices' share.
type planCheck struct {
	id       string
	hash     uint64
	k        uint16
	nregions uint16
	refs     uint32 // first entry in regionRefs
	slots    uint32 // first entry in slots: nregions runs of k
}

// maxShardSize bounds checkers_per_region so that a Plan's arrays stay addressable.
const maxShardSize = 1 << 10

// NewPlan builds the assignment of doc's probed checks over membership. Regions named in
// membership but not in doc are errors, as are duplicate check ids and shard sizes below 1.
func NewPlan(doc *config.Document, m Membership) (*Plan, error) {
	if doc == nil {
		return nil, errors.New("shard: nil configuration")
	}
	p := &Plan{regionIndex: map[string]int{}, checkIndex: map[string]int{}}
	p.regionNames = slices.Clone(doc.Regions)
	slices.Sort(p.regionNames)
	p.regionNames = slices.Compact(p.regionNames)
	if len(p.regionNames) > 1<<16 {
		return nil, fmt.Errorf("shard: %d regions, at most %d", len(p.regionNames), 1<<16)
	}
	for i, name := range p.regionNames {
		p.regionIndex[name] = i
	}
	var errs []error
	for _, c := range doc.Checks {
		if c.Protocol == config.ProtocolCalculated || c.Disabled {
			continue
		}
		if _, dup := p.checkIndex[c.ID]; dup || c.ID == "" {
			errs = append(errs, fmt.Errorf("shard: check %q: id empty or repeated", c.ID))
			continue
		}
		if c.CheckersPerRegion < 1 || c.CheckersPerRegion > maxShardSize {
			errs = append(errs, fmt.Errorf("shard: check %q: checkers_per_region %d, want 1 to %d", c.ID, c.CheckersPerRegion, maxShardSize))
			continue
		}
		regions := c.Regions
		if len(regions) == 0 {
			regions = p.regionNames
		}
		e := planCheck{id: c.ID, hash: HashKey(c.ID), k: uint16(c.CheckersPerRegion),
			refs: uint32(len(p.regionRefs)), slots: uint32(len(p.slots))}
		seen := map[int]bool{}
		for _, name := range regions {
			ri, ok := p.regionIndex[name]
			if !ok {
				errs = append(errs, fmt.Errorf("shard: check %q: unknown region %q", c.ID, name))
				continue
			}
			if seen[ri] {
				continue
			}
			seen[ri] = true
			p.regionRefs = append(p.regionRefs, uint16(ri))
			e.nregions++
		}
		if len(p.slots)+int(e.nregions)*int(e.k) > 1<<31-1 {
			return nil, errors.New("shard: too many checks for one plan")
		}
		p.slots = append(p.slots, make([]int32, int(e.nregions)*int(e.k))...)
		p.checkIndex[c.ID] = len(p.checks)
		p.checks = append(p.checks, e)
	}
	if err := p.Update(m); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// Update recomputes every assignment for a new membership view, in place.
func (p *Plan) Update(m Membership) error {
	regions := make([]*Region, len(p.regionNames))
	for name, ids := range m {
		ri, ok := p.regionIndex[name]
		if !ok {
			return fmt.Errorf("shard: membership names region %q, which the configuration does not", name)
		}
		regions[ri] = NewRegion(name, ids)
	}
	for i, r := range regions {
		if r == nil {
			regions[i] = NewRegion(p.regionNames[i], nil)
		}
	}
	p.regions = regions
	for _, c := range p.checks {
		k := int(c.k)
		for j := range int(c.nregions) {
			r := regions[p.regionRefs[int(c.refs)+j]]
			base := int(c.slots) + j*k
			// The zero-length slice at base has the rest of slots as capacity, so the
			// shard is written in place.
			got := r.AppendShard(p.slots[base:base], c.hash, k)
			for s := len(got); s < k; s++ {
				p.slots[base+s] = -1
			}
		}
	}
	return nil
}

// Region returns the live checkers of a region in the current view, or nil for a region the
// configuration does not name.
func (p *Plan) Region(name string) *Region {
	ri, ok := p.regionIndex[name]
	if !ok {
		return nil
	}
	return p.regions[ri]
}

// Checks returns the ids of the checks with shards, in document order.
func (p *Plan) Checks() []string {
	out := make([]string, len(p.checks))
	for i, c := range p.checks {
		out[i] = c.id
	}
	return out
}

// Shard returns the checkers of region that probe check, highest weight first. It is empty
// when the check is not probed in that region or the region has no live checkers.
func (p *Plan) Shard(check, region string) []string {
	ci, ok := p.checkIndex[check]
	ri, rok := p.regionIndex[region]
	if !ok || !rok {
		return nil
	}
	c := p.checks[ci]
	for j := range int(c.nregions) {
		if int(p.regionRefs[int(c.refs)+j]) != ri {
			continue
		}
		var out []string
		base := int(c.slots) + j*int(c.k)
		for _, m := range p.slots[base : base+int(c.k)] {
			if m >= 0 {
				out = append(out, p.regions[ri].Checker(int(m)))
			}
		}
		return out
	}
	return nil
}

// ChecksFor returns the checks that checker, a member of region, probes, in document order:
// what a checker runs.
func (p *Plan) ChecksFor(region, checker string) []string {
	ri, ok := p.regionIndex[region]
	if !ok {
		return nil
	}
	me := int32(p.regions[ri].Index(checker))
	if me < 0 {
		return nil
	}
	var out []string
	for _, c := range p.checks {
		for j := range int(c.nregions) {
			if int(p.regionRefs[int(c.refs)+j]) != ri {
				continue
			}
			base := int(c.slots) + j*int(c.k)
			if slices.Contains(p.slots[base:base+int(c.k)], me) {
				out = append(out, c.id)
			}
		}
	}
	return out
}

// workerBase returns, for each region, the first global worker number of its checkers, so
// that a checker is one integer across all regions.
func (p *Plan) workerBase() []int {
	base := make([]int, len(p.regions)+1)
	for i, r := range p.regions {
		base[i+1] = base[i] + r.Len()
	}
	return base
}

// appendWorkers appends the global worker numbers of check ci's shards, sorted.
func (p *Plan) appendWorkers(dst []int, ci int, base []int) []int {
	c := p.checks[ci]
	start := len(dst)
	for j := range int(c.nregions) {
		ri := int(p.regionRefs[int(c.refs)+j])
		off := int(c.slots) + j*int(c.k)
		for _, m := range p.slots[off : off+int(c.k)] {
			if m >= 0 {
				dst = append(dst, base[ri]+int(m))
			}
		}
	}
	slices.Sort(dst[start:])
	return dst
}

// workerName returns "region/checker" for a global worker number.
func (p *Plan) workerName(w int, base []int) string {
	ri, _ := slices.BinarySearch(base, w+1)
	ri--
	return p.regionNames[ri] + "/" + p.regions[ri].Checker(w-base[ri])
}
