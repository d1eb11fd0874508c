package shard

// Assigned returns how many distinct checkers the plan's shards name, over every region: the
// checkers a location expects to hear from. It reads the plan's arrays once and allocates one
// flag per live checker.
func (p *Plan) Assigned() int {
	seen := make([][]bool, len(p.regions))
	for ri, r := range p.regions {
		seen[ri] = make([]bool, r.Len())
	}
	n := 0
	for _, c := range p.checks {
		k := int(c.k)
		for j := range int(c.nregions) {
			ri := int(p.regionRefs[int(c.refs)+j])
			base := int(c.slots) + j*k
			for _, m := range p.slots[base : base+k] {
				if m >= 0 && !seen[ri][m] {
					seen[ri][m] = true
					n++
				}
			}
		}
	}
	return n
}
