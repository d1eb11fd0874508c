package location

import (
	"hash/maphash"
	"net/netip"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/internal/netkey"
)

// RRLConfig configures response rate limiting over UDP: each client network (a /24 for IPv4,
// a /56 for IPv6) gets ResponsesPerSecond responses a second; beyond that, one query in Slip
// gets an empty truncated response (so that a real client retries over TCP) and the others are
// dropped. The zero value turns it off.
type RRLConfig struct {
	// ResponsesPerSecond is each client network's allowance; 0 turns rate limiting off.
	ResponsesPerSecond int
	// Slip answers every Slip-th limited query with an empty truncated response. Default 2,
	// as BIND and NSD do; a negative value drops every limited query.
	Slip int
	// TableSize is the number of client networks tracked at once; the memory is fixed, and
	// networks that collide in the table share an allowance until one displaces the other.
	// Default 65,536.
	TableSize int
}

// The decisions of the rate limiter.
type rrlDecision uint8

const (
	rrlAllow rrlDecision = iota
	rrlSlip
	rrlDrop
)

// rrlShards is the number of locks the table is split over.
const rrlShards = 64

// rrl is a response rate limiter with a fixed-size table of client networks.
type rrl struct {
	rate, slip int
	seed       maphash.Seed
	shards     [rrlShards]rrlShard
}

// rrlShard is one lock and its slice of the table.
type rrlShard struct {
	mu      sync.Mutex
	entries []rrlEntry
}

// rrlEntry is one client network's count in the current second.
type rrlEntry struct {
	key     netkey.Key // the network; 0 is an empty slot
	second  int64
	count   int
	limited int
}

// newRRL returns a limiter, or nil when cfg turns rate limiting off.
func newRRL(cfg RRLConfig) *rrl {
	if cfg.ResponsesPerSecond <= 0 {
		return nil
	}
	size := cfg.TableSize
	if size <= 0 {
		size = 1 << 16
	}
	per := max(1, size/rrlShards)
	r := &rrl{rate: cfg.ResponsesPerSecond, slip: cfg.Slip, seed: maphash.MakeSeed()}
	switch {
	case r.slip == 0:
		r.slip = 2
	case r.slip < 0:
		r.slip = 0
	}
	for i := range r.shards {
		r.shards[i].entries = make([]rrlEntry, per)
	}
	return r
}

// allow decides whether a response may go to the client at addr at time now.
func (r *rrl) allow(addr netip.Addr, now time.Time) rrlDecision {
	key := netkey.Of(addr)
	h := maphash.Comparable(r.seed, key)
	sh := &r.shards[h%rrlShards]
	sec := now.Unix()
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := &sh.entries[(h/rrlShards)%uint64(len(sh.entries))]
	if e.key != key || e.second != sec {
		*e = rrlEntry{key: key, second: sec}
	}
	e.count++
	if e.count <= r.rate {
		return rrlAllow
	}
	e.limited++
	if r.slip > 0 && e.limited%r.slip == 0 {
		return rrlSlip
	}
	return rrlDrop
}
