package location

import (
	"bytes"
	"hash/maphash"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// The answer cache holds UDP responses in wire form, as the full query path made them, so
// that a query asked again costs a parse of its question, a table lookup and a copy: the
// response is patched with the query's ID, its RD and CD bits and its question name as the
// query spelled it (fastpath.go reads the query and patches the answer).
//
// What keys an answer: the question name in lower case, the type, the listener (a virtual
// name server answers only its shard's zones), whether the query has an OPT record and its
// DO bit, and the payload class: an answer that fit whole is kept under class 0 and serves
// every query whose payload limit it fits; an answer trimmed or truncated to fit is kept
// under its limit and serves that limit only.
//
// What is not cached, and so always takes the full path: queries over TCP, with TSIG, zone
// transfers, anything but one IN question of opcode QUERY with at most an OPT record (EDNS
// version 0, no option but NSID, cookies and padding), answers outside every hosted zone
// (REFUSED), answers whose records are chosen at random per query (weighted and
// multivalue record sets), answers that leave the zone they start in (a CNAME into another
// hosted zone, a DS or a signature of a parent zone), denials proved with a black lie made
// for the name asked (RFC 9824: one per random name), answers of rate-limited clients
// (slip), errors of the server (SERVFAIL), and answers dropped for a spent signing budget.
//
// When an answer is stale: every entry holds the server's epoch and its zone's epoch when
// its answer was made, both read before the answer read any state. The server's epoch rises
// after every swap of the snapshot (a configuration write, an override's drain), the signers
// and the locality; a zone's epoch rises after every verdict change that changes the served
// health of a check of one of its record sets (a verdict patch, a forced override) and after
// every change of the SOA it serves (serial.go). A cached answer is served only while both
// are what they were, so the first query after a change takes the full path. Signed
// answers also expire after signedCacheFor, so that a renewed signature or a DNSKEY set of a
// key rollover is answered at most that late.
//
// Admission: a question is cached the second time it misses within its bucket's memory of
// recent misses, or the first time when its answer in the cache went stale, so that a flood of random names (each asked once) costs no allocation and
// does not push the names asked again out of the cache.

// DefaultAnswerCache is the number of answers the cache holds by default.
const DefaultAnswerCache = 1 << 16

// signedCacheFor is how long a signed answer is served from the cache.
const signedCacheFor = 1e9 // nanoseconds

// cacheWays is the number of entries of one bucket: a question may sit in any of them.
const cacheWays = 4

// maxCacheKey is the longest key: a header of 8 bytes and a name of up to 255.
const maxCacheKey = 8 + 255

// answerCache is a fixed table of answers, read without locks: an entry, once published, is
// never changed, and a slot is replaced whole.
type answerCache struct {
	seed    maphash.Seed
	buckets []cacheBucket
	mask    uint64
	// epoch rises after every change of the server's state that may change any answer.
	epoch atomic.Uint64
}

type cacheBucket struct {
	slots [cacheWays]atomic.Pointer[cachedAnswer]
	// seen holds the hashes of the last questions that missed in this bucket (admission),
	// the oldest replaced first: next is where the next one goes.
	seen [cacheWays]atomic.Uint64
	next atomic.Uint32
}

// cachedAnswer is one response in wire form and what the metrics count for it.
type cachedAnswer struct {
	hash  uint64
	key   []byte
	epoch uint64 // the server's epoch when the answer was made
	zone  *zone  // the zone the answer was made in
	zgen  uint64 // the zone's epoch when the answer was made
	// expires is when a signed answer stops being served (Unix nanoseconds); 0: never.
	expires int64
	wire    []byte
	qtype   uint16
	rcode   int
	// lastResorts are the counters of the record sets answered in last resort.
	lastResorts []prometheus.Counter
}

// newAnswerCache returns a cache of about size entries (rounded up to a power of two), or
// nil when size is negative.
func newAnswerCache(size int) *answerCache {
	if size < 0 {
		return nil
	}
	if size == 0 {
		size = DefaultAnswerCache
	}
	n := 1
	for n*cacheWays < size {
		n <<= 1
	}
	return &answerCache{seed: maphash.MakeSeed(), buckets: make([]cacheBucket, n), mask: uint64(n - 1)}
}

// AnswerCacheSize returns the number of answers the server's cache holds at most, or 0 when
// Config.AnswerCache turned it off and every UDP query takes the full path.
func (s *Server) AnswerCacheSize() int {
	if s.cache == nil {
		return 0
	}
	return len(s.cache.buckets) * cacheWays
}

// invalidate makes every cached answer stale. A nil cache does nothing.
func (c *answerCache) invalidate() {
	if c != nil {
		c.epoch.Add(1)
	}
}

// lookup returns the answer held for key (of hash h), or nil when there is none or it is
// stale at now (Unix nanoseconds; read only for answers that expire); known says the cache
// holds an answer for key, current or stale.
func (c *answerCache) lookup(key []byte, h uint64, now func() int64) (e *cachedAnswer, known bool) {
	b := &c.buckets[h&c.mask]
	epoch := c.epoch.Load()
	for i := range b.slots {
		e := b.slots[i].Load()
		if e == nil || e.hash != h || !bytes.Equal(e.key, key) {
			continue
		}
		if e.epoch != epoch || e.zone.gen.Load() != e.zgen || e.expires != 0 && now() >= e.expires {
			return nil, true
		}
		return e, true
	}
	return nil, false
}

// admit reports whether a question of hash h that missed should be cached: it missed before
// in its bucket; else it is remembered as missed.
func (c *answerCache) admit(h uint64) bool {
	b := &c.buckets[h&c.mask]
	for i := range b.seen {
		if b.seen[i].Load() == h {
			return true
		}
	}
	b.seen[b.next.Add(1)%cacheWays].Store(h)
	return false
}

// store publishes e in its bucket: in the slot of the same key, or an empty or stale one, or
// else the slot its hash picks.
func (c *answerCache) store(e *cachedAnswer) {
	b := &c.buckets[e.hash&c.mask]
	epoch := c.epoch.Load()
	victim := int((e.hash >> 56) % cacheWays)
	for i := range b.slots {
		old := b.slots[i].Load()
		if old == nil || old.hash == e.hash && bytes.Equal(old.key, e.key) {
			victim = i
			break
		}
		if old.epoch != epoch || old.zone.gen.Load() != old.zgen {
			victim = i
		}
	}
	b.slots[victim].Store(e)
}
