package gossip

import (
	"os"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestLateLocationGetsPagedRow: a checker's row too large for one page (150,000 checks, about
// 5 MB; VIGIL_PAGED_CHECKS=1000000 for a million, over MaxMessageSize) reaches a location that
// joins after it was written, complete, through real memberlist nodes on 127.0.0.1 with an
// encryption key: as pages, since no message could carry it. It logs the time, the pages and
// the peak heap of the test process (both nodes).
func TestLateLocationGetsPagedRow(t *testing.T) {
	if testing.Short() {
		t.Skip("real nodes on loopback")
	}
	checks := 150000
	if s := os.Getenv("VIGIL_PAGED_CHECKS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		checks = n
	}
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	p := newLoopPool(t, checks, 0, nil)
	defer p.close()
	published := time.Since(start)
	start = time.Now()
	loc := p.join("l-late")
	p.locs = append(p.locs, loc)
	limit := 2 * time.Minute
	if checks > 200000 {
		limit = 10 * time.Minute
	}
	ok := poll(limit, func() bool { return p.holdsRow(loc) })
	took := time.Since(start)
	close(stop)
	wg.Wait()
	pages := testutil.ToFloat64(loc.m.received.WithLabelValues("page"))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("%d checks: published in %v; the late location holds the row after %v, from %v pages (%v bytes received); peak heap of the process %d MiB, %d MiB after a GC; the checker got %v asks",
		checks, published.Round(time.Millisecond), took.Round(time.Millisecond), pages,
		testutil.ToFloat64(loc.m.receivedBytes), peak>>20, ms.HeapAlloc>>20,
		testutil.ToFloat64(p.checker.m.received.WithLabelValues("row_request")))
	if !ok {
		loc.mu.Lock()
		r := loc.table.rows[p.checker.ID()]
		n, _ := loc.table.Len()
		loc.mu.Unlock()
		t.Fatalf("the late location does not hold the row within %v: row %+v, %d reports", limit, r != nil, n)
	}
	if pages < 2 {
		t.Errorf("the row came in %v pages: want several", pages)
	}
}
