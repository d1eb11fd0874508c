package status

import (
	"net"
	"strconv"

	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/location/routing"
	"github.com/vigil-dns/vigil/quorum"
)

// summaryOf turns a quorum explanation (with or without evidence) into a summary.
func summaryOf(id string, calculated bool, e quorum.Explanation) VerdictSummary {
	return VerdictSummary{
		ID:               id,
		State:            e.State,
		ServedState:      e.State,
		ServedAsHealthy:  e.ServedAsHealthy,
		Held:             e.Held,
		Calculated:       calculated,
		Rule:             e.Rule,
		Explanation:      e.Sentence,
		EvaluatedAt:      e.At,
		Since:            e.Since,
		HeldSince:        e.HeldSince,
		Counts:           e.Counts,
		HealthyThreshold: e.HealthyThreshold,
		MinReporters:     e.MinReporters,
		MinHealthy:       e.MinHealthy,
	}
}

// evidenceOf turns a check's full explanation into its evidence. region names the regions of
// checkers that the explanation lists without one (those never heard from).
func evidenceOf(id string, e quorum.Explanation, region func(checker string) string) CheckEvidence {
	calculated := e.Rule == quorum.RuleCombined || len(e.Children) > 0
	out := CheckEvidence{
		VerdictSummary:  summaryOf(id, calculated, e),
		FreshnessWindow: e.FreshnessWindow,
		Hold:            e.Hold,
		Inverted:        e.Inverted,
		Disabled:        e.Disabled,
		Votes:           e.Votes,
		NeverHeard:      make([]Absent, 0, len(e.NeverHeard)),
		Children:        e.Children,
	}
	if out.Votes == nil {
		out.Votes = []quorum.Vote{} // the API writes "votes": [] for a check without reports
	}
	for _, c := range e.NeverHeard {
		out.NeverHeard = append(out.NeverHeard, Absent{
			Checker: c,
			Region:  region(c),
			Why:     "not counted: expected by the assignment, but this location holds no report from it",
		})
	}
	if !calculated {
		out.Regions = regionCells(out.Votes, out.NeverHeard)
	}
	return out
}

// regionCells counts a check's votes and absent checkers by region and decides each region's
// cell. Checkers of no known region are left out of the matrix (they still count in the
// verdict).
func regionCells(votes []quorum.Vote, absent []Absent) map[string]RegionCell {
	cells := map[string]RegionCell{}
	for _, v := range votes {
		if v.Region == "" {
			continue
		}
		c := cells[v.Region]
		switch v.Status {
		case quorum.VoteHealthy:
			c.Healthy++
		case quorum.VoteUnhealthy:
			c.Unhealthy++
		default:
			c.Stale++
		}
		cells[v.Region] = c
	}
	for _, a := range absent {
		if a.Region == "" {
			continue
		}
		c := cells[a.Region]
		c.NeverHeard++
		cells[a.Region] = c
	}
	for r, c := range cells {
		c.State = cellState(c)
		cells[r] = c
	}
	return cells
}

// cellState decides a region's cell from its counts: healthy when more than half of the fresh
// reports say healthy, unhealthy when there are fresh reports but no more than half say so,
// stale when there are only stale ones, unknown when nothing is heard at all.
func cellState(c RegionCell) string {
	fresh := c.Healthy + c.Unhealthy
	switch {
	case fresh > 0 && 2*c.Healthy > fresh:
		return CellHealthy
	case fresh > 0:
		return CellUnhealthy
	case c.Stale > 0:
		return CellStale
	}
	return CellUnknown
}

// answerOf turns a routing result into an Answer for name and type.
func answerOf(name, rtype string, r routing.Result) Answer {
	a := Answer{
		Name:       name,
		Type:       rtype,
		Policy:     string(r.Policy),
		Rule:       r.Rule.String(),
		LastResort: r.LastResort,
		Values:     r.Values(),
		Candidates: r.Candidates,
		Region:     r.Region,

		RegionReason: r.RegionReason,
	}
	if a.Candidates == nil {
		a.Candidates = []routing.Candidate{} // the API writes "candidates": [] for a set without records
	}
	return a
}

// probeStatusOf turns an assigned check with its report and latest result into a ProbeStatus.
func probeStatusOf(p Probe) ProbeStatus {
	ps := ProbeStatus{
		Check:    p.Check.ID,
		Protocol: string(p.Check.Protocol),
		Interval: p.Check.Interval,
		Status:   checker.StatusUnknown.String(),
	}
	if p.Check.Target.Host != "" {
		ps.Target = net.JoinHostPort(p.Check.Target.Host, strconv.Itoa(p.Check.Target.Port))
	}
	if r := p.Report; r != nil && !r.Withdrawn {
		ps.Status = r.Status.String()
		ps.Consecutive = r.Consecutive
		ps.Sequence = r.Seq
	}
	if l := p.Last; l != nil {
		pr := &ProbeResult{
			Healthy:    l.Healthy,
			Reason:     string(l.Reason),
			Message:    l.Message,
			At:         l.Start,
			Lag:        config.Duration(l.Lag),
			StatusCode: l.StatusCode,
			Redirects:  l.Redirects,
			Protocol:   l.Protocol,
			Timings: Timings{
				DNS:       config.Duration(l.Timings.DNS),
				Connect:   config.Duration(l.Timings.Connect),
				TLS:       config.Duration(l.Timings.TLS),
				FirstByte: config.Duration(l.Timings.FirstByte),
				Total:     config.Duration(l.Timings.Total),
			},
			CertNotAfter: l.CertNotAfter,
		}
		if l.Address.IsValid() {
			pr.Address = l.Address.String()
		}
		ps.Last = pr
	}
	return ps
}
