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
type sigCache struct {
	mu       sync.Mutex
	half     int
	cur, old map[sigKey]*dns.RRSIG
}

func newSigCache(size int) *sigCache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	half := max(1, size/2)
	return &sigCache{half: half, cur: make(map[sigKey]*dns.RRSIG), old: map[sigKey]*dns.RRSIG{}}
}

// get returns the cached signature of k, or nil.
func (c *sigCache) get(k sigKey) *dns.RRSIG {
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
func (c *sigCache) put(k sigKey, sig *dns.RRSIG) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, sig)
}

func (c *sigCache) putLocked(k sigKey, sig *dns.RRSIG) {
	if len(c.cur) >= c.half {
		c.old, c.cur = c.cur, make(map[sigKey]*dns.RRSIG, c.half)
	}
	c.cur[k] = sig
}

// len returns the number of signatures held.
func (c *sigCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.old)
}
