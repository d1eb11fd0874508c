package httpguard

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestListenBounds: a network's connections beyond its bound are closed at once, whichever
// of its addresses they come from; one closed gives its slot back; the total bound holds
// across networks.
func TestListenBounds(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	ln, err := Listen(raw, Limits{MaxConns: 5, MaxConnsPerSource: 3}, reg, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func(src string) (net.Conn, bool) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err = c.Read(make([]byte, 1))
		ne, ok := err.(net.Error)
		return c, ok && ne.Timeout() // kept open: the read timed out
	}
	kept := 0
	var conns []net.Conn
	for i := range 6 {
		c, open := dial(fmt.Sprintf("127.0.2.%d", 1+i)) // six addresses of 127.0.2.0/24
		conns = append(conns, c)
		if open {
			kept++
		}
	}
	if kept != 3 {
		t.Fatalf("one network kept %d connections, want 3", kept)
	}
	for i := range 3 {
		c, open := dial(fmt.Sprintf("127.0.3.%d", 1+i))
		conns = append(conns, c)
		if open {
			kept++
		}
	}
	if kept != 5 {
		t.Fatalf("kept %d in all, want 5", kept)
	}
	(<-accepted).Close() // the server closes one of 127.0.2.0/24's
	if _, open := dial("127.0.2.50"); !open {
		t.Fatal("a closed connection did not give its slot back")
	}
	if got := testutil.ToFloat64(ln.(*limitListener).refused); got != 4 {
		t.Fatalf("refused %v, want 4", got)
	}
	for _, c := range conns {
		c.Close()
	}
}
