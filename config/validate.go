package config

import (
	"fmt"
	"strings"
	"time"
)

// Bounds that Validate applies beyond the model's documented limits.
const (
	maxRegionName        = 63
	maxCheckID           = 64
	maxCheckersPerRegion = 16
	maxPathLen           = 255
	minInterval          = time.Second
	maxInterval          = 300 * time.Second
	minFreshness         = time.Second
	maxFreshness         = 10 * time.Minute
	maxHold              = time.Hour
	maxFleet             = 65536
	maxShardSize         = 13
	maxNegativeTTL       = 86400
)

// validator walks one document, or one item of a document, and collects every problem it
// finds.
type validator struct {
	doc     *Document // the document, or the settings of an item's document
	errs    Errors
	regions map[string]bool // the document's regions
	checks  map[string]int  // check id → index of its first definition (whole documents)
	zones   map[string]int  // zone apex → index of its first definition (whole documents)
	// hasCheck says whether a check id exists, for references to checks.
	hasCheck func(id string) bool
	// setRef names another record set of the zone in a message: "record_sets[3]".
	setRef func(j int) string
}

// newValidator returns a validator for items of a document with d's settings; hasCheck says
// which checks exist.
func newValidator(d *Document, hasCheck func(string) bool) *validator {
	v := &validator{doc: d, regions: make(map[string]bool, len(d.Regions)), hasCheck: hasCheck,
		setRef: func(j int) string { return fmt.Sprintf("record_sets[%d]", j) }}
	for _, r := range d.Regions {
		v.regions[r] = true
	}
	return v
}

// Validate returns every problem of d at once as Errors, each with its path in the document,
// or nil. It does not change d, and it gives the same answer whether or not d was normalised:
// a field left empty counts as its default.
func (d *Document) Validate() error {
	if d == nil {
		return Errors{{Message: "no document"}}
	}
	v := newValidator(d, nil)
	v.checks = make(map[string]int, len(d.Checks))
	v.hasCheck = func(id string) bool { _, ok := v.checks[id]; return ok }
	for i, c := range d.Checks {
		if _, dup := v.checks[c.ID]; !dup && c.ID != "" {
			v.checks[c.ID] = i
		}
	}
	v.zones = make(map[string]int, len(d.Zones))
	v.validateRegions()
	v.validateQuorum()
	v.validateNameServers()
	v.validateNotifications()
	for i := range d.Checks {
		v.validateCheck(i)
	}
	v.validateCycles()
	for i := range d.Zones {
		v.validateZone(i)
	}
	v.validateHostedChildren()
	return v.errs.err()
}

func (v *validator) add(path, format string, args ...any) { v.errs.add(path, format, args...) }

// validateRegions checks that regions exist, are unique and are named like "us-east".
func (v *validator) validateRegions() {
	if len(v.doc.Regions) == 0 {
		v.add("regions", "at least one region is required, e.g. [us-east, eu-west, ap-south]")
	}
	first := map[string]int{}
	for i, r := range v.doc.Regions {
		p := fmt.Sprintf("regions[%d]", i)
		if !validRegion(r) {
			v.add(p, "invalid region name %q: want lower-case letters and digits in words joined by '-', e.g. us-east, at most %d bytes", r, maxRegionName)
			continue
		}
		if j, dup := first[r]; dup {
			v.add(p, "duplicate region %q (also regions[%d])", r, j)
			continue
		}
		first[r] = i
	}
}

// validRegion reports whether r is named like "us-east" or "eu-west-2": words of lower-case
// letters and digits joined by single hyphens, beginning with a letter.
func validRegion(r string) bool {
	if r == "" || len(r) > maxRegionName || r[0] < 'a' || r[0] > 'z' || r[len(r)-1] == '-' {
		return false
	}
	for i := 0; i < len(r); i++ {
		c := r[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '-' && r[i-1] != '-':
		default:
			return false
		}
	}
	return true
}

// validateQuorum checks the location-wide verdict settings.
func (v *validator) validateQuorum() {
	q := v.doc.Quorum
	if w := q.FreshnessWindow.Std(); w < minFreshness || w > maxFreshness {
		v.add("quorum.freshness_window", "must be %s..%s, got %s", minFreshness, maxFreshness, w)
	}
	if h := q.Hold.Std(); h < 0 || h > maxHold {
		v.add("quorum.hold", "must be 0s..%s, got %s", maxHold, h)
	}
}

// validateNameServers checks the virtual name-server fleet that zones are sharded over.
func (v *validator) validateNameServers() {
	ns := v.doc.NameServers
	const p = "name_servers"
	if ns.Domain == "" {
		v.add(p+".domain", "required: the domain the virtual name servers are named under, e.g. ns.example.net.")
	} else if prob := nameProblem(absName(ns.Domain)); prob != "" {
		v.add(p+".domain", "invalid domain name %q: %s", ns.Domain, prob)
	}
	if ns.Fleet < 1 || ns.Fleet > maxFleet {
		v.add(p+".fleet", "must be 1..%d, got %d", maxFleet, ns.Fleet)
	}
	if hi := min(maxShardSize, max(ns.Fleet, 1)); ns.ShardSize < 1 || ns.ShardSize > hi {
		v.add(p+".shard_size", "must be 1..%d (at most %d and at most fleet), got %d", hi, maxShardSize, ns.ShardSize)
	}
	if ns.MaxOverlap < 0 || ns.ShardSize >= 1 && ns.MaxOverlap > ns.ShardSize {
		v.add(p+".max_overlap", "must be 0..shard_size (%d), got %d", ns.ShardSize, ns.MaxOverlap)
	}
	if ns.Mode != "stateless" && ns.Mode != "stateful" {
		v.add(p+".mode", "must be stateless or stateful, got %q", ns.Mode)
	}
}

// validateCycles reports every cycle among calculated checks once, naming it, at the check
// where the walk in document order first enters it.
func (v *validator) validateCycles() {
	checks := v.doc.Checks
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]uint8, len(checks))
	var path []int
	var visit func(i int)
	visit = func(i int) {
		state[i] = onPath
		path = append(path, i)
		for _, child := range checks[i].Children {
			j, ok := v.checks[child]
			if !ok || j == i || checks[j].Protocol != ProtocolCalculated {
				continue // unknown children and self-references are reported on their own
			}
			switch state[j] {
			case unseen:
				visit(j)
			case onPath:
				k := len(path) - 1
				for path[k] != j {
					k--
				}
				ids := make([]string, 0, len(path)-k+1)
				for _, n := range path[k:] {
					ids = append(ids, checks[n].ID)
				}
				ids = append(ids, checks[j].ID)
				v.add(fmt.Sprintf("checks[%d].children", j), "%s", cycleMessage(ids))
			}
		}
		path = path[:len(path)-1]
		state[i] = done
	}
	for i := range checks {
		if state[i] == unseen && checks[i].Protocol == ProtocolCalculated && v.checks[checks[i].ID] == i {
			visit(i)
		}
	}
}

// cycleMessage says that the calculated checks ids (the first repeated at the end) form a
// cycle.
func cycleMessage(ids []string) string {
	return "calculated checks form a cycle: " + strings.Join(ids, " -> ")
}
