package shard

import (
	"cmp"
	"fmt"
	"iter"
	"slices"
)

// Neighbor is another check or zone that shares workers (checkers, name servers) with the
// subject of a blast-radius analysis.
type Neighbor struct {
	// Name is the check id or zone name.
	Name string `json:"name"`
	// Shared is how many workers it has in common with the subject.
	Shared int `json:"shared"`
	// Size is how many workers it has.
	Size int `json:"size"`
}

// BlastRadius says how far a poisoned subject reaches: if every worker in its shard fails,
// which other checks or zones lose how many of theirs.
type BlastRadius struct {
	// Subject is the check id or zone name analysed.
	Subject string `json:"subject"`
	// Workers are the subject's shard.
	Workers []string `json:"workers"`
	// Others is how many other checks or zones were compared.
	Others int `json:"others"`
	// Histogram[i] is how many others share exactly i workers with the subject.
	Histogram []int `json:"histogram"`
	// Contained is how many others have every one of their workers in the subject's shard:
	// those the subject's poison takes down entirely. Shuffle sharding aims for none.
	Contained int `json:"contained"`
	// Neighbors are the others that share at least one worker, most shared first (then by
	// name), at most the limit asked for.
	Neighbors []Neighbor `json:"neighbors"`
	// MoreNeighbors is how many sharing others were left out of Neighbors by the limit.
	MoreNeighbors int `json:"more_neighbors"`
}

// Analyze computes the blast radius of subject, whose shard is workers, over every item of
// all (the subject itself, found by name, is skipped). Workers are numbers that identify one
// worker across all the items. At most limit neighbors are listed; a negative limit lists all.
func Analyze(subject string, workers []int, all iter.Seq2[string, []int], limit int) BlastRadius {
	mine := slices.Clone(workers)
	slices.Sort(mine)
	mine = slices.Compact(mine)
	br := BlastRadius{Subject: subject, Histogram: make([]int, len(mine)+1)}
	var neighbors []Neighbor
	for name, theirs := range all {
		if name == subject {
			continue
		}
		br.Others++
		n := 0
		for _, w := range theirs {
			if _, ok := slices.BinarySearch(mine, w); ok {
				n++
			}
		}
		n = min(n, len(mine)) // a malformed item listing a worker twice cannot overflow
		br.Histogram[n]++
		if n > 0 && n == len(theirs) {
			br.Contained++
		}
		if n > 0 {
			neighbors = append(neighbors, Neighbor{Name: name, Shared: n, Size: len(theirs)})
		}
	}
	slices.SortFunc(neighbors, func(a, b Neighbor) int {
		return cmp.Or(cmp.Compare(b.Shared, a.Shared), cmp.Compare(a.Name, b.Name))
	})
	if limit >= 0 && len(neighbors) > limit {
		br.MoreNeighbors = len(neighbors) - limit
		neighbors = neighbors[:limit]
	}
	br.Neighbors = neighbors
	return br
}

// BlastRadius analyses one check: which other checks share how many of its checkers, counted
// across all regions.
func (p *Plan) BlastRadius(check string, limit int) (BlastRadius, error) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	ci, ok := p.checkIndex.Get(check)
	if !ok {
		return BlastRadius{}, fmt.Errorf("shard: blast radius: no probed check %q", check)
	}
	base := p.workerBase()
	mine := p.appendWorkers(nil, int(ci), base)
	all := func(yield func(string, []int) bool) {
		var buf []int
		for i, c := range p.checks {
			buf = p.appendWorkers(buf[:0], i, base)
			if !yield(c.id, buf) {
				return
			}
		}
	}
	br := Analyze(check, mine, all, limit)
	br.Workers = make([]string, len(mine))
	for i, w := range mine {
		br.Workers[i] = p.workerName(w, base)
	}
	return br, nil
}

// BlastRadius analyses one allocated zone: which other zones share how many of its name
// servers.
func (a *Allocator) BlastRadius(zone string, limit int) (BlastRadius, error) {
	name := CanonicalName(zone)
	mine, ok := a.Servers(name)
	if !ok {
		return BlastRadius{}, fmt.Errorf("shard: blast radius: zone %s has no name servers", name)
	}
	br := Analyze(name, mine, a.All(), limit)
	br.Workers = a.ns.Names(mine)
	return br, nil
}
