package checker

import (
	"time"
)

// spreadHash is FNV-1a over the checker's name and the check's id: the seed of a check's
// place in its interval at this checker. Deterministic, so a restart keeps the schedule, and
// different per checker, so the checkers of a shard do not all probe a target at once.
func spreadHash(checker, check string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(checker); i++ {
		h = (h ^ uint64(checker[i])) * prime
	}
	h = (h ^ 0) * prime
	for i := 0; i < len(check); i++ {
		h = (h ^ uint64(check[i])) * prime
	}
	return h
}

// firstDue returns the first time at or after now at which a check with the given interval
// and spread hash is due: the check's fixed phase within each interval, counted from the
// Unix epoch.
func firstDue(now time.Time, interval time.Duration, hash uint64) time.Time {
	if interval <= 0 {
		return now
	}
	phase := time.Duration(hash % uint64(interval))
	start := now.Truncate(interval).Add(phase)
	if start.Before(now) {
		start = start.Add(interval)
	}
	return start
}

// nextDue returns the due time after due: one interval later, or, when the checker has
// fallen more than an interval behind, the first slot of the check's phase after now (the
// missed slots are skipped, not run in a burst).
func nextDue(due, now time.Time, interval time.Duration) time.Time {
	next := due.Add(interval)
	if !next.After(now) {
		missed := now.Sub(next)/interval + 1
		next = next.Add(missed * interval)
	}
	return next
}

// slotHeap orders scheduled slots by due time (container/heap).
type slotHeap []*slot

func (h slotHeap) Len() int           { return len(h) }
func (h slotHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h slotHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *slotHeap) Push(x any) {
	s := x.(*slot)
	s.index = len(*h)
	*h = append(*h, s)
}

func (h *slotHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = nil
	s.index = -1
	*h = old[:len(old)-1]
	return s
}
