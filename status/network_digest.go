package status

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"time"
)

// This location's side of the network view: its digest, what the other locations fetch.

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
		if av, ok := avail[cv.ID]; ok {
			dc.Availability24h, dc.Observed24h = &av.ratio, av.observed
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

// availability is a healthy share and the time it is of.
type availability struct {
	ratio    float64
	observed time.Duration
}

// availability24h returns each check's healthy share of the last 24 hours, for the checks
// this location observed in them (none without a history), as computed at most availAge
// before now.
func (a *API) availability24h(now time.Time) map[string]availability {
	if a.opts.History == nil {
		return nil
	}
	a.availMu.Lock()
	defer a.availMu.Unlock()
	if a.avail != nil && now.Sub(a.availAt) < availAge && !now.Before(a.availAt) {
		return a.avail
	}
	out := map[string]availability{}
	defer func() { a.avail, a.availAt = out, now }()
	page, _ := a.opts.History.HistorySummaries("", 0, now)
	for _, h := range page {
		for _, av := range h.Availability {
			if av.Window == "24h" && av.Observed > 0 {
				out[h.Check] = availability{av.Ratio, av.Observed}
			}
		}
	}
	return out
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
		// list it at all (sa-east's view would lack us-east's location for the whole cut).
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
