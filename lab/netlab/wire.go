package netlab

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds of one direction of a wire: packets held for their delay, at most.
const (
	wireMaxPackets = 4096
	wireMaxBytes   = 4 << 20
	tunReadSize    = 65535
)

// Shape is what a link does to every packet, each way: it is delivered Latency later, plus
// or minus up to Jitter (uniformly). With jitter, packets may overtake each other, as on a
// real path whose delay varies; without, each direction keeps its order.
type Shape struct {
	Latency, Jitter time.Duration
}

// delay draws one packet's delay.
func (s Shape) delay(rng *rand.Rand) time.Duration {
	d := s.Latency
	if s.Jitter > 0 {
		d += time.Duration(rng.Int64N(int64(2*s.Jitter)+1)) - s.Jitter
	}
	return max(d, 0)
}

// WireStats count what one direction of a link did.
type WireStats struct {
	// Delivered counts packets written to the far end; Dropped those refused because the
	// queue was full (wireMaxPackets or wireMaxBytes); WriteErrors those the far end's TUN
	// device refused.
	Delivered, Dropped, WriteErrors uint64
	// MaxQueued is the most packets held at once.
	MaxQueued int
}

// packet is one packet held by a wire until it is due.
type packet struct {
	due  time.Time
	seq  uint64
	data []byte
}

// packets is a min-heap by due time, then arrival.
type packets []packet

func (p packets) Len() int { return len(p) }
func (p packets) Less(i, j int) bool {
	if !p[i].due.Equal(p[j].due) {
		return p[i].due.Before(p[j].due)
	}
	return p[i].seq < p[j].seq
}
func (p packets) Swap(i, j int) { p[i], p[j] = p[j], p[i] }
func (p *packets) Push(x any)   { *p = append(*p, x.(packet)) }
func (p *packets) Pop() any {
	old := *p
	x := old[len(old)-1]
	old[len(old)-1] = packet{}
	*p = old[:len(old)-1]
	return x
}

// wire carries one direction of a link: it reads each packet the source TUN device's
// namespace sends towards the other region and writes it into the destination's TUN device
// once its delay has passed.
type wire struct {
	src, dst *os.File
	wake     chan struct{}
	stop     chan struct{}

	mu    sync.Mutex
	shape Shape
	rng   *rand.Rand
	queue packets
	bytes int
	seq   uint64
	stats WireStats
}

func newWire(src, dst *os.File, seed uint64) *wire {
	return &wire{src: src, dst: dst, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// setShape changes the delay of the packets read from now on.
func (w *wire) setShape(s Shape) {
	w.mu.Lock()
	w.shape = s
	w.mu.Unlock()
}

// snapshot returns the wire's counters.
func (w *wire) snapshot() WireStats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// read moves packets from the source device into the queue until the device is closed.
func (w *wire) read() {
	buf := make([]byte, tunReadSize)
	for {
		n, err := w.src.Read(buf)
		if err != nil {
			return
		}
		now := time.Now()
		w.mu.Lock()
		if len(w.queue) >= wireMaxPackets || w.bytes+n > wireMaxBytes {
			w.stats.Dropped++
			w.mu.Unlock()
			continue
		}
		w.seq++
		heap.Push(&w.queue, packet{due: now.Add(w.shape.delay(w.rng)), seq: w.seq, data: append([]byte(nil), buf[:n]...)})
		w.bytes += n
		w.stats.MaxQueued = max(w.stats.MaxQueued, len(w.queue))
		w.mu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

// deliver writes each queued packet to the destination device when it is due, until stop.
func (w *wire) deliver() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		w.mu.Lock()
		var next packet
		wait := time.Duration(-1)
		if len(w.queue) > 0 {
			if d := time.Until(w.queue[0].due); d > 0 {
				wait = d
			} else {
				next = heap.Pop(&w.queue).(packet)
				w.bytes -= len(next.data)
			}
		}
		w.mu.Unlock()
		if next.data != nil {
			_, err := w.dst.Write(next.data)
			w.mu.Lock()
			if err != nil {
				w.stats.WriteErrors++
			} else {
				w.stats.Delivered++
			}
			w.mu.Unlock()
			continue
		}
		var fire <-chan time.Time
		if wait >= 0 {
			timer.Reset(wait)
			fire = timer.C
		}
		select {
		case <-w.stop:
			return
		case <-w.wake:
		case <-fire:
		}
	}
}

// openTUN creates the TUN device name (layer 3, no packet information) in the namespace of
// the calling thread and returns its file, non-blocking so that closing it ends a read.
func openTUN(name string) (*os.File, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("netlab: open /dev/net/tun: %w", err)
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlab: TUN %s: %w", name, err)
	}
	ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
	if err := unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("netlab: TUN %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	if f == nil {
		return nil, errors.New("netlab: TUN: bad file descriptor")
	}
	return f, nil
}
