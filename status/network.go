package status

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
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

// digest builds this location's digest at now.
func (a *API) digest() Digest {
	id := a.opts.Node.Identity()
	d := Digest{Location: id.ID, Region: id.Region, GeneratedAt: a.now(), Checks: []DigestCheck{}}
	heard := map[string]*RegionHeard{}
	for _, h := range a.opts.Location.Checkers() {
		r := heard[h.Region]
		if r == nil {
			r = &RegionHeard{Region: h.Region}
			heard[h.Region] = r
		}
		r.Total++
		if h.Fresh {
			r.Fresh++
		}
	}
	for _, m := range a.opts.Node.Members() {
		if slices.Contains(m.Roles, "checker") && heard[m.Region] == nil {
			heard[m.Region] = &RegionHeard{Region: m.Region}
		}
	}
	for _, r := range heard {
		d.Heard = append(d.Heard, *r)
	}
	slices.SortFunc(d.Heard, func(a, b RegionHeard) int { return cmp.Compare(a.Region, b.Region) })
	avail := a.availability24h(d.GeneratedAt)
	for _, cv := range a.opts.Location.Verdicts() {
		e := cv.Verdict
		dc := DigestCheck{ID: cv.ID, NetworkCell: NetworkCell{State: e.State.String(), Held: e.Held, Since: e.Since,
			Healthy: e.Counts.Healthy, Fresh: e.Counts.Fresh, Stale: e.Counts.Stale}}
		if r, ok := avail[cv.ID]; ok {
			dc.Availability24h = &r
		}
		if cv.Calculated {
			dc.Fresh = e.Counts.Healthy + e.Counts.Unhealthy // its children, all of which count
		}
		d.Checks = append(d.Checks, dc)
	}
	slices.SortFunc(d.Checks, func(a, b DigestCheck) int { return cmp.Compare(a.ID, b.ID) })
	d.Overrides = a.overridesInForce()
	return d
}

// availAge is how long a computed 24-hour availability serves: it moves slowly, and computing
// it reads every check's hourly buckets (at 10,000 checks it more than doubled a digest's
// cost when computed for each).
const availAge = time.Minute

// availability24h returns each check's healthy share of the last 24 hours, for the checks
// this location observed in them (none without a history), as computed at most availAge
// before now.
func (a *API) availability24h(now time.Time) map[string]float64 {
	if a.opts.History == nil {
		return nil
	}
	a.availMu.Lock()
	defer a.availMu.Unlock()
	if a.avail != nil && now.Sub(a.availAt) < availAge && !now.Before(a.availAt) {
		return a.avail
	}
	out := map[string]float64{}
	defer func() { a.avail, a.availAt = out, now }()
	page, _ := a.opts.History.HistorySummaries("", 0, now)
	for _, h := range page {
		for _, av := range h.Availability {
			if av.Window == "24h" && av.Observed > 0 {
				out[h.Check] = av.Ratio
			}
		}
	}
	return out
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

// fetchOne reads one peer's digest.
func (n *network) fetchOne(ctx context.Context, base string) (*Digest, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/v1/network/digest", nil)
	if err != nil {
		return nil, fmt.Errorf("unreachable: %w", err)
	}
	res, err := n.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("unreachable: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 4096))
		return nil, fmt.Errorf("its status API answered HTTP %d", res.StatusCode)
	}
	var d Digest
	if err := json.NewDecoder(io.LimitReader(res.Body, maxDigest)).Decode(&d); err != nil {
		return nil, fmt.Errorf("reading its digest: %w", err)
	}
	return &d, nil
}

// merge lays the digests side by side: one row a check, one cell a reachable location.
func merge(locs []NetworkLocation, ds []*Digest) *merged {
	byID := map[string]*NetworkRow{}
	heard := map[string][]RegionHeard{}
	for _, d := range ds {
		heard[d.Location] = d.Heard
		for _, c := range d.Checks {
			r := byID[c.ID]
			if r == nil {
				r = &NetworkRow{ID: c.ID, Cells: map[string]NetworkCell{}}
				byID[c.ID] = r
			}
			r.Cells[d.Location] = c.NetworkCell
		}
	}
	m := &merged{locations: locs, rows: make([]NetworkRow, 0, len(byID))}
	for _, r := range byID {
		r.Disagree, r.Reason = disagreement(r.Cells, heard)
		if r.Disagree {
			m.disagree++
		}
		m.rows = append(m.rows, *r)
	}
	slices.SortFunc(m.rows, func(a, b NetworkRow) int { return cmp.Compare(a.ID, b.ID) })
	return m
}

// disagreement says whether the cells differ in state, and if so why: which locations say
// what, with their counts, and which of them hear only some regions' checkers.
func disagreement(cells map[string]NetworkCell, heard map[string][]RegionHeard) (bool, string) {
	byState := map[string][]string{}
	for loc, c := range cells {
		byState[c.State] = append(byState[c.State], loc)
	}
	if len(byState) < 2 {
		return false, ""
	}
	states := slices.Sorted(func(yield func(string) bool) {
		for s := range byState {
			if !yield(s) {
				return
			}
		}
	})
	var parts []string
	for _, s := range states {
		locs := byState[s]
		slices.Sort(locs)
		var each []string
		for _, l := range locs {
			c := cells[l]
			each = append(each, fmt.Sprintf("%s (%d/%d fresh healthy)", l, c.Healthy, c.Fresh))
		}
		verb := " say "
		if len(locs) == 1 {
			verb = " says "
		}
		parts = append(parts, strings.Join(each, ", ")+verb+s)
	}
	why := strings.Join(parts, "; ")
	locs := slices.Sorted(func(yield func(string) bool) {
		for l := range cells {
			if !yield(l) {
				return
			}
		}
	})
	for _, l := range locs {
		var hears, deaf []string
		fresh, total := 0, 0
		for _, h := range heard[l] {
			fresh += h.Fresh
			total += h.Total
			if h.Fresh > 0 {
				hears = append(hears, h.Region)
			} else {
				deaf = append(deaf, h.Region)
			}
		}
		if len(deaf) > 0 {
			why += fmt.Sprintf("; %s hears only %s checkers (%d of %d fresh), none of %s",
				l, cmp.Or(strings.Join(hears, ", "), "no"), fresh, total, strings.Join(deaf, ", "))
		}
	}
	return true, why
}

// networkQuery is a request's filter and page.
type networkQuery struct {
	q, filter, cursor string
	limit             int
}

func parseNetworkQuery(r *http.Request) (networkQuery, error) {
	v := r.URL.Query()
	if err := checkQuery(v, "q", "filter", "cursor", "limit"); err != nil {
		return networkQuery{}, err
	}
	nq := networkQuery{q: strings.ToLower(v.Get("q")), filter: cmp.Or(v.Get("filter"), "all"), cursor: v.Get("cursor"), limit: defaultLimit}
	switch nq.filter {
	case "all", "disagree", "unhealthy":
	default:
		return nq, fmt.Errorf("status: query filter: %q is none of all, disagree, unhealthy", nq.filter)
	}
	if s := v.Get("limit"); s != "" {
		l, err := strconv.Atoi(s)
		if err != nil || l < 1 || l > maxLimit {
			return nq, fmt.Errorf("status: query limit: want 1 to %d, not %q", maxLimit, s)
		}
		nq.limit = l
	}
	if len(nq.q) > 256 || len(nq.cursor) > 1024 {
		return nq, fmt.Errorf("status: query q or cursor too long")
	}
	return nq, nil
}

// keep says whether row r passes the query's search and filter.
func (nq networkQuery) keep(r *NetworkRow) bool {
	if nq.q != "" && !strings.Contains(strings.ToLower(r.ID), nq.q) {
		return false
	}
	switch nq.filter {
	case "disagree":
		return r.Disagree
	case "unhealthy":
		for _, c := range r.Cells {
			if c.State == "unhealthy" {
				return true
			}
		}
		return false
	}
	return true
}

// networkView serves GET /v1/network?q=&filter=&cursor=&limit=.
func (a *API) networkView(w http.ResponseWriter, r *http.Request) {
	nq, err := parseNetworkQuery(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	m, err := a.net.get(r.Context(), a)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	out := NetworkView{Location: a.opts.Node.Identity().ID, GeneratedAt: a.now(), Locations: m.locations,
		Checks: len(m.rows), Disagreements: m.disagree, Rows: []NetworkRow{}}
	start, _ := slices.BinarySearchFunc(m.rows, nq.cursor, func(r NetworkRow, id string) int { return cmp.Compare(r.ID, id) })
	if start < len(m.rows) && m.rows[start].ID == nq.cursor && nq.cursor != "" {
		start++
	}
	for i := range m.rows {
		row := &m.rows[i]
		if !nq.keep(row) {
			continue
		}
		out.Matching++
		if i < start {
			continue
		}
		if len(out.Rows) == nq.limit {
			out.Next = out.Rows[len(out.Rows)-1].ID
			continue
		}
		out.Rows = append(out.Rows, *row)
	}
	writeJSON(w, http.StatusOK, out)
}

// networkDigest serves GET /v1/network/digest: this location's verdicts in brief, what the
// other locations fetch. It is built at most once per CacheFor.
func (a *API) networkDigest(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r.URL.Query()); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	a.digestMu.Lock()
	if a.digestBody == nil || a.now().Sub(a.digestAt) >= a.net.opts.CacheFor {
		// Note the locations in membership now, too: a location first asked for its view
		// after a partition began no longer has the far side in its membership, and would not
		// list it at all (CI saw sa-east's view without us-east's location for 40s).
		a.net.mu.Lock()
		a.net.peersLocked(a)
		a.net.mu.Unlock()
		b, err := json.Marshal(a.digest())
		if err != nil {
			a.digestMu.Unlock()
			writeError(w, http.StatusInternalServerError, "status: encoding the digest: "+err.Error())
			return
		}
		a.digestBody, a.digestAt = append(b, '\n'), a.now()
	}
	body := a.digestBody
	a.digestMu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(body)
}
