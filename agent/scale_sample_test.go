package agent

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"
)

// rssSampler samples this process's resident memory (VmRSS) every second while a
// measurement runs: it prints a line every 5 s (and at every new peak of 32 MiB or more
// above the last printed one), remembers the peak and when it happened, and, given a
// directory, writes a heap profile at each such new peak (location-heap-peak.pprof, the
// last one kept) so that what is live while resident memory peaks can be read afterwards.
type rssSampler struct {
	began time.Time
	dir   string
	logf  func(string, ...any)
	stop  chan struct{}
	done  sync.WaitGroup

	mu     sync.Mutex
	peak   uint64
	peakAt time.Duration
}

// sampleRSS starts a sampler; Stop ends it.
func sampleRSS(dir string, logf func(string, ...any)) *rssSampler {
	s := &rssSampler{began: time.Now(), dir: dir, logf: logf, stop: make(chan struct{})}
	s.done.Go(s.run)
	return s
}

func (s *rssSampler) run() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var printed uint64
	for i := 1; ; i++ {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		rss := procStatus("VmRSS")
		at := time.Since(s.began)
		s.mu.Lock()
		newPeak := rss > s.peak
		if newPeak {
			s.peak, s.peakAt = rss, at
		}
		s.mu.Unlock()
		big := newPeak && rss >= printed+32<<20
		if i%5 == 0 || big {
			s.logf("rss at %3.0fs: %.0f MiB%s; load %s", at.Seconds(), mib(rss), map[bool]string{true: " (peak)"}[newPeak], loadavg())
		}
		if big {
			printed = rss
			s.profile(at)
		}
	}
}

// profile writes the heap profile (what the last collection found live, by allocation site).
func (s *rssSampler) profile(at time.Duration) {
	if s.dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(s.dir, "location-heap-peak.pprof"))
	if err != nil {
		return
	}
	defer f.Close()
	_ = pprof.Lookup("heap").WriteTo(f, 0)
	if g, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("location-heap-%03.0fs.pprof", at.Seconds()))); err == nil {
		_ = pprof.Lookup("heap").WriteTo(g, 0)
		g.Close()
	}
}

// Stop ends the sampler and prints the peak and when it happened.
func (s *rssSampler) Stop() {
	close(s.stop)
	s.done.Wait()
	s.report()
}

// report prints the peak so far and when it happened.
func (s *rssSampler) report() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logf("resident peak sampled: %.0f MiB at %.0fs after the location started (VmHWM %.0f MiB)",
		mib(s.peak), s.peakAt.Seconds(), mib(procStatus("VmHWM")))
}
