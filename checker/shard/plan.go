package shard

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/keyindex"
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
// A Plan is safe for concurrent use: its changes (Update, Put, Remove) exclude its reads.
type Plan struct {
	mu          sync.RWMutex
	regionNames []string        // the document's regions, sorted
	regionIndex map[string]int  // name -> position in regionNames
	regions     []*Region       // live checkers, parallel to regionNames
	checks      []planCheck     // in document order
	checkIndex  *keyindex.Index // check id -> position in checks, by checks[i].id
	regionRefs  []uint16        // each check's regions, flattened
	slots       []int32         // k member positions per (check, region), -1 when the region is short
	dead        int             // entries of regionRefs and slots that removed checks left unused
}

// planCheck is one check's entry in a Plan: 40 bytes plus its slices' share.
type planCheck struct {
	id       string // the string the configuration handed in: shared, not copied
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
	return NewPlanOf(doc.Regions, func(yield func(*config.Check) bool) {
		for i := range doc.Checks {
			if !yield(&doc.Checks[i]) {
				return
			}
		}
	}, m)
}

// NewPlanOf builds the assignment of the probed checks among checks, in a document with the
// given regions, over membership.
func NewPlanOf(regions []string, checks iter.Seq[*config.Check], m Membership) (*Plan, error) {
	p := &Plan{regionIndex: map[string]int{}}
	p.checkIndex = keyindex.New(func(ci int32) string { return p.checks[ci].id })
	p.regionNames = slices.Clone(regions)
	slices.Sort(p.regionNames)
	p.regionNames = slices.Compact(p.regionNames)
	if len(p.regionNames) > 1<<16 {
		return nil, fmt.Errorf("shard: %d regions, at most %d", len(p.regionNames), 1<<16)
	}
	for i, name := range p.regionNames {
		p.regionIndex[name] = i
	}
	var errs []error
	for c := range checks {
		if !probed(c) {
			continue
		}
		if _, dup := p.checkIndex.Get(c.ID); dup || c.ID == "" {
			errs = append(errs, fmt.Errorf("shard: check %q: id empty or repeated", c.ID))
			continue
		}
		if err := p.add(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := p.Update(m); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	p.fit()
	return p, nil
}

// fit keeps the plan's arrays at their size: built by append, they held up to a quarter more.
func (p *Plan) fit() {
	p.checks = fitted(p.checks)
	p.regionRefs = fitted(p.regionRefs)
	p.slots = fitted(p.slots)
}

// fitted returns s, or a copy at its length when its spare room is more than a sixteenth.
func fitted[S ~[]E, E any](s S) S {
	if len(s) < cap(s)-cap(s)/16 {
		return slices.Clone(s)
	}
	return s
}

// probed reports whether a check gets shards: calculated checks combine other checks and
// disabled checks are not probed.
func probed(c *config.Check) bool {
	return c.Protocol != config.ProtocolCalculated && !c.Disabled
}

// regionRefsOf returns the indexes of a check's regions (every region when it names none),
// without repeats.
func (p *Plan) regionRefsOf(c *config.Check) ([]uint16, error) {
	regions := c.Regions
	if len(regions) == 0 {
		regions = p.regionNames
	}
	var refs []uint16
	for _, name := range regions {
		ri, ok := p.regionIndex[name]
		if !ok {
			return nil, fmt.Errorf("shard: check %q: unknown region %q", c.ID, name)
		}
		if !slices.Contains(refs, uint16(ri)) {
			refs = append(refs, uint16(ri))
		}
	}
	return refs, nil
}

// add appends a probed check that the plan does not hold, without assigning it.
func (p *Plan) add(c *config.Check) error {
	if c.CheckersPerRegion < 1 || c.CheckersPerRegion > maxShardSize {
		return fmt.Errorf("shard: check %q: checkers_per_region %d, want 1 to %d", c.ID, c.CheckersPerRegion, maxShardSize)
	}
	refs, err := p.regionRefsOf(c)
	if err != nil {
		return err
	}
	e := planCheck{id: c.ID, hash: HashKey(c.ID), k: uint16(c.CheckersPerRegion), nregions: uint16(len(refs)),
		refs: uint32(len(p.regionRefs)), slots: uint32(len(p.slots))}
	if len(p.slots)+int(e.nregions)*int(e.k) > 1<<31-1 {
		return errors.New("shard: too many checks for one plan")
	}
	p.regionRefs = append(p.regionRefs, refs...)
	p.slots = append(p.slots, make([]int32, int(e.nregions)*int(e.k))...)
	p.checks = append(p.checks, e)
	p.checkIndex.Put(c.ID, int32(len(p.checks)-1))
	return nil
}

// Put adds a check to the plan or changes it, and assigns it over the current membership: a
// cost of one check, whatever the plan holds. A check that is not probed (calculated,
// disabled) is removed.
func (p *Plan) Put(c *config.Check) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !probed(c) {
		p.remove(c.ID)
		return nil
	}
	if ci, ok := p.checkIndex.Get(c.ID); ok {
		refs, err := p.regionRefsOf(c)
		if err != nil {
			return err
		}
		e := p.checks[ci]
		if int(e.k) == c.CheckersPerRegion && slices.Equal(p.regionRefs[e.refs:e.refs+uint32(e.nregions)], refs) {
			return nil // the same shards
		}
		p.remove(c.ID)
	}
	if err := p.add(c); err != nil {
		return err
	}
	if p.regions != nil {
		p.assign(len(p.checks) - 1)
	}
	return nil
}

// Remove takes a check out of the plan, if it holds it: the last check takes its place. The
// space its shards took is reclaimed once half of the plan's space is unused.
func (p *Plan) Remove(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.remove(id)
}

func (p *Plan) remove(id string) {
	ci, ok := p.checkIndex.Delete(id)
	if !ok {
		return
	}
	e := p.checks[ci]
	p.dead += int(e.nregions) * (1 + int(e.k))
	if last := int32(len(p.checks) - 1); ci != last {
		p.checks[ci] = p.checks[last]
		p.checkIndex.Put(p.checks[ci].id, ci) // while the last place still names it
	}
	p.checks = p.checks[:len(p.checks)-1]
	if p.dead > (len(p.slots)+len(p.regionRefs))/2 {
		p.compact()
	}
}

// compact copies the live checks' region references and shards into new arrays.
func (p *Plan) compact() {
	refs := make([]uint16, 0, len(p.regionRefs)-p.dead/2)
	slots := make([]int32, 0, len(p.slots)-p.dead/2)
	for i := range p.checks {
		e := &p.checks[i]
		n, k := uint32(e.nregions), uint32(e.nregions)*uint32(e.k)
		r0, s0 := uint32(len(refs)), uint32(len(slots))
		refs = append(refs, p.regionRefs[e.refs:e.refs+n]...)
		slots = append(slots, p.slots[e.slots:e.slots+k]...)
		e.refs, e.slots = r0, s0
	}
	p.regionRefs, p.slots, p.dead = refs, slots, 0
}

// Update recomputes every assignment for a new membership view, in place.
func (p *Plan) Update(m Membership) error {
	p.mu.Lock()
	defer p.mu.Unlock()
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
	for ci := range p.checks {
		p.assign(ci)
	}
	return nil
}

// assign computes check ci's shards over the current membership.
func (p *Plan) assign(ci int) {
	c := p.checks[ci]
	k := int(c.k)
	for j := range int(c.nregions) {
		r := p.regions[p.regionRefs[int(c.refs)+j]]
		base := int(c.slots) + j*k
		// The zero-length slice at base has the rest of slots as capacity, so the shard is
		// written in place.
		got := r.AppendShard(p.slots[base:base], c.hash, k)
		for s := len(got); s < k; s++ {
			p.slots[base+s] = -1
		}
	}
}

// Region returns the live checkers of a region in the current view, or nil for a region the
// configuration does not name.
func (p *Plan) Region(name string) *Region {
	p.mu.RLock()
	defer p.mu.RUnlock()
	ri, ok := p.regionIndex[name]
	if !ok {
		return nil
	}
	return p.regions[ri]
}

// Checks returns the ids of the checks with shards, in document order (checks put later
// after, a removed check's place taken by the last).
func (p *Plan) Checks() []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]string, len(p.checks))
	for i, c := range p.checks {
		out[i] = c.id
	}
	return out
}

// Shard returns the checkers of region that probe check, highest weight first. It is empty
// when the check is not probed in that region or the region has no live checkers.
func (p *Plan) Shard(check, region string) []string {
	p.mu.RLock()
	defer p.mu.RUnlock()
	ci, ok := p.checkIndex.Get(check)
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
	p.mu.RLock()
	defer p.mu.RUnlock()
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
