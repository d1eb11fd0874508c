package location

import (
	"context"
	"net"
	"testing"
	"time"
	"unsafe"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// TestUDPBurstWhileWorkersWait sends a burst of queries to a listener whose workers are not
// reading yet, as when they wait for a core (the scheduler, a GC pause) under load, then lets
// them read: every query of the burst must be answered, so the socket must hold them all
// meanwhile. With Linux's default receive buffer (208 KiB, about 160 small datagrams on
// loopback) the kernel drops the rest, as the fixed-rate runs of lab/bench/dns saw.
func TestUDPBurstWhileWorkersWait(t *testing.T) {
	const burst = 2000
	s, err := New(Config{Addr: "127.0.0.1:0", Registerer: prometheus.NewRegistry(), UDPSockets: 1, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSnapshot(mustSnapshot(t, testZones(), testShards()))
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	if got := rcvbuf(t, s.listeners[0].udp); got < burst*1280 {
		// Not privileged, and net.core.rmem_max is lower than the buffer asked.
		s.listeners[0].close()
		t.Skipf("the system gave a receive buffer of %d bytes, under the %d the burst needs", got, burst*1280)
	}
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(s.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetReadBuffer(udpReceiveBuffer); err != nil {
		t.Fatal(err)
	}
	answered := make(chan int, 1)
	const marker = 0xFFFF
	go func() {
		seen := make([]bool, burst)
		n := 0
		buf := make([]byte, 2048)
		for {
			l, err := c.Read(buf)
			if err != nil {
				answered <- -1
				return
			}
			var m dns.Msg
			if m.Unpack(buf[:l]) != nil {
				continue
			}
			if m.Id == marker {
				answered <- n
				return
			}
			if int(m.Id) < burst && !seen[m.Id] {
				seen[m.Id] = true
				n++
			}
		}
	}()
	q := query("fo.example.test.", dns.TypeA, 0)
	for i := range burst {
		q.Id = uint16(i)
		wire, _ := q.Pack()
		if _, err := c.Write(wire); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	// One socket, one worker: the answer to a query sent after the burst comes after the
	// burst's. Send it until it is answered (it may find the socket still full).
	q.Id = marker
	wire, _ := q.Pack()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := c.Write(wire); err != nil {
			t.Fatal(err)
		}
		select {
		case n := <-answered:
			if n != burst {
				t.Fatalf("%d of %d queries sent while the worker was not reading were answered (socket drops: %d)", n, burst, drops(t, s.listeners[0].udp))
			}
			return
		case <-tick.C:
		}
	}
}

// rcvbuf returns the receive buffer the system books for c (SO_RCVBUF).
func rcvbuf(t *testing.T, c *net.UDPConn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var serr error
	if err := rc.Control(func(fd uintptr) { n, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return n
}

// drops returns the datagrams the kernel dropped at c for want of room (SO_MEMINFO).
func drops(t *testing.T, c *net.UDPConn) uint32 {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var mem [unix.SK_MEMINFO_VARS]uint32
	if err := rc.Control(func(fd uintptr) {
		l := uint32(len(mem) * 4)
		_, _, _ = unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO, uintptr(unsafe.Pointer(&mem[0])), uintptr(unsafe.Pointer(&l)), 0)
	}); err != nil {
		t.Fatal(err)
	}
	return mem[unix.SK_MEMINFO_DROPS]
}
