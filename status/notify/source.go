package notify

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/vigil-dns/vigil/status"
)

// Source returns the locations' verdicts: one Observation per location it knows, with nil
// States for one it could not reach.
type Source interface {
	Observe(ctx context.Context) []Observation
}

// Digests is a Source that reads each location's verdict digest (GET /v1/network/digest) from
// its status API.
type Digests struct {
	// URLs are the base URLs of the locations' status APIs, e.g. "http://10.0.1.3:7701".
	URLs []string
	// Client makes the requests; default a client without proxy that follows no redirect.
	Client *http.Client
	// Timeout bounds one request; default 2s.
	Timeout time.Duration
	// Concurrency bounds the requests in flight; default 4.
	Concurrency int
	// MaxBytes bounds one digest; default 64 MiB (about 100 bytes a check).
	MaxBytes int64

	once   sync.Once
	client *http.Client // Client, or the default made once
}

// Overridden is the state a check forced healthy or unhealthy by a maintenance override has
// in an Observation: it counts neither way, so maintenance does not alert.
const Overridden = "overridden"

// Observe reads every location's digest.
func (d *Digests) Observe(ctx context.Context) []Observation {
	d.once.Do(func() {
		d.client = d.Client
		if d.client == nil {
			d.client = newClient()
		}
	})
	client := d.client
	timeout := cmpOr(d.Timeout, 2*time.Second)
	limit := d.MaxBytes
	if limit <= 0 {
		limit = 64 << 20
	}
	conc := d.Concurrency
	if conc <= 0 {
		conc = 4
	}
	sem := make(chan struct{}, conc)
	out := make([]Observation, len(d.URLs))
	var wg sync.WaitGroup
	for i, u := range d.URLs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
				defer func() { <-sem }()
			case <-ctx.Done():
				out[i] = Observation{Location: u}
				return
			}
			rctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			o, err := fetchDigest(rctx, client, u, limit)
			if err != nil {
				o = Observation{Location: u}
			}
			out[i] = o
		}()
	}
	wg.Wait()
	return out
}

// fetchDigest reads one location's digest: its verdicts by check, those an override forces
// Overridden.
func fetchDigest(ctx context.Context, client *http.Client, base string, limit int64) (Observation, error) {
	c := status.Client{Base: base, HTTP: client, MaxBytes: limit}
	dg, err := c.Digest(ctx)
	if err != nil {
		return Observation{}, fmt.Errorf("notify: digest of %s: %w", base, err)
	}
	o := Observation{Location: dg.Location, Region: dg.Region, States: make(map[string]string, len(dg.Checks))}
	if o.Location == "" {
		o.Location = base
	}
	for _, c := range dg.Checks {
		o.States[c.ID] = c.State
	}
	for _, ov := range dg.Overrides {
		if ov.Check != "" {
			o.States[ov.Check] = Overridden
		}
	}
	return o, nil
}

// newClient returns the default client of notifications and digests: no proxy, idle
// connections closed after a minute, and no redirect followed (a receiver or location that
// redirects is answered as refusing).
func newClient() *http.Client {
	return &http.Client{
		Transport:     &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
