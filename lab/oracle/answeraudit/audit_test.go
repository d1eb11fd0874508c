package answeraudit

import (
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/quorum"
)

// testDoc is a zone with one record set per policy over checks a, b and c.
func testDoc() *config.Document {
	w := func(n int) *int { return &n }
	return &config.Document{Zones: []config.Zone{{
		Name: "example.test",
		RecordSets: []config.RecordSet{
			{Name: "www", Type: "A", Policy: config.PolicyFailover, Records: []config.Record{
				{Value: "10.0.0.1", HealthCheck: "a", Role: config.RolePrimary},
				{Value: "10.0.0.2", HealthCheck: "b", Role: config.RoleSecondary},
			}},
			{Name: "all.example.test.", Type: "A", Policy: config.PolicyMultivalue, Records: []config.Record{
				{Value: "10.0.0.1", HealthCheck: "a"},
				{Value: "10.0.0.2", HealthCheck: "b"},
				{Value: "10.0.0.3", HealthCheck: "c"},
			}},
			{Name: "api.example.test", Type: "A", Policy: config.PolicyWeighted, Records: []config.Record{
				{Value: "10.0.0.1", HealthCheck: "a", Weight: w(50)},
				{Value: "10.0.0.2", HealthCheck: "b", Weight: w(50)},
			}},
			{Name: "@", Type: "A", Records: []config.Record{{Value: "10.0.0.9"}}},
			{Name: "@", Type: "TXT", Records: []config.Record{{Value: "not asked"}}},
		},
	}}}
}

// t0 is the start of every hand-built history.
var t0 = time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)

// at returns t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// ch is a verdict change of check at location L1, seen between after and at milliseconds.
func ch(check string, s quorum.State, after, seen int) Change {
	return Change{Location: "L1", Check: check, State: s, Serving: s != quorum.StateUnhealthy, After: at(after), At: at(seen)}
}

// ans is an answer of L1 for name, in flight from sent to sent+1 ms.
func ans(name string, sent int, values ...string) Answer {
	return Answer{Location: "L1", Name: name, Sent: at(sent), Received: at(sent + 1), Rcode: dns.RcodeSuccess, Values: values}
}

const (
	healthy   = quorum.StateHealthy
	unhealthy = quorum.StateUnhealthy
	unknown   = quorum.StateUnknown
)

// allHealthy is the first sample at 0-1 ms: every check healthy at L1.
func allHealthy() []Change {
	return []Change{ch("a", healthy, 0, 1), ch("b", healthy, 0, 1), ch("c", healthy, 0, 1)}
}

func TestAudit(t *testing.T) {
	www, all, api, apex := "www.example.test.", "all.example.test.", "api.example.test.", "example.test."
	tests := []struct {
		name       string
		changes    []Change
		answers    []Answer
		slack      time.Duration
		violations int
		lastResort int
		unanswered int
		reason     string // in the first violation
	}{
		{name: "primary while healthy", changes: allHealthy(), answers: []Answer{ans(www, 10, "10.0.0.1")}},
		{name: "secondary while the primary is healthy", changes: allHealthy(),
			answers: []Answer{ans(www, 10, "10.0.0.2")}, violations: 1, reason: "no verdict in force"},
		{name: "both answers allowed while a change is in flight",
			changes: append(allHealthy(), ch("a", unhealthy, 100, 150)),
			answers: []Answer{ans(www, 120, "10.0.0.1"), ans(www, 120, "10.0.0.2"), ans(www, 200, "10.0.0.2")}},
		{name: "the secondary before the change could have happened",
			changes: append(allHealthy(), ch("a", unhealthy, 100, 150)),
			answers: []Answer{ans(www, 50, "10.0.0.2")}, violations: 1},
		{name: "the old primary after the change was seen",
			changes: append(allHealthy(), ch("a", unhealthy, 100, 150)),
			answers: []Answer{ans(www, 151, "10.0.0.1")}, violations: 1},
		{name: "slack covers an answer just before the change",
			changes: append(allHealthy(), ch("a", unhealthy, 100, 150)),
			answers: []Answer{ans(www, 95, "10.0.0.2")}, slack: 10 * time.Millisecond},
		{name: "failover last resort answers the primary",
			changes: append(allHealthy(), ch("a", unhealthy, 10, 20), ch("b", unhealthy, 10, 20)),
			answers: []Answer{ans(www, 30, "10.0.0.1")}, lastResort: 1},
		{name: "failover last resort never answers the secondary",
			changes: append(allHealthy(), ch("a", unhealthy, 10, 20), ch("b", unhealthy, 10, 20)),
			answers: []Answer{ans(www, 30, "10.0.0.2")}, violations: 1},
		{name: "multivalue answers every healthy record", changes: allHealthy(),
			answers: []Answer{ans(all, 10, "10.0.0.1", "10.0.0.2", "10.0.0.3")}},
		{name: "multivalue without an unhealthy record",
			changes:    append(allHealthy(), ch("b", unhealthy, 10, 20)),
			answers:    []Answer{ans(all, 30, "10.0.0.1", "10.0.0.3"), ans(all, 31, "10.0.0.1", "10.0.0.2", "10.0.0.3")},
			violations: 1},
		{name: "multivalue last resort when nothing is healthy",
			changes: append(allHealthy(), ch("a", unhealthy, 10, 20), ch("b", unhealthy, 10, 20), ch("c", unhealthy, 10, 20)),
			answers: []Answer{ans(all, 30, "10.0.0.1", "10.0.0.2", "10.0.0.3")}, lastResort: 1},
		{name: "an empty answer is never allowed",
			changes: append(allHealthy(), ch("a", unhealthy, 10, 20), ch("b", unhealthy, 10, 20), ch("c", unhealthy, 10, 20)),
			answers: []Answer{ans(all, 30)}, violations: 1},
		{name: "a duplicated record is not an answer", changes: allHealthy(),
			answers: []Answer{ans(all, 10, "10.0.0.1", "10.0.0.1", "10.0.0.2")}, violations: 1},
		{name: "an unknown verdict is served (fail open)",
			changes: append(allHealthy(), ch("b", unknown, 10, 20), ch("a", unhealthy, 10, 20), ch("c", unhealthy, 10, 20)),
			answers: []Answer{ans(all, 30, "10.0.0.2")}},
		{name: "weighted picks one healthy record",
			changes:    append(allHealthy(), ch("a", unhealthy, 10, 20)),
			answers:    []Answer{ans(api, 30, "10.0.0.2"), ans(api, 31, "10.0.0.1"), ans(api, 32, "10.0.0.1", "10.0.0.2")},
			violations: 2},
		{name: "simple answers every record", changes: allHealthy(),
			answers: []Answer{ans(apex, 10, "10.0.0.9"), ans(apex, 11)}, violations: 1},
		{name: "an error code is a violation", changes: allHealthy(),
			answers:    []Answer{{Location: "L1", Name: www, Sent: at(10), Received: at(11), Rcode: dns.RcodeNameError}},
			violations: 1, reason: "must be answered, got NXDOMAIN"},
		{name: "a name the auditor does not know", changes: allHealthy(),
			answers: []Answer{ans("nope.example.test.", 10, "10.0.0.1")}, violations: 1, reason: "no A record set"},
		{name: "an unanswered query is counted, not judged", changes: allHealthy(),
			answers: []Answer{{Location: "L1", Name: www, Sent: at(10), Received: at(1010), Err: "i/o timeout"}}, unanswered: 1},
		{name: "another location's verdicts do not count",
			changes: append(allHealthy(), Change{Location: "L2", Check: "a", State: unhealthy, After: at(10), At: at(20)}),
			answers: []Answer{ans(www, 30, "10.0.0.2")}, violations: 1},
		{name: "before any verdict every check is served",
			answers: []Answer{ans(www, 10, "10.0.0.1"), ans(all, 11, "10.0.0.1", "10.0.0.2", "10.0.0.3")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(testDoc(), tt.slack)
			got := c.Audit(History{Answers: tt.answers, Changes: tt.changes})
			if len(got.Violations) != tt.violations {
				t.Fatalf("%d violations, want %d: %v", len(got.Violations), tt.violations, got.Violations)
			}
			if got.LastResort != tt.lastResort {
				t.Errorf("%d last-resort answers, want %d", got.LastResort, tt.lastResort)
			}
			if got.Unanswered != tt.unanswered || got.Answers != len(tt.answers)-tt.unanswered {
				t.Errorf("%d answered, %d unanswered; want %d, %d", got.Answers, got.Unanswered, len(tt.answers)-tt.unanswered, tt.unanswered)
			}
			if tt.reason != "" && !strings.Contains(got.Violations[0].String(), tt.reason) {
				t.Errorf("violation %q does not say %q", got.Violations[0], tt.reason)
			}
		})
	}
}

// TestViolationEvidence checks that a violation names the verdicts that were in force.
func TestViolationEvidence(t *testing.T) {
	c := New(testDoc(), 0)
	got := c.Audit(History{Changes: allHealthy(), Answers: []Answer{ans("www.example.test.", 10, "10.0.0.2")}})
	if len(got.Violations) != 1 {
		t.Fatalf("violations: %v", got.Violations)
	}
	s := got.Violations[0].String()
	for _, want := range []string{"www.example.test.", "@L1", "a: healthy since", "b: healthy since", "10.0.0.2"} {
		if !strings.Contains(s, want) {
			t.Errorf("violation %q does not say %q", s, want)
		}
	}
}

func TestNewNames(t *testing.T) {
	c := New(testDoc(), 0)
	for _, name := range []string{"www.example.test.", "all.example.test.", "api.example.test.", "example.test."} {
		if c.Sets[name] == nil {
			t.Errorf("no record set for %s", name)
		}
	}
	if len(c.Sets) != 4 {
		t.Errorf("%d record sets, want the 4 of type A", len(c.Sets))
	}
}

// TestStarvedExcused: an answer that drops a record whose verdict the samples show healthy is
// a violation, unless the check is starved (Auditor.Starved): then it is excused and counted
// apart. What a starved check does not explain (an address of no record) stays a violation.
func TestStarvedExcused(t *testing.T) {
	all := "all.example.test."
	h := History{Changes: allHealthy(), Answers: []Answer{
		ans(all, 10, "10.0.0.1", "10.0.0.3"),
		ans(all, 11, "10.0.0.1", "10.0.0.7"),
	}}
	c := New(testDoc(), 0)
	if f := c.Audit(h); len(f.Violations) != 2 || len(f.Excused) != 0 {
		t.Fatalf("without a starved check: %d violations, %d excused; want 2 and 0", len(f.Violations), len(f.Excused))
	}
	c.Starved = func(_, check string, _, _ time.Time) bool { return check == "b" }
	f := c.Audit(h)
	if len(f.Violations) != 1 || len(f.Excused) != 1 || !strings.Contains(f.Excused[0].String(), "starved") {
		t.Errorf("with b starved: violations %v, excused %v; want the unknown address a violation, the drop of b excused", f.Violations, f.Excused)
	}
}
