package location

import (
	"bytes"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/dnssec"
)

// nsecChain is the NSEC chain of a signed zone whose denials it proves (config.DenialNSEC):
// the zone's authoritative names that hold record sets (neither empty non-terminals nor
// names below a delegation), in canonical order (RFC 4034 §6.1), each with its NSEC record
// listing every type it holds, made at the first answer that needs it and kept. Their
// signatures are made at the first answer that needs them and then come from the signature
// cache, so a denial costs no new signature whatever name is asked.
type nsecChain struct {
	apex  string
	ttl   uint32 // of the NSEC records: the zone's negative TTL
	names []string
	keys  [][]byte // canonicalKey of each name
	nodes []*node  // of each name
	nsecs []atomic.Pointer[dns.NSEC]
}

// buildChain returns the NSEC chain of z (its record sets added).
func buildChain(z *zone) *nsecChain {
	type entry struct {
		name string
		key  []byte
		node *node
	}
	var entries []entry
	for name, n := range z.names {
		if len(n.sets) == 0 {
			continue
		}
		if at, cut := z.cutAbove(name); cut != nil && at != name {
			continue // below a delegation: not the zone's data
		}
		entries = append(entries, entry{name, canonicalKey(name), n})
	}
	slices.SortFunc(entries, func(a, b entry) int { return bytes.Compare(a.key, b.key) })
	c := &nsecChain{apex: z.name, ttl: z.negTTL, names: make([]string, len(entries)), keys: make([][]byte, len(entries)),
		nodes: make([]*node, len(entries)), nsecs: make([]atomic.Pointer[dns.NSEC], len(entries))}
	for i, e := range entries {
		c.names[i], c.keys[i], c.nodes[i] = e.name, e.key, e.node
	}
	return c
}

// link returns the NSEC record at the chain's name i, to the next name (the last to the
// apex), listing the name's types (nodeTypes); made once.
func (c *nsecChain) link(i int) *dns.NSEC {
	if nsec := c.nsecs[i].Load(); nsec != nil {
		return nsec
	}
	types := nodeTypes(c.apex, c.names[i], c.nodes[i])
	nsec := dnssec.Link(c.names[i], c.names[(i+1)%len(c.names)], types, c.ttl)
	if c.nsecs[i].CompareAndSwap(nil, nsec) {
		return nsec
	}
	return c.nsecs[i].Load()
}

// canonicalKey returns a key of name whose byte order is the canonical order of names (RFC
// 4034 §6.1): the labels from the rightmost, each octet in lower case as a 16-bit value one
// above it, each label closed by two zero bytes (so that a label sorts before every longer
// label it begins, and a name before the names below it).
func canonicalKey(name string) []byte {
	var wire [256]byte
	n, err := dns.PackDomainName(dns.Fqdn(name), wire[:], 0, nil, false)
	if err != nil {
		n = 0
	}
	var starts [128]int
	labels := 0
	for off := 0; off < n && wire[off] != 0 && labels < len(starts); off += int(wire[off]) + 1 {
		starts[labels] = off
		labels++
	}
	key := make([]byte, 0, 2*n)
	for l := labels - 1; l >= 0; l-- {
		off := starts[l]
		for _, b := range wire[off+1 : off+1+int(wire[off])] {
			if b >= 'A' && b <= 'Z' {
				b += 'a' - 'A'
			}
			v := uint16(b) + 1
			key = append(key, byte(v>>8), byte(v))
		}
		key = append(key, 0, 0)
	}
	return key
}

// cover returns the index of the last name of the chain at or before name in canonical
// order: the NSEC record there is name's own (when it is in the chain) or covers it. The
// apex is the first name of every chain, and name is in the zone, so there is one.
func (c *nsecChain) cover(name string) int {
	key := canonicalKey(name)
	i := sort.Search(len(c.keys), func(i int) bool { return bytes.Compare(c.keys[i], key) > 0 })
	return max(0, i-1)
}

// has reports the index of name in the chain, if it is there (never in a nil chain).
func (c *nsecChain) has(name string) (int, bool) {
	if c == nil || len(c.names) == 0 {
		return 0, false
	}
	i := c.cover(name)
	return i, c.names[i] == name
}

// closestEncloser returns the longest ancestor of name (not in the zone) that the zone
// holds, an empty non-terminal or a name with record sets: at worst the apex.
func (z *zone) closestEncloser(name string) string {
	for off, end := dns.NextLabel(name, 0); !end; off, end = dns.NextLabel(name, off) {
		if anc := name[off:]; z.names[anc] != nil {
			return anc
		}
	}
	return z.name
}
