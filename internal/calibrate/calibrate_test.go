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
	time.Sleep(3 * schedEvery)
	if r := b.Reading(); r.Ticks == 0 {
		t.Errorf("a meter still open measured nothing: %v", r)
	}
	b.Stop()
	c := Start()
	defer c.Stop()
	time.Sleep(3 * Tick)
	if r := c.Reading(); r.Ticks == 0 {
		t.Errorf("the sampler did not start again: %v", r)
	}
}
