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
	mu         sync.Mutex
	half       int
	cur, old   map[sigKey]*signature
	curR, oldR map[refKey]*signature
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
	return &sigCache{half: half, cur: make(map[sigKey]*signature), old: map[sigKey]*signature{},
		curR: make(map[refKey]*signature), oldR: map[refKey]*signature{}}
}

// getRef returns the cached signature of the records of k, or nil.
func (c *sigCache) getRef(k refKey) *signature {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sig := c.curR[k]; sig != nil {
		return sig
	}
	sig := c.oldR[k]
	if sig != nil {
		delete(c.oldR, k)
		c.putRefLocked(k, sig)
	}
	return sig
}

// putRef stores the signature of the records of k.
func (c *sigCache) putRef(k refKey, sig *signature) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putRefLocked(k, sig)
}

func (c *sigCache) putRefLocked(k refKey, sig *signature) {
	if len(c.curR) >= c.half {
		c.oldR, c.curR = c.curR, make(map[refKey]*signature, c.half)
	}
	c.curR[k] = sig
}

// get returns the cached signature of k, or nil.
func (c *sigCache) get(k sigKey) *signature {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sig := c.cur[k]; sig != nil {
		return sig
	}
	sig := c.old[k]
	if sig != nil {
		delete(c.old, k)
		c.putLocked(k, sig)
	}
	return sig
}

// put stores the signature of k.
func (c *sigCache) put(k sigKey, sig *signature) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, sig)
}

func (c *sigCache) putLocked(k sigKey, sig *signature) {
	if len(c.cur) >= c.half {
		c.old, c.cur = c.cur, make(map[sigKey]*signature, c.half)
	}
	c.cur[k] = sig
}

// len returns the number of signatures held.
func (c *sigCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.old)
}
