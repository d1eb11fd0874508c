package status

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// GET /v1/network: the merged view, searched, filtered and paged.

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
		Checks: len(m.rows), Disagreements: m.disagree, Unknown: m.unknown, Rows: []NetworkRow{}}
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
