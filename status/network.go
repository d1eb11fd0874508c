package status

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// The network view: every location's verdict of every check, side by side. The asked location
// fetches the other locations' digests (GET /v1/network/digest) over their status APIs, found
// through gossip membership (members with the location role), with a timeout per request, at
// most NetworkOptions.Concurrency at a time, and keeps the merged view for CacheFor: however
// many clients ask, a location fetches each peer's digest at most once per CacheFor.

// NetworkOptions configure how a location reaches the other locations' status APIs.
type NetworkOptions struct {
	// PeerURL returns the base URL of a member's status API ("" when unknown). Default
	// (HostPortURL): the address the member advertises in its gossip metadata, its missing
	// parts taken from its gossip address's host and this node's HTTP port.
	PeerURL func(m Member) string
	// Client makes the requests. Default a client without proxy.
	Client *http.Client
	// Timeout bounds one peer's request. Default 1s.
	Timeout time.Duration
	// Concurrency bounds the requests in flight. Default 4.
	Concurrency int
	// CacheFor is how long a fetched view is served again. Default 2s.
	CacheFor time.Duration
}

func (o *NetworkOptions) setDefaults() {
	if o.Client == nil {
		o.Client = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}}
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.CacheFor <= 0 {
		o.CacheFor = 2 * time.Second
	}
}

// Bounds of the network view.
const (
	// maxLocations bounds the locations remembered and fetched.
	maxLocations = 128
	// forgetAfter is how long a location absent from membership is still shown.
	forgetAfter = time.Hour
	// defaultLimit and maxLimit bound a page of rows.
	defaultLimit = 100
	maxLimit     = 1000
	// maxDigest bounds a peer's digest read (about 100 bytes a check).
	maxDigest = 16 << 20
)

// HostPortURL returns a NetworkOptions.PeerURL that reaches each member at the HTTP address
// it advertises (Member.HTTP); a member that advertises no host is reached at the host of its
// gossip address, and one that advertises nothing (a node of an earlier build) there at port.
func HostPortURL(port string) func(Member) string {
	return func(m Member) string {
		host, _, err := net.SplitHostPort(m.Addr)
		if err != nil {
			return ""
		}
		p := port
		if m.HTTP != "" {
			h, hp, err := net.SplitHostPort(m.HTTP)
			if err != nil {
				return ""
			}
			if h != "" {
				host = h
			}
			p = hp
		}
		if p == "" {
			return ""
		}
		return "http://" + net.JoinHostPort(host, p)
	}
}

// network is the fan-out and its cache.
type network struct {
	opts NetworkOptions
	mu   sync.Mutex
	at   time.Time
	view *merged
	wait chan struct{} // closed when the fetch in flight ends; nil when none
	// known are the locations seen in membership, by id.
	known map[string]knownLocation
}

type knownLocation struct {
	region, url string
	seen        time.Time
}

// merged is the whole view, before filtering and paging.
type merged struct {
	locations []NetworkLocation
	rows      []NetworkRow // sorted by id
	disagree  int
	unknown   int // rows the reachable agree on while a location is unreachable
}

// get returns the merged view, fetching it when the cached one is older than CacheFor; one
// fetch at a time, the others wait for it (or for ctx).
func (n *network) get(ctx context.Context, a *API) (*merged, error) {
	n.mu.Lock()
	if n.view != nil && a.now().Sub(n.at) < n.opts.CacheFor {
		v := n.view
		n.mu.Unlock()
		return v, nil
	}
	if ch := n.wait; ch != nil {
		n.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("status: network view: %w", ctx.Err())
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.view, nil
	}
	ch := make(chan struct{})
	n.wait = ch
	peers := n.peersLocked(a)
	n.mu.Unlock()
	v := n.fetch(a, peers)
	n.mu.Lock()
	n.view, n.at, n.wait = v, a.now(), nil
	n.mu.Unlock()
	close(ch)
	return v, nil
}

// peersLocked updates the known locations from membership and returns them, this node left
// out, sorted by id.
func (n *network) peersLocked(a *API) []NetworkLocation {
	self := a.opts.Node.Identity().ID
	now := a.now()
	for _, m := range a.opts.Node.Members() {
		if m.ID == self || !slices.Contains(m.Roles, "location") || m.State == "left" {
			continue
		}
		if _, ok := n.known[m.ID]; !ok && len(n.known) >= maxLocations {
			continue
		}
		url := ""
		if n.opts.PeerURL != nil {
			url = n.opts.PeerURL(m)
		}
		n.known[m.ID] = knownLocation{region: m.Region, url: url, seen: now}
	}
	out := make([]NetworkLocation, 0, len(n.known))
	for id, k := range n.known {
		if now.Sub(k.seen) > forgetAfter {
			delete(n.known, id)
			continue
		}
		l := NetworkLocation{ID: id, Region: k.region, URL: k.url}
		if now.Sub(k.seen) > n.opts.CacheFor {
			l.Error = "not in this node's membership since " + k.seen.UTC().Format(time.RFC3339)
		}
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b NetworkLocation) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// fetch asks every peer for its digest (bounded in time and concurrency) and merges them with
// this location's own.
func (n *network) fetch(a *API, peers []NetworkLocation) *merged {
	digests := make([]*Digest, len(peers))
	errs := make([]string, len(peers))
	ctx, cancel := context.WithTimeout(context.Background(), n.opts.Timeout)
	defer cancel()
	sem := make(chan struct{}, n.opts.Concurrency)
	var wg sync.WaitGroup
	for i, p := range peers {
		if p.URL == "" {
			errs[i] = "no status API address known for it"
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			d, err := n.fetchOne(ctx, p.URL)
			if err != nil {
				errs[i] = err.Error()
				return
			}
			digests[i] = d
		})
	}
	wg.Wait()
	own := a.digest()
	all := []*Digest{&own}
	locs := []NetworkLocation{{ID: own.Location, Region: own.Region, Reachable: true, Self: true,
		GeneratedAt: own.GeneratedAt, Heard: own.Heard, Checks: len(own.Checks)}}
	for i, p := range peers {
		if d := digests[i]; d != nil && d.Location == p.ID {
			p.Reachable, p.Error, p.GeneratedAt, p.Heard, p.Checks = true, "", d.GeneratedAt, d.Heard, len(d.Checks)
			all = append(all, d)
		} else if d != nil {
			p.Error = fmt.Sprintf("its status API answers as %q", d.Location)
		} else if p.Error == "" || errs[i] != "" {
			p.Error = cmp.Or(errs[i], p.Error)
		}
		locs = append(locs, p)
	}
	return merge(locs, all)
}

// fetchOne reads one peer's digest; the error says why not, as the view shows it.
func (n *network) fetchOne(ctx context.Context, base string) (*Digest, error) {
	c := Client{Base: base, HTTP: n.opts.Client, MaxBytes: maxDigest}
	d, err := c.Digest(ctx)
	var he *HTTPError
	var ue *url.Error
	switch {
	case errors.As(err, &he):
		return nil, fmt.Errorf("its status API answered HTTP %d", he.Code)
	case errors.As(err, &ue):
		return nil, fmt.Errorf("unreachable: %w", ue)
	case err != nil:
		return nil, fmt.Errorf("reading its digest: %w", errors.Unwrap(err))
	}
	return &d, nil
}
