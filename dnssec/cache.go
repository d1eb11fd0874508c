package dnssec

import (
	"sync"

	"github.com/miekg/dns"
)

// DefaultCacheSize is the number of signatures a Signer keeps by default.
const DefaultCacheSize = 20000

// sigKey names one signature: the SHA-256 of the signing key's tag and the record set in
// canonical wire form.
type sigKey [32]byte

// sigCache holds signatures in two generations of at most half its size each: a lookup that
// hits the old generation moves the entry to the new one; when the new one is full it
// becomes the old one and the old one is dropped. Memory is bounded by size entries; what is
// asked often stays.
//
// Beside it, the same signatures by identity (refKey): the records a zone's compiled record
// sets hold are never changed, so the same records (the same pointers, in the same order)
// are the same record set, found without putting it in canonical form and hashing it. The
// identity entries hold their records, so that a pointer is never reused while it names a
// signature; they are bounded and rotated as the others.
type sigCache struct {
	mu     sync.Mutex
	byData generations[sigKey]
	byRef  generations[refKey]
}

// generations holds at most 2×half signatures by key K in two maps: a lookup that finds one in
// the older map moves it to the newer, and a full newer map becomes the older one, dropping
// what was not looked up since. The caller holds sigCache.mu.
type generations[K comparable] struct {
	half     int
	cur, old map[K]*signature
}

func newGenerations[K comparable](half int) generations[K] {
	return generations[K]{half: half, cur: make(map[K]*signature, half), old: map[K]*signature{}}
}

func (g *generations[K]) get(k K) *signature {
	if sig := g.cur[k]; sig != nil {
		return sig
	}
	sig := g.old[k]
	if sig != nil {
		delete(g.old, k)
		g.put(k, sig)
	}
	return sig
}

func (g *generations[K]) put(k K, sig *signature) {
	if len(g.cur) >= g.half {
		g.old, g.cur = g.cur, make(map[K]*signature, g.half)
	}
	g.cur[k] = sig
}

// maxRefRecords is the largest record set found by identity; a larger one is found by content.
const maxRefRecords = 4

// refKey names a signature by the identity of the records signed: the signing key's tag, the
// number of records and the records themselves (pointers compare by identity).
type refKey struct {
	tag uint16
	n   int
	rrs [maxRefRecords]dns.RR
}

// makeRefKey returns the identity key of rrset signed by tag; ok is false for a set too large.
func makeRefKey(rrset []dns.RR, tag uint16) (k refKey, ok bool) {
	if len(rrset) > maxRefRecords {
		return k, false
	}
	k.tag, k.n = tag, len(rrset)
	copy(k.rrs[:], rrset)
	return k, true
}

func newSigCache(size int) *sigCache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	half := max(1, size/2)
	return &sigCache{byData: newGenerations[sigKey](half), byRef: newGenerations[refKey](half)}
}

// getRef returns the cached signature of the records of k, or nil.
func (c *sigCache) getRef(k refKey) *signature {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byRef.get(k)
}

// putRef stores the signature of the records of k.
func (c *sigCache) putRef(k refKey, sig *signature) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byRef.put(k, sig)
}

// get returns the cached signature of k, or nil.
func (c *sigCache) get(k sigKey) *signature {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byData.get(k)
}

// put stores the signature of k.
func (c *sigCache) put(k sigKey, sig *signature) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.byData.put(k, sig)
}

// len returns the number of signatures held.
func (c *sigCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byData.cur) + len(c.byData.old)
}
