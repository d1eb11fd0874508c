package abuse

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/gossip"
)

// heapPeak samples the process's heap in use every 10 ms until stop is closed and returns
// the highest sample.
func heapPeak(stop <-chan struct{}) uint64 {
	var peak uint64
	var ms runtime.MemStats
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
		select {
		case <-stop:
			return peak
		case <-tick.C:
		}
	}
}

// heapBaseline collects garbage and returns the heap in use.
func heapBaseline() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// bulkAttack opens conns connections from 127.0.2.2 (a network of its own) to addr, each redialling while the attack
// lasts: every connection announces an encrypted stream message of size bytes and pushes
// junk at it as fast as it is read. It returns the connections made and
// the bytes the target accepted.
func bulkAttack(addr string, conns, size int, lasts time.Duration) (dials int64, pushed int64) {
	deadline := time.Now().Add(lasts)
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 2, 2)}, Timeout: time.Second}
	junk := make([]byte, 64<<10)
	for i := range junk {
		junk[i] = byte(i * 7)
	}
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				c, err := d.Dial("tcp", addr)
				if err != nil {
					time.Sleep(10 * time.Millisecond)
					continue
				}
				atomic.AddInt64(&dials, 1)
				_ = c.SetDeadline(deadline)
				var head [5]byte
				head[0] = 10 // memberlist's encryptMsg
				binary.BigEndian.PutUint32(head[1:], uint32(size))
				if _, err := c.Write(head[:]); err == nil {
					for time.Now().Before(deadline) {
						n, err := c.Write(junk)
						atomic.AddInt64(&pushed, int64(n))
						if err != nil {
							break
						}
					}
				}
				c.Close()
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	wg.Wait()
	return dials, pushed
}

// TestAbuseGossipBulk: 400 connections without the key push bulk at an encrypted node's
// gossip port (each announcing an encrypted message of the largest size the node accepts,
// 8 MiB, and streaming junk, redialling for 8 s), while a node with the key joins it and
// publishes a row. The node's heap must stay under 100 MB above its baseline, no junk stream
// may reach memberlist, and the joining node must get through while the attack lasts (it
// starts a quarter in and has five eighths of the attack: on two loaded cores, 2 s can be
// too short). The control runs memberlist v0.7.0 with the same key and no guard, attacked by
// 4 connections announcing 20 MiB (memberlist's limit): its heap must pass 100 MB.
func TestAbuseGossipBulk(t *testing.T) {
	const (
		conns = 400
		lasts = 8 * time.Second
		limit = 100 << 20
	)
	pool := &gossipPool{t: t}
	keys := [][]byte{poolKey}
	mlErrors := &countingHandler{match: "failed to receive"}
	reg := prometheus.NewRegistry()
	target, err := gossip.New(gossip.Config{
		ID: "target", Region: "r1", Roles: gossip.RoleLocation, Version: "abuse", Keys: keys,
		Profile: gossip.ProfileLocal, BindAddr: "127.0.0.1", Registerer: reg, Logger: slog.New(mlErrors),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = target.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	base := heapBaseline()
	stop := make(chan struct{})
	peakCh := make(chan uint64, 1)
	go func() { peakCh <- heapPeak(stop) }()
	var dials, pushed int64
	attacked := make(chan struct{})
	go func() {
		defer close(attacked)
		dials, pushed = bulkAttack(target.Addr(), conns, gossip.DefaultMaxStreamBytes, lasts)
	}()

	// A node with the key joins during the attack and publishes a row.
	time.Sleep(lasts / 4)
	chk, _ := pool.start("legit", gossip.RoleChecker, keys, false, target.Addr())
	if err := chk.Publish("api", gossip.Entry{Status: checker.StatusHealthy}); err != nil {
		t.Fatal(err)
	}
	legit := waitFor(lasts*5/8, func() bool { return len(target.ReportsFor("api")) == 1 })
	<-attacked
	close(stop)
	peak := <-peakCh
	above := int64(peak) - int64(base)
	var refusedStreams float64
	if mfs, err := reg.Gather(); err == nil {
		for _, mf := range mfs {
			if mf.GetName() == "vigil_gossip_inbound_refused_total" {
				for _, m := range mf.GetMetric() {
					refusedStreams += m.GetCounter().GetValue()
				}
			}
		}
	}

	// Control: memberlist as it is, with the same key, attacked by 4 connections.
	ctlBase, ctlPeak, ctlDials := bulkControl(t, keys, 4, lasts)
	ctlAbove := int64(ctlPeak) - int64(ctlBase)

	t.Logf("guarded: baseline %d MB, peak %d MB (+%d MB); %d dials, %d MB pushed, %.0f refused; legitimate join and row: %v",
		base>>20, peak>>20, above>>20, dials, pushed>>20, refusedStreams, legit)
	t.Logf("control (memberlist without the guard): baseline %d MB, peak %d MB (+%d MB) from %d dials",
		ctlBase>>20, ctlPeak>>20, ctlAbove>>20, ctlDials)
	row(t, fmt.Sprintf("gossip bulk without the key: %d connections from 127.0.2.2 to an encrypted node's gossip port (real memberlist, loopback), each announcing an encrypted stream message of 8 MiB (the most it accepts) and pushing junk, redialling for %v; meanwhile a node with the key joins and publishes a row", conns, lasts),
		fmt.Sprintf("%s dials, %d MiB pushed", itoa(int(dials)), pushed>>20),
		fmt.Sprintf("unauthenticated messages reaching memberlist %d (%s refused at the guard); heap peak %d MB above baseline (limit 100); the legitimate node joined and its row arrived: %v (control, memberlist without the guard: 4 connections announcing 20 MiB took the heap %d MB above baseline)",
			mlErrors.count(), itoa(int(refusedStreams)), above>>20, legit, ctlAbove>>20))
	if above >= limit {
		t.Errorf("heap peaked %d MB above baseline, want under 100 MB", above>>20)
	}
	if n := mlErrors.count(); n != 0 {
		t.Errorf("%d junk streams reached memberlist", n)
	}
	if !legit {
		t.Error("the node with the key did not get its row through during the attack")
	}
	if ctlAbove < limit {
		t.Errorf("control: memberlist without the guard peaked only %d MB above baseline, so the attack does not attack", ctlAbove>>20)
	}
	if dials < conns {
		t.Errorf("only %d dials", dials)
	}
}

// bulkControl runs a bare memberlist with keys on loopback and attacks it with conns
// connections; it returns the heap baseline and peak and the dials made.
func bulkControl(t *testing.T, keys [][]byte, conns int, lasts time.Duration) (base, peak uint64, dials int64) {
	t.Helper()
	kr, err := memberlist.NewKeyring(keys, keys[0])
	if err != nil {
		t.Fatal(err)
	}
	mc := memberlist.DefaultLocalConfig()
	mc.Name, mc.BindAddr, mc.BindPort, mc.Keyring = "control", "127.0.0.1", 0, kr
	mc.TCPTimeout = 10 * time.Second
	mc.LogOutput = discard{}
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ml.Shutdown() }()
	base = heapBaseline()
	stop := make(chan struct{})
	peakCh := make(chan uint64, 1)
	go func() { peakCh <- heapPeak(stop) }()
	dials, _ = bulkAttack(ml.LocalNode().Address(), conns, 20<<20-1, lasts)
	close(stop)
	return base, <-peakCh, dials
}

// discard is an io.Writer that keeps nothing.
type discard struct{}

// Write implements io.Writer.
func (discard) Write(p []byte) (int, error) { return len(p), nil }
