package netlab

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/calibrate"
)

// udpEcho serves UDP echo on addr inside region r until the test ends.
func udpEcho(t *testing.T, r *Region, port int) {
	t.Helper()
	var pc net.PacketConn
	err := r.NS.Do(func() error {
		var err error
		pc, err = net.ListenPacket("udp", fmt.Sprintf("%s:%d", r.Addr, port))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(buf[:n], from)
		}
	}()
}

// rtt sends one datagram from region from to the echo of region to and returns the round
// trip, or an error after timeout.
func rtt(from, to *Region, port int, timeout time.Duration) (time.Duration, error) {
	c, err := from.NS.DialContext(context.Background(), "udp", fmt.Sprintf("%s:%d", to.Addr, port))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	if _, err := c.Write([]byte("ping")); err != nil {
		return 0, err
	}
	_ = c.SetReadDeadline(start.Add(timeout))
	buf := make([]byte, 16)
	if _, err := c.Read(buf); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// echoTopology builds the three default regions' namespaces and links, with a UDP echo
// server on port 9000 of each region, all removed when the test ends (the test is skipped
// on a machine that cannot build them).
func echoTopology(t *testing.T) *Topology {
	t.Helper()
	needReal(t)
	topo, err := buildTopology(t.Context(), testPrefix(), DefaultRegions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := topo.close(); err != nil {
			t.Error(err)
		}
	})
	for _, r := range topo.Regions {
		udpEcho(t, r, 9000)
	}
	return topo
}

// The bounds are an idle machine's, scaled by the slowdown measured meanwhile
// (internal/calibrate): this process carries every packet between the namespaces.
func TestLinksCarryPacketsWithTheirDelay(t *testing.T) {
	topo := echoTopology(t)
	m := calibrate.Start()
	defer m.Stop()
	for _, a := range topo.Regions {
		for _, b := range topo.Regions {
			d, err := rtt(a, b, 9000, time.Second)
			if err != nil {
				t.Fatalf("%s -> %s: %v", a.Name, b.Name, err)
			}
			if load := m.Reading(); d > load.Scale(100*time.Millisecond) {
				t.Errorf("%s -> %s: round trip %v without latency (%v)", a.Name, b.Name, d, load)
			}
		}
	}
	l := topo.link("us-east", "sa-east")
	l.SetShape(Shape{Latency: 80 * time.Millisecond})
	d, err := rtt(topo.Region("us-east"), topo.Region("sa-east"), 9000, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// 80 ms each way, and slack.
	if load := m.Reading(); d < 160*time.Millisecond || d > 160*time.Millisecond+load.Scale(440*time.Millisecond) {
		t.Errorf("us-east -> sa-east with 80ms each way: round trip %v, want 160ms to 600ms on an idle machine (%v)", d, load)
	}
	if d, err := rtt(topo.Region("us-east"), topo.Region("eu-west"), 9000, time.Second); err != nil || d > m.Reading().Scale(100*time.Millisecond) {
		t.Errorf("us-east -> eu-west, not slowed: %v, %v (%v)", d, err, m.Reading())
	}
	ab, ba := l.Stats()
	if ab.Delivered == 0 || ba.Delivered == 0 || ab.Dropped+ba.Dropped != 0 {
		t.Errorf("link stats %+v %+v: want packets delivered both ways, none dropped", ab, ba)
	}
}
