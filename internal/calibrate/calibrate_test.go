package calibrate

import (
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"time"
)

// spinEnv makes the test binary a spinning process (TestMain).
const spinEnv = "CALIBRATE_SPIN"

func TestMain(m *testing.M) {
	if os.Getenv(spinEnv) != "" {
		end := time.Now().Add(5 * time.Second) // bounded, should the parent die first
		x := uint64(1)
		for time.Now().Before(end) {
			for range 1000 {
				x = x*6364136223846793005 + 1
			}
		}
		os.Exit(int(x & 0))
	}
	os.Exit(m.Run())
}

// The slowdown is measured: with two spinning processes per CPU beside it and a spinning
// goroutine per thread of its own, the process's threads get at most a third of a CPU each,
// so the slowdown is about 3 or more whatever else the machine runs (other load only adds
// to it); lateness is measured too.
func TestSlowdownUnderLoad(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the slowdown is measured on Linux only")
	}
	var spinners []*exec.Cmd
	for range 2 * runtime.NumCPU() {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), spinEnv+"=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		spinners = append(spinners, cmd)
	}
	defer func() {
		for _, c := range spinners {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}()
	m := Start()
	defer m.Stop()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			x := uint64(1)
			for {
				select {
				case <-stop:
					return
				default:
					for range 1000 {
						x = x*6364136223846793005 + 1
					}
				}
			}
		})
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	r := m.Reading()
	t.Logf("with %d spinning processes: %v", len(spinners), r)
	if r.Ran == 0 || r.Slowdown < 1.5 {
		t.Errorf("slowdown %.1f, want over 1.5", r.Slowdown)
	}
	if r.Ticks == 0 || r.Wall < time.Second {
		t.Errorf("%d ticks over %v", r.Ticks, r.Wall)
	}
}

// A reading scales a bound by its slowdown, up to MaxSlowdown; none measured scales by 1.
func TestScale(t *testing.T) {
	for _, c := range []struct {
		slowdown float64
		want     time.Duration
	}{{1, time.Second}, {2.5, 2500 * time.Millisecond}, {100, time.Duration(MaxSlowdown) * time.Second}} {
		if got := (Reading{Slowdown: c.slowdown}).Scale(time.Second); got != c.want {
			t.Errorf("slowdown %v: %v, want %v", c.slowdown, got, c.want)
		}
	}
	m := Start()
	defer m.Stop()
	if !m.Within(time.Minute) {
		t.Error("a meter just started is past a minute")
	}
	time.Sleep(30 * time.Millisecond)
	if m.Within(time.Millisecond) {
		t.Errorf("30ms after its start, within 1ms of an idle machine scaled at most %vx: %v", MaxSlowdown, m.Reading())
	}
}

// The sampler stops with the last meter and starts again with the next.
func TestStartStop(t *testing.T) {
	a, b := Start(), Start()
	a.Stop()
	a.Stop()
	measured := func(m *Meter) bool {
		for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(Tick) {
			if r := m.Reading(); r.Ticks > 0 && (r.Ran > 0 || runtime.GOOS != "linux") {
				return true
			}
		}
		return false
	}
	if !measured(b) {
		t.Errorf("a meter still open measured nothing: %v", b.Reading())
	}
	b.Stop()
	c := Start()
	defer c.Stop()
	if !measured(c) {
		t.Errorf("the sampler did not start again: %v", c.Reading())
	}
}

// The rings keep the newest samples, and a reading counts only those after its start.
func TestRing(t *testing.T) {
	const size = 100
	var ring []sample
	next := 0
	t0 := time.Now()
	for i := range 2*size + 3 {
		s := sample{At: t0.Add(time.Duration(i) * time.Millisecond), Late: time.Millisecond}
		if len(ring) < size {
			ring = append(ring, s)
			continue
		}
		ring[next] = s
		next = (next + 1) % size
	}
	var n int
	last := t0.Add(time.Hour)
	backFrom(ring, next, t0.Add(time.Duration(2*size+3-10)*time.Millisecond), func(s sample) {
		if !s.At.Before(last) {
			t.Fatalf("not newest first: %v after %v", s.At, last)
		}
		last = s.At
		n++
	})
	if n != 9 {
		t.Errorf("%d samples after the 10th newest, want 9", n)
	}
	n = 0
	backFrom(ring, next, time.Time{}, func(sample) { n++ })
	if n != size {
		t.Errorf("%d samples kept, want %d", n, size)
	}
}
