package state

import (
	"maps"
	"slices"
	"sort"
	"sync"
)

// Changes says what changed between two states, for a reader that applies the difference
// instead of the whole configuration. A data-plane node updates its assignment per check
// and its DNS zones per zone from it.
type Changes struct {
	// Full: the reader must take the whole state (it is too far behind the change log, or
	// the change was too large to log item by item).
	Full bool
	// Settings: the regions, quorum or name-server settings changed.
	Settings bool
	// Voters: the voters' API URLs changed.
	Voters bool
	// Overrides: the maintenance overrides changed.
	Overrides bool
	// TSIGKeys: the TSIG keys of transfers changed.
	TSIGKeys bool
	// Checks are the ids of the checks put or deleted.
	Checks []string
	// Zones are the apexes of the zones whose head, record sets or name-server shard changed
	// (put or deleted).
	Zones []string
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool {
	return !c.Full && !c.Settings && !c.Voters && !c.Overrides && !c.TSIGKeys && len(c.Checks) == 0 && len(c.Zones) == 0
}

// The keys of a change log: one byte of kind, then the item's key.
const (
	keySettings = "g"
	keyVoters   = "v"
	keyOverride = "o"
	keyTSIG     = "t"
	kindCheck   = 'c'
	kindZone    = 'z'
	kindSet     = 's'
	kindShard   = 'h'
)

// Keys returns the change keys of an edit, sorted.
func (e *Edit) Keys() []string {
	out := make([]string, 0, e.size())
	if e.settings {
		out = append(out, keySettings)
	}
	if e.voters {
		out = append(out, keyVoters)
	}
	if e.overrides {
		out = append(out, keyOverride)
	}
	if e.tsig {
		out = append(out, keyTSIG)
	}
	add := func(kind byte, m map[string]bool) {
		for k := range m {
			out = append(out, string(kind)+k)
		}
	}
	add(kindCheck, e.checks)
	add(kindZone, e.zones)
	add(kindSet, e.sets)
	add(kindShard, e.shards)
	slices.Sort(out)
	return out
}

// ChangesOf groups change keys into Changes.
func ChangesOf(keys map[string]bool) Changes {
	var c Changes
	zones := map[string]bool{}
	for k := range keys {
		switch {
		case k == keySettings:
			c.Settings = true
		case k == keyVoters:
			c.Voters = true
		case k == keyOverride:
			c.Overrides = true
		case k == keyTSIG:
			c.TSIGKeys = true
		case k[0] == kindCheck:
			c.Checks = append(c.Checks, k[1:])
		case k[0] == kindZone, k[0] == kindShard:
			zones[k[1:]] = true
		case k[0] == kindSet:
			apex, _, _ := splitSetKey(k[1:])
			zones[apex] = true
		}
	}
	slices.Sort(c.Checks)
	c.Zones = slices.Sorted(maps.Keys(zones))
	return c
}

// defaultLogSize is how many changed items a change log holds.
const defaultLogSize = 1 << 16

// ChangeLog is a bounded record of which items changed at which index: a reader at index N
// asks for the changes after N, and gets them while the log reaches back that far. It is
// safe for concurrent use.
type ChangeLog struct {
	mu   sync.Mutex
	max  int
	head int // entries before head are dropped
	ents []logEntry
	// floor is the index at and after which every change is held: a reader at N >= floor
	// can be answered.
	floor uint64
}

type logEntry struct {
	index uint64
	key   string
}

func NewChangeLog(max int) *ChangeLog {
	if max <= 0 {
		max = defaultLogSize
	}
	return &ChangeLog{max: max}
}

// Add records the keys changed at index. A change larger than the log is not recorded
// item by item: readers before it must take the whole state.
func (l *ChangeLog) Add(index uint64, keys []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(keys) > l.max {
		l.ents, l.head, l.floor = nil, 0, index
		return
	}
	for _, k := range keys {
		l.ents = append(l.ents, logEntry{index, k})
	}
	if drop := len(l.ents) - l.head - l.max; drop > 0 {
		l.head += drop
		l.floor = max(l.floor, l.ents[l.head-1].index)
	}
	if l.head >= l.max {
		l.ents = slices.Clone(l.ents[l.head:])
		l.head = 0
	}
}

// Reset forgets every change: readers before index must take the whole state (after a
// restore from a snapshot).
func (l *ChangeLog) Reset(index uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ents, l.head, l.floor = nil, 0, index
}

// Since returns the keys changed after from and up to upTo, without repeats; ok is false
// when the log does not reach back to from.
func (l *ChangeLog) Since(from, upTo uint64) (map[string]bool, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if from < l.floor {
		return nil, false
	}
	ents := l.ents[l.head:]
	i := sort.Search(len(ents), func(i int) bool { return ents[i].index > from })
	out := map[string]bool{}
	for ; i < len(ents) && ents[i].index <= upTo; i++ {
		out[ents[i].key] = true
	}
	return out, true
}

// Changes returns what changed after from and up to upTo.
func (l *ChangeLog) Changes(from, upTo uint64) Changes {
	keys, ok := l.Since(from, upTo)
	if !ok {
		return Changes{Full: true}
	}
	return ChangesOf(keys)
}
