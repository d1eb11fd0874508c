package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
)

// WriteLoad describes a load of writes on the control plane's API: Clients clients (each a
// Client of one voter), each writing one item per request and waiting for the answer before
// the next, for Duration or until Writes writes are answered in all.
type WriteLoad struct {
	// Servers are base URLs of voters; client i writes to Servers[i % len(Servers)].
	Servers []string
	// Token is the write token.
	Token string
	// Clients is the number of concurrent clients; default 1.
	Clients int
	// Duration bounds the run; default 10s. Writes, when above 0, bounds it too.
	Duration time.Duration
	Writes   int
	// Kind is "check" (PUT /v1/checks/{id}) or "record_set" (PUT of an A record set in
	// Zone, which must exist); default "check".
	Kind string
	// Zone is the zone of record-set writes.
	Zone string
	// Prefix starts the names written, so that runs do not overwrite each other's; default
	// "load".
	Prefix string
	// Spread is how many distinct items each client cycles through; default 1000.
	Spread int
	// Client makes the requests; default a client with enough idle connections per host.
	Client *http.Client
}

// WriteLoadResult is what a load measured.
type WriteLoadResult struct {
	// Writes answered 2xx, Errors the others (and failed requests), in Elapsed.
	Writes, Errors int
	Elapsed        time.Duration
	// FirstError is the first failure, for the operator (nil when there was none); callers
	// may inspect it with errors.As (an *Error answer, a refused connection, TLS).
	FirstError error
	// P50, P99 and Max are the commit latencies of the successful writes: from sending the
	// request to reading its answer.
	P50, P99, Max time.Duration
}

// PerSecond returns the rate of successful writes.
func (r WriteLoadResult) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Writes) / r.Elapsed.Seconds()
}

// String reports the result on one line.
func (r WriteLoadResult) String() string {
	return fmt.Sprintf("%d writes in %s: %.0f writes/s, p50 %.2f ms, p99 %.2f ms, max %.2f ms, %d errors",
		r.Writes, r.Elapsed.Round(time.Millisecond), r.PerSecond(), ms(r.P50), ms(r.P99), ms(r.Max), r.Errors)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// RunWriteLoad runs the load and measures it. Every client's loop is bounded by the
// duration, the write count and ctx.
func RunWriteLoad(ctx context.Context, l WriteLoad) (WriteLoadResult, error) {
	l, err := l.withDefaults()
	if err != nil {
		return WriteLoadResult{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, l.Duration)
	defer cancel()
	var (
		t       loadTally
		wg      sync.WaitGroup
		started = time.Now()
	)
	budget := make(chan struct{}, max(l.Writes, 1))
	for range cap(budget) {
		budget <- struct{}{}
	}
	take := func() bool {
		if l.Writes <= 0 {
			return true
		}
		select {
		case <-budget:
			return true
		default:
			return false
		}
	}
	for c := range l.Clients {
		wg.Go(func() { l.runClient(ctx, c, take, &t) })
	}
	wg.Wait()
	res, lat := t.res, t.lat
	res.Elapsed = time.Since(started)
	if len(lat) > 0 {
		slices.Sort(lat)
		res.P50, res.P99, res.Max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	}
	return res, nil
}

// withDefaults returns l with the defaults of its unset fields, or why it cannot run.
func (l WriteLoad) withDefaults() (WriteLoad, error) {
	if len(l.Servers) == 0 {
		return l, errors.New("control client: a write load needs a server")
	}
	l.Clients = max(l.Clients, 1)
	if l.Duration <= 0 {
		l.Duration = 10 * time.Second
	}
	if l.Kind == "" {
		l.Kind = "check"
	}
	if l.Kind != "check" && l.Kind != "record_set" {
		return l, fmt.Errorf("control client: write load kind %q: want check or record_set", l.Kind)
	}
	if l.Kind == "record_set" && l.Zone == "" {
		return l, errors.New("control client: record-set writes need a zone")
	}
	if l.Prefix == "" {
		l.Prefix = "load"
	}
	if l.Spread <= 0 {
		l.Spread = 1000
	}
	if l.Client == nil {
		l.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: l.Clients, MaxConnsPerHost: l.Clients}, Timeout: 30 * time.Second}
	}
	return l, nil
}

// loadTally is what the clients of a write load counted, shared under mu.
type loadTally struct {
	mu  sync.Mutex
	res WriteLoadResult
	lat []time.Duration // the latencies of the successful writes
}

// runClient is client c of the load: it writes one item at a time while ctx lasts and take
// grants another, and adds its counts and latencies to t.
func (l *WriteLoad) runClient(ctx context.Context, c int, take func() bool, t *loadTally) {
	cl, err := New(Config{Voters: []string{l.Servers[c%len(l.Servers)]}, Token: l.Token, HTTP: l.Client})
	if err != nil {
		t.mu.Lock()
		t.res.Errors++
		if t.res.FirstError == nil {
			t.res.FirstError = err
		}
		t.mu.Unlock()
		return
	}
	var mine []time.Duration
	for i := 0; ctx.Err() == nil && take(); i++ {
		r := l.request(c, i)
		t0 := time.Now()
		_, err := cl.send(ctx, r)
		d := time.Since(t0)
		if ctx.Err() != nil && err != nil {
			break // the run ended during this write: neither counted
		}
		t.mu.Lock()
		if err != nil {
			t.res.Errors++
			if t.res.FirstError == nil {
				t.res.FirstError = err
			}
		} else {
			t.res.Writes++
		}
		t.mu.Unlock()
		if err == nil {
			mine = append(mine, d)
		}
	}
	t.mu.Lock()
	t.lat = append(t.lat, mine...)
	t.mu.Unlock()
}

// request returns client c's write number i.
func (l *WriteLoad) request(c, i int) request {
	n := i % l.Spread
	port := 1 + (c*l.Spread+i)%60000
	if l.Kind == "record_set" {
		name := fmt.Sprintf("%s-%d-%d", l.Prefix, c, n)
		return request{method: http.MethodPut, path: "/v1/zones/" + seg(l.Zone) + "/record_sets/" + seg(name) + "/A",
			body: fmt.Appendf(nil, `{"records": [{"value": "192.0.2.%d"}]}`, 1+i%250)}
	}
	id := fmt.Sprintf("%s-%d-%d", l.Prefix, c, n)
	return request{method: http.MethodPut, path: "/v1/checks/" + seg(id),
		body: fmt.Appendf(nil, `{"protocol": "tcp", "target": {"host": "127.0.0.1", "port": %d}}`, port)}
}
