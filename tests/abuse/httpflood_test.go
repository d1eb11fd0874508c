package abuse

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/httpguard"
)

// connFlood opens n connections from srcs (connection i from srcs[i%len(srcs)]) to addr and
// sends each the start of a request header; it returns them and how many the server kept
// open (a read that times out rather than ends).
func connFlood(t *testing.T, addr string, srcs []net.IP, n int) (conns []net.Conn, open int) {
	t.Helper()
	for i := range n {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: srcs[i%len(srcs)]}, Timeout: 2 * time.Second}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			continue
		}
		_, _ = c.Write([]byte("GET /v1/state HTTP/1.1\r\nHost: x\r\n"))
		conns = append(conns, c)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
			_, err := c.Read(make([]byte, 1))
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				mu.Lock()
				open++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return conns, open
}

// legitGets asks base for path tries times from 127.0.0.1, each on a new connection; it
// returns the answers with the code want.
func legitGets(base, path string, tries int, want int) int {
	ok := 0
	for range tries {
		tr := &http.Transport{DisableKeepAlives: true}
		c := &http.Client{Timeout: 2 * time.Second, Transport: tr}
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		req.Header.Set("Authorization", "Bearer "+readToken)
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == want {
				ok++
			}
		}
		tr.CloseIdleConnections()
		time.Sleep(20 * time.Millisecond)
	}
	return ok
}

// TestAbuseHTTPConnFlood: one source (127.0.2.2) opens 300 connections to the agent's
// control API and 300 to its HTTP listener and holds them with half a request header; a
// client from another network then asks each listener 20 times. With 16 connections per
// source network (of 128 in all), the source keeps at most 16 per listener and the other
// client gets every answer. The control, the same 300 connections from 20 networks (15
// each, which a per-source bound of 16 cannot tell apart), must lock the other client out.
// (A network may not hold every connection: the per-source bound stays below the total.)
func TestAbuseHTTPConnFlood(t *testing.T) {
	const n, tries = 300, 20
	run := func(srcs []net.IP) (open, answered int) {
		a := startAgent(t, httpguard.Limits{MaxConns: 128, MaxConnsPerSource: 16})
		for _, l := range []struct{ base, path string }{{a.api, "/v1/state"}, {a.http, "/healthz"}} {
			conns, o := connFlood(t, strings.TrimPrefix(l.base, "http://"), srcs, n)
			open = max(open, o)
			answered += legitGets(l.base, l.path, tries, http.StatusOK)
			for _, c := range conns {
				c.Close()
			}
		}
		return open, answered
	}
	open, answered := run([]net.IP{net.IPv4(127, 0, 2, 2)})
	ctlOpen, ctlAnswered := run(floodSources(20, true))
	row(t, "HTTP connection flood from one source: 300 connections to the agent's control API and 300 to its HTTP listener from 127.0.2.2, each holding half a request header; meanwhile 20 requests to each from 127.0.0.1; -http-max-conns-per-source 16, -http-max-conns 128",
		"600 connections, 40 requests",
		"connections beyond the per-source bound held open 0 (at most "+itoa(open)+" per listener kept, bound 16); the other source's requests answered "+itoa(answered)+" of 40 (control, the same connections from 20 networks: "+itoa(ctlOpen)+" held, "+itoa(ctlAnswered)+" of 40 answered)")
	if open > 16 || answered != 2*tries {
		t.Errorf("held %d connections (bound 16), other source answered %d of %d", open, answered, 2*tries)
	}
	if ctlAnswered == 2*tries {
		t.Errorf("control: from 20 networks the other source still got %d of %d answers: the flood is not a flood", ctlAnswered, 2*tries)
	}
}
