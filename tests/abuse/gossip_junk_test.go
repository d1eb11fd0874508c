package abuse

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/gossip"
)

// levelCounter is a slog handler that counts records at or above a level, and among them
// those whose message starts with other than prefix.
type levelCounter struct {
	level  slog.Level
	prefix string
	n      atomic.Int64
	others atomic.Int64
}

// Enabled implements slog.Handler.
func (h *levelCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

// Handle implements slog.Handler.
func (h *levelCounter) Handle(_ context.Context, r slog.Record) error {
	h.n.Add(1)
	if !strings.HasPrefix(r.Message, h.prefix) {
		h.others.Add(1)
	}
	return nil
}

// WithAttrs implements slog.Handler.
func (h *levelCounter) WithAttrs([]slog.Attr) slog.Handler { return h }

// WithGroup implements slog.Handler.
func (h *levelCounter) WithGroup(string) slog.Handler { return h }

// lineCounter counts the lines written to it that contain match.
type lineCounter struct {
	match string
	n     atomic.Int64
}

// Write implements io.Writer.
func (w *lineCounter) Write(p []byte) (int, error) {
	w.n.Add(int64(strings.Count(string(p), w.match)))
	return len(p), nil
}

// junkUDP sends n packets of random bytes (16 to 1,400) to addr, one a millisecond.
func junkUDP(t *testing.T, addr string, n int) int {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sent := 0
	b := make([]byte, 1400)
	for i := range n {
		_, _ = rand.Read(b)
		if _, err := c.Write(b[:16+i%1385]); err == nil {
			sent++
		}
		time.Sleep(time.Millisecond)
	}
	return sent
}

// TestAbuseGossipJunkUDP: junk UDP packets (random bytes, no key) at an encrypted node's
// gossip port. The node may log at most one warning per 10 s for them, not a line each, and
// must count them in vigil_gossip_inbound_refused_total. The control sends the same junk at
// memberlist v0.7.0 with the key and no guard, which logs an error per packet.
func TestAbuseGossipJunkUDP(t *testing.T) {
	const packets = 2000
	logs := &levelCounter{level: slog.LevelWarn, prefix: "gossip: refused"}
	reg := prometheus.NewRegistry()
	n, err := gossip.New(gossip.Config{
		ID: "target", Region: "r1", Roles: gossip.RoleLocation, Version: "abuse", Keys: [][]byte{poolKey},
		Profile: gossip.ProfileLocal, BindAddr: "127.0.0.1", Registerer: reg, Logger: slog.New(logs),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	sent := junkUDP(t, n.Addr(), packets)
	var counted float64
	waitFor(2*time.Second, func() bool {
		counted = refusedCount(reg, "packet")
		return counted >= float64(sent)*0.9
	})
	lines := int(logs.n.Load())

	// Control: memberlist with the key and no guard.
	kr, err := memberlist.NewKeyring([][]byte{poolKey}, poolKey)
	if err != nil {
		t.Fatal(err)
	}
	errs := &lineCounter{match: "[ERR]"}
	mc := memberlist.DefaultLocalConfig()
	mc.Name, mc.BindAddr, mc.BindPort, mc.Keyring, mc.LogOutput = "control", "127.0.0.1", 0, kr, errs
	ml, err := memberlist.Create(mc)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ml.Shutdown() }()
	junkUDP(t, ml.LocalNode().Address(), packets)
	waitFor(2*time.Second, func() bool { return errs.n.Load() >= packets*9/10 })

	row(t, "junk UDP without the key: random packets of 16 to 1,400 bytes at an encrypted node's gossip port (real memberlist, loopback), one a millisecond",
		fmt.Sprintf("%s packets", itoa(sent)),
		fmt.Sprintf("log lines at warning or error %d (the guard's summary, at most one a 10 s), memberlist's %d; %s counted in vigil_gossip_inbound_refused_total{transport=\"packet\"} (control, memberlist without the guard: %s ERROR lines)",
			lines, logs.others.Load(), itoa(int(counted)), itoa(int(errs.n.Load()))))
	if lines > 1 || logs.others.Load() > 0 {
		t.Errorf("%d log lines at warning or above for %d junk packets, want at most 1", lines, sent)
	}
	if counted < float64(sent)*0.9 {
		t.Errorf("counted %v of %d junk packets", counted, sent)
	}
	if errs.n.Load() < packets/2 {
		t.Errorf("control: memberlist without the guard logged %d errors for %d junk packets, so the test cannot fail", errs.n.Load(), packets)
	}
}

// refusedCount sums vigil_gossip_inbound_refused_total for one transport.
func refusedCount(reg *prometheus.Registry, transport string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return 0
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != "vigil_gossip_inbound_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "transport" && l.GetValue() == transport {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}
