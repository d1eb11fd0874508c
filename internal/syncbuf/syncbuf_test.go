package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: lines written by many goroutines at once all arrive whole (run with
// -race to see the mutex matter), and Bytes is a copy that later writes do not change.
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				b.Write([]byte("line\n"))
			}
		}()
	}
	wg.Wait()
	if n := strings.Count(b.String(), "line\n"); n != 800 {
		t.Fatalf("got %d whole lines, want 800", n)
	}
	snap := b.Bytes()
	b.Write([]byte("more"))
	if len(snap) != 800*len("line\n") {
		t.Fatalf("Bytes changed after a later write: %d bytes", len(snap))
	}
}
