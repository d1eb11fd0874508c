package netlab

import (
	"context"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/lab/oracle"
)

// maxQueries bounds the queries kept per location (a 30-minute run at 20 a second).
const maxQueries = 36_000

// querier is a client in one region asking that region's location, over UDP from a socket
// made inside the region's namespace, one query in flight at a time.
type querier struct {
	location *Proc
	names    []string
	timeout  time.Duration
	conn     net.Conn

	mu      sync.Mutex
	out     []oracle.Query
	dropped int
}

// newQuerier returns the client of location's region, its socket connected to the
// location's DNS address (it stays connected across the location's restarts).
func newQuerier(ctx context.Context, location *Proc, names []string, timeout time.Duration) (*querier, error) {
	conn, err := location.Region.NS.DialContext(ctx, "udp", location.Addrs["dns"])
	if err != nil {
		return nil, err
	}
	return &querier{location: location, names: names, timeout: timeout, conn: conn}, nil
}

// close closes the querier's socket.
func (q *querier) close() { q.conn.Close() }

// ask sends one query for name and waits for its answer, up to q.timeout. A datagram that
// is not the answer to this query (a late answer to an earlier one) is skipped.
func (q *querier) ask(ctx context.Context, name string) oracle.Query {
	rec := oracle.Query{Location: q.location.ID, Name: name, Type: config.TypeA, Rcode: -1}
	conn := q.conn
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	wire, err := m.Pack()
	if err != nil {
		rec.Sent, rec.Err = time.Now(), err.Error()
		rec.Received = rec.Sent
		return rec
	}
	rec.Sent = time.Now()
	_ = conn.SetDeadline(rec.Sent.Add(q.timeout))
	if _, err := conn.Write(wire); err != nil {
		rec.Received, rec.Err = time.Now(), err.Error()
		return rec
	}
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		if err != nil {
			// Received is when the client gave up: the query was in flight until then.
			rec.Received = time.Now()
			if errors.Is(err, os.ErrDeadlineExceeded) {
				rec.TimedOut = true
			} else {
				rec.Err = err.Error()
			}
			return rec
		}
		var r dns.Msg
		if r.Unpack(buf[:n]) != nil || !r.Response || r.Id != m.Id || len(r.Question) != 1 || r.Question[0].Name != name {
			continue
		}
		rec.Received, rec.Rcode = time.Now(), r.Rcode
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok && strings.EqualFold(a.Hdr.Name, name) {
				rec.Values = append(rec.Values, a.A.String())
			}
		}
		slices.Sort(rec.Values)
		return rec
	}
}

// run asks for each name in turn, one query every `every`, until ctx ends.
func (q *querier) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rec := q.ask(ctx, q.names[i%len(q.names)])
		if ctx.Err() != nil && (rec.TimedOut || rec.Err != "") {
			return // cut short by the end of the run
		}
		q.mu.Lock()
		if len(q.out) < maxQueries {
			q.out = append(q.out, rec)
		} else {
			q.dropped++
		}
		q.mu.Unlock()
	}
}

// recorded returns the queries kept and how many were not kept.
func (q *querier) recorded() ([]oracle.Query, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.out), q.dropped
}
