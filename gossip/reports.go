package gossip

import (
	"slices"
	"strings"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/quorum"
)

// The table's reads, in quorum's vocabulary: a held cell becomes a quorum.Report (the entry,
// its sequence, its checker's region and progress), the report a location counts. A cell
// without a status (checker.StatusUnknown: its checker has not decided yet) counts for
// nothing, as if absent, so the reads leave it out; the verdict engine, fed by the change
// feed, holds it without counting it.

// Reports returns every report this node holds with a status, by check id, each check's
// sorted by checker.
func (n *Pool) Reports() map[string][]quorum.Report {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := n.table.Reports()
	for _, rs := range out {
		n.regions(rs)
	}
	return out
}

// ReportsFor returns the reports of one check that have a status, sorted by checker: what a
// location counts for the check (quorum.Evaluate), with the reason, latency and sequence that
// explain each.
func (n *Pool) ReportsFor(check string) []quorum.Report {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.regions(n.table.ReportsFor(check))
}

// regions fills in the regions the table has not learnt. Called with n.mu held.
func (n *Pool) regions(rs []quorum.Report) []quorum.Report {
	for i := range rs {
		if rs[i].Region == "" {
			rs[i].Region = n.members[rs[i].Checker].Region
		}
	}
	return rs
}

// Reports returns every report the table holds with a status, by check id, each check's
// sorted by checker.
func (t *Table) Reports() map[string][]quorum.Report {
	out := map[string][]quorum.Report{}
	for _, r := range t.rows {
		t.eachCell(r, func(check string, seq uint64, e Entry) {
			if q, ok := r.report(seq, e); ok {
				out[check] = append(out[check], q)
			}
		})
	}
	for _, rs := range out {
		sortByChecker(rs)
	}
	return out
}

// ReportsFor returns the reports of one check that have a status, sorted by checker.
func (t *Table) ReportsFor(check string) []quorum.Report {
	i, ok := t.checks.lookup(check)
	if !ok {
		return nil
	}
	var out []quorum.Report
	for _, r := range t.rows {
		if c, ok := r.cells.get(i); ok {
			if q, ok := r.report(c.seq, t.entry(c)); ok {
				out = append(out, q)
			}
		}
	}
	sortByChecker(out)
	return out
}

// report is row r's entry e, at sequence seq, as quorum counts it; false for an entry without
// a status.
func (r *row) report(seq uint64, e Entry) (quorum.Report, bool) {
	if e.Status == checker.StatusUnknown {
		return quorum.Report{}, false
	}
	return quorum.Report{Checker: r.checker, Region: r.region, Healthy: e.Status == checker.StatusHealthy,
		Reason: e.Reason, Latency: e.Latency, Sequence: seq, LastProgress: r.progress}, true
}

func sortByChecker(rs []quorum.Report) {
	slices.SortFunc(rs, func(a, b quorum.Report) int { return strings.Compare(a.Checker, b.Checker) })
}
