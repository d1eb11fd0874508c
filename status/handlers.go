package status

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/quorum"
)

// checkQuery rejects a query with parameters other than allowed, or with one given twice.
func checkQuery(q url.Values, allowed ...string) error {
	for k, vs := range q {
		if !slices.Contains(allowed, k) {
			if len(allowed) == 0 {
				return fmt.Errorf("status: unknown query parameter %q (this resource takes none)", k)
			}
			return fmt.Errorf("status: unknown query parameter %q (want %s)", k, strings.Join(allowed, ", "))
		}
		if len(vs) > 1 {
			return fmt.Errorf("status: query parameter %q given %d times", k, len(vs))
		}
	}
	return nil
}

// regionOf returns a function naming the region of a checker id, from the checkers this
// location hears and the members this node sees.
func (a *API) regionOf(heard []quorum.HeardChecker, members []Member) func(string) string {
	m := make(map[string]string, len(heard)+len(members))
	for _, mb := range members {
		m[mb.ID] = mb.Region
	}
	for _, h := range heard {
		m[h.ID] = h.Region
	}
	return func(id string) string { return m[id] }
}

// verdicts serves GET /v1/verdicts[?state=healthy|unhealthy|unknown].
func (a *API) verdicts(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := checkQuery(q, "state"); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var want *quorum.State
	if s := q.Get("state"); q.Has("state") {
		var st quorum.State
		if err := st.UnmarshalText([]byte(s)); err != nil {
			writeError(w, http.StatusBadRequest, "status: query state: "+strings.TrimPrefix(err.Error(), "quorum: "))
			return
		}
		want = &st
	}
	id := a.opts.Node.Identity()
	heard := a.opts.Location.Checkers()
	members := a.opts.Node.Members()
	region := a.regionOf(heard, members)
	regions := map[string]bool{}
	for _, h := range heard {
		regions[h.Region] = true
	}
	for _, m := range members {
		if slices.Contains(m.Roles, "checker") {
			regions[m.Region] = true
		}
	}
	notes := a.overridesInForce()
	list := VerdictList{Location: id.ID, Region: id.Region, GeneratedAt: a.now(), Checks: []VerdictSummary{}, Overrides: notes}
	for _, cv := range a.opts.Location.Verdicts() {
		s := summaryOf(cv.ID, cv.Calculated, cv.Verdict)
		noteOverride(&s, notes)
		// A state asked for lists the checks DNS treats so, and those whose verdict says so
		// underneath an override.
		if want != nil && s.State != *want && s.ServedState != *want {
			continue
		}
		list.Tally.add(s)
		if !cv.Calculated {
			if e, ok := a.opts.Location.Explain(cv.ID); ok {
				s.Regions = evidenceOf(cv.ID, e, region).Regions
				for reg := range s.Regions {
					regions[reg] = true
				}
			}
		}
		list.Checks = append(list.Checks, s)
	}
	slices.SortFunc(list.Checks, func(a, b VerdictSummary) int { return cmp.Compare(a.ID, b.ID) })
	delete(regions, "")
	list.Regions = slices.Sorted(func(yield func(string) bool) {
		for reg := range regions {
			if !yield(reg) {
				return
			}
		}
	})
	writeJSON(w, http.StatusOK, list)
}

// verdict serves GET /v1/verdicts/{id}.
func (a *API) verdict(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r.URL.Query()); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	id := r.PathValue("id")
	e, ok := a.opts.Location.Explain(id)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("status: no check %q at this location", id))
		return
	}
	region := a.regionOf(a.opts.Location.Checkers(), a.opts.Node.Members())
	ev := evidenceOf(id, e, region)
	noteOverride(&ev.VerdictSummary, a.overridesInForce())
	writeJSON(w, http.StatusOK, ev)
}

// checkers serves GET /v1/checkers.
func (a *API) checkers(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r.URL.Query()); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	hs := slices.Clone(a.opts.Location.Checkers())
	quorum.SortHeard(hs)
	if hs == nil {
		hs = []quorum.HeardChecker{}
	}
	writeJSON(w, http.StatusOK, CheckerList{Location: a.opts.Node.Identity().ID, GeneratedAt: a.now(), Checkers: hs})
}

// zones serves GET /v1/served-zones.
func (a *API) zones(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r.URL.Query()); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	zs := a.opts.Location.Zones()
	if zs == nil {
		zs = []location.ZoneState{}
	}
	writeJSON(w, http.StatusOK, ZoneList{Location: a.opts.Node.Identity().ID, Zones: zs})
}

// answer serves GET /v1/answer?name=NAME&type=TYPE.
func (a *API) answer(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := checkQuery(q, "name", "type"); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	name, rtype := q.Get("name"), strings.ToUpper(q.Get("type"))
	switch {
	case name == "" || rtype == "":
		writeError(w, http.StatusBadRequest, "status: answer needs the query parameters name and type, e.g. ?name=www.example.com&type=A")
		return
	case dns.StringToType[rtype] == 0:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("status: unknown DNS type %q", q.Get("type")))
		return
	}
	if _, ok := dns.IsDomainName(name); !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("status: %q is not a domain name", name))
		return
	}
	fqdn := strings.ToLower(dns.Fqdn(name))
	res, err := a.opts.Location.Answer(fqdn, rtype)
	if err != nil {
		writeError(w, http.StatusNotFound, "status: "+err.Error())
		return
	}
	ans := answerOf(fqdn, rtype, res)
	ans.Overrides = answerOverrides(&ans, a.overridesInForce())
	writeJSON(w, http.StatusOK, ans)
}

// probes serves GET /v1/probes.
func (a *API) probes(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r.URL.Query()); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	id := a.opts.Node.Identity()
	self := a.opts.Checker.Self()
	list := ProbeList{Checker: id.ID, Region: id.Region, Self: self, Probes: []ProbeStatus{}}
	for _, p := range a.opts.Checker.Probes() {
		list.Probes = append(list.Probes, probeStatusOf(p))
	}
	slices.SortFunc(list.Probes, func(a, b ProbeStatus) int { return cmp.Compare(a.Check, b.Check) })
	writeJSON(w, http.StatusOK, list)
}

// self serves GET /v1/self.
func (a *API) self(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r.URL.Query()); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, a.opts.Checker.Self())
}

// node serves GET /v1/node.
func (a *API) node(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r.URL.Query()); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, NodeInfo{
		Identity:  a.opts.Node.Identity(),
		Config:    a.opts.Node.Config(),
		Readiness: a.opts.Node.Readiness(),
	})
}

// members serves GET /v1/members.
func (a *API) members(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r.URL.Query()); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ms := slices.Clone(a.opts.Node.Members())
	slices.SortFunc(ms, func(a, b Member) int {
		return cmp.Or(cmp.Compare(a.Region, b.Region), cmp.Compare(a.ID, b.ID))
	})
	if ms == nil {
		ms = []Member{}
	}
	writeJSON(w, http.StatusOK, MemberList{Node: a.opts.Node.Identity().ID, Members: ms})
}

// healthz serves GET /healthz: the process answers "ok" (a starting node is alive). The body
// is plain text, as node.Node's own /healthz writes it, so that either may serve the path.
func (a *API) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte("ok\n"))
}

// readyz serves GET /readyz: the readiness, 200 when ready and 503 otherwise (the shape of
// node.Node's own /readyz).
func (a *API) readyz(w http.ResponseWriter, _ *http.Request) {
	rd := a.opts.Node.Readiness()
	code := http.StatusOK
	if !rd.Ready {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, rd)
}
