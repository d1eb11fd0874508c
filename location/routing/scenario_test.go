package routing

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vigil-dns/vigil/config"
)

// The scenarios below retell the stories of the source articles (DESIGN.md, seed 002) as a
// record set and a sequence of steps. Each step says which checks are down from then on and
// what every answer must be, over many random draws.

// step is one moment of a story.
type step struct {
	say        string   // what happens
	down       []string // the checks that are unhealthy now
	answer     []string // the answer, as a set, whatever the draw; or
	from       []string // each answer is pick records of these, and each is answered sometimes
	pick       int
	lastResort bool
}

// scenario is a story: a record set and what happens to it.
type scenario struct {
	story string
	rs    *config.RecordSet
	steps []step
}

// scenarios returns the stories.
func scenarios() []scenario {
	return []scenario{
		{
			story: "a health check that is wrong everywhere (a bad path, a firewall) costs nothing: " +
				"every instance fails it, and the answer holds them all",
			rs: set(config.PolicyMultivalue,
				rec("192.0.2.1", "web-1"), rec("192.0.2.2", "web-2"), rec("192.0.2.3", "web-3")),
			steps: []step{
				{say: "checks are right", answer: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}},
				{say: "the check's path is renamed: every probe gets 404",
					down:   []string{"web-1", "web-2", "web-3"},
					answer: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}, lastResort: true},
			},
		},
		{
			story: "the same wrong check on a weighted set still answers, by weight",
			rs: set(config.PolicyWeighted,
				weighted("192.0.2.1", "web-1", 50), weighted("192.0.2.2", "web-2", 50)),
			steps: []step{
				{say: "firewall blocks the checkers", down: []string{"web-1", "web-2"},
					from: []string{"192.0.2.1", "192.0.2.2"}, pick: 1, lastResort: true},
			},
		},
		{
			story: "an overload cascade does not end in an empty answer",
			rs: set(config.PolicyMultivalue,
				rec("192.0.2.1", "web-1"), rec("192.0.2.2", "web-2"), rec("192.0.2.3", "web-3")),
			steps: []step{
				{say: "all three serve", answer: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}},
				{say: "web-1 is overloaded and fails its check", down: []string{"web-1"},
					answer: []string{"192.0.2.2", "192.0.2.3"}},
				{say: "its load moves to the other two, which fail too", down: []string{"web-1", "web-2", "web-3"},
					answer: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}, lastResort: true},
				{say: "load spread over three again, web-2 recovers", down: []string{"web-1", "web-3"},
					answer: []string{"192.0.2.2"}},
			},
		},
		{
			story: "failover: primary down answers the secondary; both down answer the primary",
			rs: set(config.PolicyFailover,
				role("192.0.2.10", "sao-paulo", config.RolePrimary),
				role("198.51.100.10", "ohio", config.RoleSecondary)),
			steps: []step{
				{say: "primary healthy", answer: []string{"192.0.2.10"}},
				{say: "primary down", down: []string{"sao-paulo"}, answer: []string{"198.51.100.10"}},
				{say: "secondary down as well", down: []string{"sao-paulo", "ohio"},
					answer: []string{"192.0.2.10"}, lastResort: true},
				{say: "only the secondary down", down: []string{"ohio"}, answer: []string{"192.0.2.10"}},
			},
		},
		{
			story: "weighted with a zero-weight backup: the backup serves only when every weighted record is down",
			rs: set(config.PolicyWeighted,
				weighted("192.0.2.1", "us-east", 70),
				weighted("192.0.2.2", "eu-west", 30),
				weighted("203.0.113.99", "sorry-server", 0)),
			steps: []step{
				{say: "both regions healthy", from: []string{"192.0.2.1", "192.0.2.2"}, pick: 1},
				{say: "us-east down", down: []string{"us-east"}, answer: []string{"192.0.2.2"}},
				{say: "eu-west down too", down: []string{"us-east", "eu-west"}, answer: []string{"203.0.113.99"}},
				{say: "and the backup", down: []string{"us-east", "eu-west", "sorry-server"},
					from: []string{"192.0.2.1", "192.0.2.2"}, pick: 1, lastResort: true},
			},
		},
		{
			story: "multivalue with ten healthy records answers eight of them",
			rs: set(config.PolicyMultivalue,
				rec("10.0.0.1", "c1"), rec("10.0.0.2", "c2"), rec("10.0.0.3", "c3"), rec("10.0.0.4", "c4"),
				rec("10.0.0.5", "c5"), rec("10.0.0.6", "c6"), rec("10.0.0.7", "c7"), rec("10.0.0.8", "c8"),
				rec("10.0.0.9", "c9"), rec("10.0.0.10", "c10")),
			steps: []step{
				{say: "all ten healthy", pick: 8, from: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4",
					"10.0.0.5", "10.0.0.6", "10.0.0.7", "10.0.0.8", "10.0.0.9", "10.0.0.10"}},
				{say: "two down: exactly eight left", down: []string{"c1", "c10"},
					answer: []string{"10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.0.7",
						"10.0.0.8", "10.0.0.9"}},
				{say: "all down: eight of ten in last resort",
					down: []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9", "c10"},
					pick: 8, lastResort: true, from: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4",
						"10.0.0.5", "10.0.0.6", "10.0.0.7", "10.0.0.8", "10.0.0.9", "10.0.0.10"}},
			},
		},
		{
			story: "records without a health check are always healthy",
			rs: set(config.PolicyMultivalue,
				rec("192.0.2.1", "web-1"), rec("192.0.2.2", "web-2"), rec("192.0.2.50", "")),
			steps: []step{
				{say: "every checked record down: the unchecked one alone, no last resort",
					down: []string{"web-1", "web-2"}, answer: []string{"192.0.2.50"}},
			},
		},
		{
			story: "an unchecked weighted record keeps its share when the checked ones fail",
			rs: set(config.PolicyWeighted,
				weighted("192.0.2.1", "web-1", 10), weighted("192.0.2.50", "", 1)),
			steps: []step{
				{say: "web-1 down", down: []string{"web-1"}, answer: []string{"192.0.2.50"}},
			},
		},
		{
			story: "an unchecked failover primary never fails over",
			rs: set(config.PolicyFailover,
				role("192.0.2.1", "", config.RolePrimary), role("198.51.100.1", "backup", config.RoleSecondary)),
			steps: []step{
				{say: "backup down", down: []string{"backup"}, answer: []string{"192.0.2.1"}},
			},
		},
	}
}

func TestScenarios(t *testing.T) {
	for _, sc := range scenarios() {
		t.Run(sc.story, func(t *testing.T) {
			for n, st := range sc.steps {
				if err := runStep(sc.rs, st); err != nil {
					t.Errorf("step %d (%s): %v", n+1, st.say, err)
				}
			}
		})
	}
}

// runStep checks one step over 256 draws, with the hot path and the explained form.
func runStep(rs *config.RecordSet, st step) error {
	health := down(st.down...)
	seen := map[string]bool{}
	buf := make([]int, 0, len(rs.Records))
	for d := range uint64(256) {
		rnd := d * 0xd1b54a32d192ed03
		idx, rule, err := Select(rs, health, rnd, buf)
		if err != nil {
			return err
		}
		got := values(rs, idx)
		if rule.LastResort() != st.lastResort {
			return fmt.Errorf("answer %v by rule %v, want last resort %v", got, rule, st.lastResort)
		}
		res, err := Explain(rs, health, rnd)
		if err != nil {
			return err
		}
		if !slices.Equal(res.Values(), got) || res.LastResort != st.lastResort {
			return fmt.Errorf("explained %s, selected %v", res, got)
		}
		if st.answer != nil {
			if !slices.Equal(sorted(got), sorted(st.answer)) {
				return fmt.Errorf("answer %v, want %v", got, st.answer)
			}
			continue
		}
		if len(got) != st.pick {
			return fmt.Errorf("answer %v has %d records, want %d", got, len(got), st.pick)
		}
		for _, v := range got {
			if !slices.Contains(st.from, v) {
				return fmt.Errorf("answer %v holds %s, not one of %v", got, v, st.from)
			}
			seen[v] = true
		}
	}
	for _, v := range st.from {
		if !seen[v] {
			return fmt.Errorf("%s never answered in 256 draws (answered: %s)", v, strings.Join(sorted(keys(seen)), " "))
		}
	}
	return nil
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
