package sim

// The poison networks' hostile endpoints: HTTP servers that hang every connection or flood
// every response while poisoned.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The kinds of hostile endpoint.
const (
	hostileHang  = "hang"  // accepts, reads the request, never answers
	hostileFlood = "flood" // answers with endless headers, or an endless body
)

// hostileServer is an HTTP endpoint that answers normally (200 "ok") until it is poisoned;
// then it hangs every connection, or floods every response as fast as the connection takes
// it: endless headers on /headers, an endless body on any other path.
type hostileServer struct {
	kind     string
	ln       net.Listener
	poisoned atomic.Bool
	conns    chan struct{} // a slot per connection held
	accepted atomic.Int64
	written  atomic.Int64 // bytes flooded
}

// newHostile listens on addr for a hostile endpoint of kind.
func newHostile(addr, kind string) (*hostileServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("sim: hostile endpoint: %w", err)
	}
	return &hostileServer{kind: kind, ln: ln, conns: make(chan struct{}, maxHostileConns)}, nil
}

// run accepts connections until ctx ends, then closes every one it holds and returns.
func (h *hostileServer) run(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { h.ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := h.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			select { // e.g. out of file descriptors: try again shortly
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		h.accepted.Add(1)
		select {
		case h.conns <- struct{}{}:
		default:
			c.Close() // too many held: refuse this one
			continue
		}
		wg.Go(func() {
			defer func() { <-h.conns }()
			h.serve(ctx, c)
		})
	}
}

// serve answers one connection: normally, or by hanging or flooding while poisoned. Every
// connection ends when the client closes it, ctx ends, or after maxHostileHold.
func (h *hostileServer) serve(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	_ = c.SetDeadline(time.Now().Add(maxHostileHold))
	br := bufio.NewReaderSize(c, 4096)
	line, err := br.ReadSlice('\n') // at most the buffer: a longer line is an error
	if err != nil {
		return
	}
	path := ""
	if f := strings.Fields(string(line)); len(f) >= 2 {
		path = f[1]
	}
	for range 100 { // the rest of the request head, bounded
		l, err := br.ReadSlice('\n')
		if err != nil || len(bytes.TrimSpace(l)) == 0 {
			break
		}
	}
	if !h.poisoned.Load() {
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"))
		return
	}
	switch {
	case h.kind == hostileHang:
		// Never answer: wait for the client to give up (its read ends in EOF).
		_, _ = br.Discard(1 << 20)
	case path == "/headers":
		h.flood(c, "HTTP/1.1 200 OK\r\n", "X-Flood: "+strings.Repeat("y", 1000)+"\r\n")
	default:
		h.flood(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n", strings.Repeat("x", 64<<10))
	}
}

// flood writes head, then chunk again and again until the connection fails (the client
// closed it) or its deadline passes.
func (h *hostileServer) flood(c net.Conn, head, chunk string) {
	if _, err := c.Write([]byte(head)); err != nil {
		return
	}
	b := []byte(chunk)
	for {
		n, err := c.Write(b)
		h.written.Add(int64(n))
		if err != nil {
			return
		}
	}
}
