package control

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// scaleChecks is the size of BenchmarkScaleState: 1,000,000 by default, VIGIL_SCALE_CHECKS
// to change it.
func scaleChecks() int {
	if n, err := strconv.Atoi(os.Getenv("VIGIL_SCALE_CHECKS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// heapPeak samples the heap in use every few milliseconds until stopped, and returns the
// highest value seen. Meanwhile the collector runs when the heap grows by 10% (not 100%), so
// that the peak is what the work holds, not the garbage a lazy collector leaves.
func heapPeak() func() uint64 {
	old := debug.SetGCPercent(10)
	var peak atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() uint64 {
		close(done)
		wg.Wait()
		debug.SetGCPercent(old)
		return peak.Load()
	}
}

// liveHeap returns the live heap after a collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// BenchmarkScaleState: a state of 1,000,000 checks, each with a multivalue record set that
// it decides (1,000 zones of 1,000): the live heap it takes; one write of a check into it
// (the edit, its item validation and the change keys: what the state machine does per
// command); and a raft snapshot of it streamed to a file and restored from it, with the
// peak heap of each beside the state's own.
func BenchmarkScaleState(b *testing.B) {
	n := scaleChecks()
	var s *state.State
	b.Run("hold", func(b *testing.B) {
		for b.Loop() {
			base := liveHeap()
			t0 := time.Now()
			s = state.NewState(config.Scale{Checks: n}.Document())
			elapsed := time.Since(t0)
			held := liveHeap() - base
			b.ReportMetric(mib(held), "state_MiB")
			b.ReportMetric(float64(held)/float64(n), "B/check+set")
			b.ReportMetric(elapsed.Seconds(), "build_s")
			b.ReportMetric(0, "ns/op")
		}
	})

	b.Run("write", func(b *testing.B) {
		const writes = 20000
		for b.Loop() {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			t0 := time.Now()
			for i := range writes {
				c := config.DefaultCheck()
				c.ID, c.Protocol, c.Target = fmt.Sprintf("c%d", (i*7919)%n), config.ProtocolTCP, config.Target{Host: "127.0.0.1", Port: 1 + i%60000}
				c.Regions = []string{"us-east", "eu-west", "sa-east"}
				e, err := state.ApplyCommand(s, &state.Command{Op: state.OpPutCheck, Check: &c}, s.Index+1)
				if err != nil {
					b.Fatal(err)
				}
				_ = e.Keys()
			}
			elapsed := time.Since(t0)
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(elapsed.Nanoseconds())/writes, "ns/write")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/writes, "B/write")
			b.ReportMetric(0, "ns/op")
		}
	})

	path := filepath.Join(b.TempDir(), "snapshot")
	b.Run("snapshot", func(b *testing.B) {
		for b.Loop() {
			before := liveHeap()
			f, err := os.Create(path)
			if err != nil {
				b.Fatal(err)
			}
			sink := &fileSink{f}
			stop := heapPeak()
			t0 := time.Now()
			if err := (fsmSnapshot{s}).Persist(sink); err != nil {
				b.Fatal(err)
			}
			elapsed, peak := time.Since(t0), stop()
			fi, _ := os.Stat(path)
			b.ReportMetric(elapsed.Seconds(), "s")
			b.ReportMetric(mib(uint64(fi.Size())), "file_MiB")
			b.ReportMetric(mib(max(peak, before)-before), "peak_above_state_MiB")
			b.ReportMetric(0, "ns/op")
		}
	})

	// The former way, compared in the same run: the state encoded whole in memory and then
	// written (json.Encoder buffers a value whole), and read back whole (json.Decoder reads a
	// value whole before decoding it).
	wholePath := filepath.Join(b.TempDir(), "whole.json")
	b.Run("snapshot-whole", func(b *testing.B) {
		for b.Loop() {
			before := liveHeap()
			f, err := os.Create(wholePath)
			if err != nil {
				b.Fatal(err)
			}
			stop := heapPeak()
			t0 := time.Now()
			if err := json.NewEncoder(f).Encode(s); err != nil {
				b.Fatal(err)
			}
			elapsed, peak := time.Since(t0), stop()
			f.Close()
			b.ReportMetric(elapsed.Seconds(), "s")
			b.ReportMetric(mib(max(peak, before)-before), "peak_above_state_MiB")
			b.ReportMetric(0, "ns/op")
		}
	})
	b.Run("restore-whole", func(b *testing.B) {
		for b.Loop() {
			before := liveHeap()
			r, err := os.Open(wholePath)
			if err != nil {
				b.Fatal(err)
			}
			stop := heapPeak()
			t0 := time.Now()
			var got state.State
			if err := json.NewDecoder(r).Decode(&got); err != nil {
				b.Fatal(err)
			}
			elapsed, peak := time.Since(t0), stop()
			r.Close()
			b.ReportMetric(elapsed.Seconds(), "s")
			b.ReportMetric(mib(max(peak, before)-before), "peak_MiB")
			b.ReportMetric(0, "ns/op")
			runtime.KeepAlive(&got)
		}
	})

	b.Run("restore", func(b *testing.B) {
		for b.Loop() {
			before := liveHeap()
			f := NewFSM(nil, nil)
			r, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			stop := heapPeak()
			t0 := time.Now()
			if err := f.Restore(r); err != nil {
				b.Fatal(err)
			}
			elapsed, peak := time.Since(t0), stop()
			if f.State().NumChecks() != n || f.State().NumRecordSets() != n {
				b.Fatalf("restored %d checks, %d record sets", f.State().NumChecks(), f.State().NumRecordSets())
			}
			restored := liveHeap() - before
			b.ReportMetric(elapsed.Seconds(), "s")
			b.ReportMetric(mib(restored), "restored_MiB")
			b.ReportMetric(mib(max(peak, before)-before), "peak_MiB")
			b.ReportMetric(0, "ns/op")
			runtime.KeepAlive(f)
		}
	})
	runtime.KeepAlive(s)
}

// fileSink is a raft.SnapshotSink over a file.
type fileSink struct{ f *os.File }

func (s *fileSink) Write(p []byte) (int, error) { return s.f.Write(p) }
func (s *fileSink) Close() error                { return s.f.Close() }
func (s *fileSink) ID() string                  { return s.f.Name() }
func (s *fileSink) Cancel() error               { return s.f.Close() }
