package dnssec

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"sync"
	"time"
)

// DefaultCPUFraction is the share of the location's CPU (GOMAXPROCS cores) that new
// signatures may take by default. A signed answer costs about half as much again as its
// signature (resolving, packing, the socket), so a flood at the budget keeps about three
// quarters of the CPU busy and leaves the rest to unsigned answers and the cache's.
const DefaultCPUFraction = 0.5

// Budget bounds the new signatures a location makes a second across all its signed zones and
// shares them fairly between the zones. Signatures from the cache cost nothing.
//
// The rule, with rate R and N zones (SetZones):
//   - Every new signature takes a token from a global bucket that fills at R a second and holds
//     at most R: the location never signs more than R a second (after a first burst of R).
//   - Every zone has a share bucket that fills at R/N a second and holds at most
//     max(1, R/N). A zone holding a share token spends it with the global token.
//   - A zone without one borrows: it takes a global token only while the global bucket keeps
//     more than the reserve, (N-1)×max(1, R/N), what every other zone's full share could ask
//     for at once.
//
// So a zone gets at least its share (R/N a second) whatever floods another zone, and what the
// other zones leave unused goes to whoever asks: a lone flood gets all of R. A signature the
// budget refuses is not made; the caller drops the query (the last resort, counted).
//
// Time is an argument (Allow's now), so the budget is exact under a test's clock. A Budget is
// safe for concurrent use; a nil *Budget allows everything.
type Budget struct {
	mu     sync.Mutex
	rate   float64
	burst  float64 // of the global bucket
	global bucket
	share  float64 // share buckets' rate and capacity (at least 1)
	shares map[string]*bucket
}

// bucket is a token bucket filled lazily: tokens as of last.
type bucket struct {
	tokens float64
	last   time.Time
}

// fill adds rate tokens a second since the bucket's last fill, up to capacity, and returns
// what did not fit.
func (b *bucket) fill(now time.Time, rate, capacity float64) (overflow float64) {
	if !b.last.IsZero() && now.After(b.last) {
		b.tokens += now.Sub(b.last).Seconds() * rate
	}
	if b.last.IsZero() || now.After(b.last) {
		b.last = now
	}
	if b.tokens > capacity {
		overflow, b.tokens = b.tokens-capacity, capacity
	}
	return overflow
}

// NewBudget returns a budget of rate new signatures a second (at least 1), full.
func NewBudget(rate float64) *Budget {
	rate = max(1, rate)
	return &Budget{rate: rate, burst: rate, global: bucket{tokens: rate}, share: rate, shares: map[string]*bucket{}}
}

// Rate returns the new signatures a second the budget allows.
func (b *Budget) Rate() float64 {
	if b == nil {
		return 0
	}
	return b.rate
}

// SetZones sets the zones that share the budget, by apex as Allow is given them: each has a
// share of rate/len(zones) a second. A zone already there keeps its tokens; a new one starts
// with a full share; a zone left out loses its share (it may still borrow).
func (b *Budget) SetZones(zones []string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.share = max(1, b.rate/float64(max(1, len(zones))))
	b.burst = max(b.rate, b.share*float64(len(zones)))
	next := make(map[string]*bucket, len(zones))
	for _, z := range zones {
		if old := b.shares[z]; old != nil {
			old.tokens = min(old.tokens, b.share)
			next[z] = old
		} else {
			next[z] = &bucket{tokens: b.share}
		}
	}
	b.shares = next
}

// Allow takes one new signature for zone at now and reports whether the budget had one.
func (b *Budget) Allow(zone string, now time.Time) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.global.fill(now, b.rate, b.burst)
	if b.global.tokens < 1 {
		return false
	}
	if sh := b.shares[zone]; sh != nil {
		sh.fill(now, b.share, b.share)
		if sh.tokens >= 1 {
			sh.tokens--
			b.global.tokens--
			return true
		}
	}
	reserve := b.share * float64(max(0, len(b.shares)-1))
	if b.global.tokens-1 < reserve {
		return false
	}
	b.global.tokens--
	return true
}

// MeasureSignCost returns what one ECDSA P-256 signature costs this process now: the
// fastest of a few short batches with a throwaway key (the fastest, because a busy machine
// slows every batch down and the budget is about what the CPU can do).
func MeasureSignCost() time.Duration {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return 50 * time.Microsecond
	}
	digest := sha256.Sum256([]byte("vigil signing cost"))
	const batches, per = 4, 8
	best := time.Duration(1 << 62)
	for range batches {
		start := time.Now()
		for range per {
			if _, _, err := ecdsa.Sign(rand.Reader, priv, digest[:]); err != nil {
				return 50 * time.Microsecond
			}
		}
		best = min(best, time.Since(start)/per)
	}
	return max(best, time.Microsecond)
}

// BudgetRate returns the new signatures a second that fraction of procs cores can make when
// one costs cost.
func BudgetRate(cost time.Duration, procs int, fraction float64) float64 {
	return fraction * float64(max(1, procs)) / max(cost.Seconds(), 1e-9)
}
