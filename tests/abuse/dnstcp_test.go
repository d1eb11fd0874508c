package abuse

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/location"
)

// tcpQuery is a length-prefixed DNS query for www.demo.vigil.test. A.
func tcpQuery(t *testing.T) []byte {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion("www.demo.vigil.test.", dns.TypeA)
	b, err := m.Pack()
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(b))), b...)
}

// hog holds as many TCP connections from srcs (connection i from srcs[i%len(srcs)]) to addr
// as it can, conns at a time, each asking a query every ask (well within the idle timeout)
// and redialling when the server closes it, until stop. It returns the dials and the longest
// a connection lasted.
func hog(addr string, srcs []net.IP, conns int, ask time.Duration, q []byte, stop <-chan struct{}) (dials int64, longest time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range conns {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: srcs[i%len(srcs)]}, Timeout: time.Second}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c, err := d.Dial("tcp", addr)
				if err != nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				atomic.AddInt64(&dials, 1)
				start := time.Now()
				buf := make([]byte, 2048)
			serve:
				for {
					_ = c.SetDeadline(time.Now().Add(2 * ask))
					if _, err := c.Write(q); err != nil {
						break
					}
					var n [2]byte
					if _, err := io.ReadFull(c, n[:]); err != nil {
						break
					}
					if _, err := io.ReadFull(c, buf[:binary.BigEndian.Uint16(n[:])]); err != nil {
						break
					}
					select {
					case <-stop:
						break serve
					case <-time.After(ask):
					}
				}
				lived := time.Since(start)
				c.Close()
				time.Sleep(20 * time.Millisecond)
				select {
				case <-stop:
				default:
					mu.Lock()
					longest = max(longest, lived)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return dials, longest
}

// legitTCP asks addr over TCP from 127.0.0.1 every 100 ms until stop, each query on a new
// connection with a 1 s timeout, and returns how many were asked and answered.
func legitTCP(addr string, stop <-chan struct{}) (asked, answered int) {
	c := &dns.Client{Net: "tcp", Timeout: time.Second}
	m := new(dns.Msg)
	m.SetQuestion("www.demo.vigil.test.", dns.TypeA)
	for {
		select {
		case <-stop:
			return asked, answered
		case <-time.After(100 * time.Millisecond):
		}
		asked++
		if r, _, err := c.Exchange(m, addr); err == nil && r.Rcode == dns.RcodeSuccess && len(r.Answer) > 0 {
			answered++
		}
	}
}

// TestAbuseDNSTCPHog: one client (127.0.2.2) tries to hold every TCP slot of a location
// (64 per listener), 100 connections at a time, each asking a query every 500 ms so that the
// idle timeout never fires, redialling whatever is closed, for 5 s; a client of another
// network (127.0.0.1) asks over TCP every 100 ms meanwhile. With 8 connections per client
// network (-dns-tcp-max-conns-per-client) and a lifetime of 2 s (-dns-tcp-lifetime; default
// 30 s), every legitimate query must be answered and no hogging connection may outlive 2 s
// by much. The control spreads the same 100 connections over 13 networks (8 or fewer each,
// as a per-client limit of 8 cannot tell apart) with the lifetime up (1 h): the hog then
// takes every slot and the legitimate client's queries fail. (A network may not hold every
// slot: the per-client limit stays below the listener's.)
func TestAbuseDNSTCPHog(t *testing.T) {
	const (
		conns    = 100
		ask      = 500 * time.Millisecond
		lasts    = 5 * time.Second
		lifetime = 2 * time.Second
	)
	q := tcpQuery(t)
	run := func(cfg location.Config, srcs []net.IP) (dials int64, longest time.Duration, asked, answered int, refused float64) {
		addr, reg := startLocationWith(t, cfg)
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { dials, longest = hog(addr, srcs, conns, ask, q, stop) })
		time.Sleep(500 * time.Millisecond) // the hog takes what it can first
		time.AfterFunc(lasts, func() { close(stop) })
		asked, answered = legitTCP(addr, stop)
		wg.Wait()
		refused = counter(t, reg, "vigil_location_queries_dropped_total", map[string]string{"reason": "tcp_conns_per_client"}) +
			counter(t, reg, "vigil_location_queries_dropped_total", map[string]string{"reason": "tcp_conns"})
		return
	}
	dials, longest, asked, answered, refused := run(location.Config{MaxTCPConnsPerClient: 8, TCPConnLifetime: lifetime}, []net.IP{net.IPv4(127, 0, 2, 2)})
	_, _, cAsked, cAnswered, _ := run(location.Config{MaxTCPConnsPerClient: 8, TCPConnLifetime: time.Hour}, floodSources(13, true))

	row(t, fmt.Sprintf("DNS over TCP hogging: one client (127.0.2.2) keeps %d connections at a location's TCP port (64 slots per listener), each asking every %v so that the idle timeout never fires, redialling for %v; a client of another network (127.0.0.1) asks over TCP every 100 ms meanwhile; -dns-tcp-max-conns-per-client 8, -dns-tcp-lifetime 2s", conns, ask, lasts),
		fmt.Sprintf("%s hog dials, %d legitimate queries", itoa(int(dials)), asked),
		fmt.Sprintf("legitimate queries unanswered %d of %d; hog connections refused at once %s, longest-lived %v (control, the hog spread over 13 networks and lifetime 1 h: %d of %d legitimate queries answered)",
			asked-answered, asked, itoa(int(refused)), longest.Round(10*time.Millisecond), cAnswered, cAsked))
	if answered != asked || asked < 20 {
		t.Errorf("got through: %d of %d legitimate TCP queries unanswered", asked-answered, asked)
	}
	if longest > lifetime+time.Second {
		t.Errorf("a hogging connection lived %v, past its lifetime of %v", longest, lifetime)
	}
	if cAnswered > cAsked/2 {
		t.Errorf("control: from 13 networks and without the lifetime %d of %d legitimate queries were answered, so the hog does not hog", cAnswered, cAsked)
	}
}
