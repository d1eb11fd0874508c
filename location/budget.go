package location

import (
	"sync"
	"time"
)

// budget is a token bucket: a listener's query budget. rate tokens a second, up to burst
// of them saved; each query spends one.
type budget struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
}

// newBudget returns a budget of rate queries a second with a burst of a tenth of a second's
// worth (at least 1), or nil for an unlimited budget (rate <= 0).
func newBudget(rate int) *budget {
	if rate <= 0 {
		return nil
	}
	burst := max(1, float64(rate)/10)
	return &budget{rate: float64(rate), burst: burst, tokens: burst}
}

// take spends one token at time now and reports whether there was one. A nil budget always
// has one.
func (b *budget) take(now time.Time) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.last.IsZero() {
		if dt := now.Sub(b.last).Seconds(); dt > 0 {
			b.tokens = min(b.burst, b.tokens+dt*b.rate)
		}
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}
