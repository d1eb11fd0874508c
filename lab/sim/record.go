package sim

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/lab/oracle/answeraudit"
	"github.com/vigil-dns/vigil/quorum"
)

// maxAnswersPerLocation bounds the answers recorded per location; queries stop beyond it.
const maxAnswersPerLocation = 200_000

// verdictSource gives a location's current verdicts, by check.
type verdictSource func(location string) map[string]verdictView

// sampler records the verdict changes of every location by sampling their verdicts.
type sampler struct {
	source    verdictSource
	locations []string

	mu      sync.Mutex
	changes []answeraudit.Change
	last    map[string]map[string]quorum.State // by location, by check
	prev    map[string]time.Time               // start of the last sample, by location
	// onChange, when set, hears every change as it is recorded (under the sampler's lock).
	onChange func(answeraudit.Change)
	// counted holds, once armed, the extremes of what every verdict counted.
	counted map[string]map[string]Counted
}

// Counted is the extremes of what a location's verdict of one check counted while the script
// ran: the fewest and the most fresh reports, and the most unhealthy ones.
type Counted struct {
	MinFresh, MaxFresh, MaxUnhealthy int
	// UnhealthyFrom are the checkers whose unhealthy reports were counted at some sample,
	// sorted (nodes network only; see verdictView).
	UnhealthyFrom []string
}

// widen adds the checkers of from to c.UnhealthyFrom.
func (c *Counted) widen(from []string) {
	for _, id := range from {
		if i, found := slices.BinarySearch(c.UnhealthyFrom, id); !found {
			c.UnhealthyFrom = slices.Insert(c.UnhealthyFrom, i, id)
		}
	}
}

// arm starts keeping the extremes of the counts.
func (s *sampler) arm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counted = map[string]map[string]Counted{}
}

// extremes returns the extremes kept since arm.
func (s *sampler) extremes() map[string]map[string]Counted {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counted
}

func newSampler(source verdictSource, locations []string) *sampler {
	return &sampler{source: source, locations: locations, last: map[string]map[string]quorum.State{}, prev: map[string]time.Time{}}
}

// sample reads every location's verdicts once and records what changed.
func (s *sampler) sample() {
	for _, l := range s.locations {
		start := time.Now()
		vs := s.source(l)
		end := time.Now()
		s.mu.Lock()
		last := s.last[l]
		if last == nil {
			last = map[string]quorum.State{}
			s.last[l] = last
		}
		after, ok := s.prev[l]
		if !ok {
			after = start
		}
		ids := make([]string, 0, len(vs))
		for id := range vs {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		for _, id := range ids {
			v := vs[id]
			if s.counted != nil {
				m := s.counted[l]
				if m == nil {
					m = map[string]Counted{}
					s.counted[l] = m
				}
				c, seen := m[id]
				if !seen || v.Fresh < c.MinFresh {
					c.MinFresh = v.Fresh
				}
				c.MaxFresh = max(c.MaxFresh, v.Fresh)
				c.MaxUnhealthy = max(c.MaxUnhealthy, v.Unhealthy)
				c.widen(v.UnhealthyFrom)
				m[id] = c
			}
			if old, seen := last[id]; seen && old == v.State {
				continue
			}
			last[id] = v.State
			s.changes = append(s.changes, answeraudit.Change{
				Location: l, Check: id, State: v.State, Serving: v.Serving,
				After: after, At: end, Reason: v.Sentence, Undecided: v.Undecided,
			})
			if s.onChange != nil {
				s.onChange(s.changes[len(s.changes)-1])
			}
		}
		for _, id := range sortedKeys(last) {
			if _, ok := vs[id]; ok || last[id] == noVerdictState {
				continue
			}
			last[id] = noVerdictState
			s.changes = append(s.changes, answeraudit.Change{
				Location: l, Check: id, State: quorum.StateUnknown, Serving: true,
				After: after, At: end, Reason: noVerdict, Undecided: true,
			})
			if s.onChange != nil {
				s.onChange(s.changes[len(s.changes)-1])
			}
		}
		s.prev[l] = start
		s.mu.Unlock()
	}
}

// run samples every interval until ctx ends.
func (s *sampler) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		s.sample()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// states returns the last verdict states seen at every location.
func (s *sampler) states() map[string]map[string]quorum.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]map[string]quorum.State, len(s.last))
	for l, m := range s.last {
		c := make(map[string]quorum.State, len(m))
		for k, v := range m {
			if v != noVerdictState {
				c[k] = v
			}
		}
		out[l] = c
	}
	return out
}

// history returns a copy of the changes recorded so far.
func (s *sampler) history() []answeraudit.Change {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.changes)
}

// noVerdictState marks, in the sampler's last states, a check the location has no verdict of.
const noVerdictState = quorum.State(255)

// noVerdict is the reason of a change to no verdict: the location lost the verdict (it
// restarted, or has no configuration); until it decides again it serves the check (fail open).
const noVerdict = "no verdict: the location serves the check as healthy until it decides (fail open)"

// querier asks one location for names in turn at a steady rate and records the answers.
type querier struct {
	location, addr string
	names          []string
	client         *dns.Client

	mu      sync.Mutex
	answers []answeraudit.Answer
	dropped int // queries not made because the history was full
}

// run queries every interval until ctx ends; one query is in flight at a time.
func (q *querier) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		q.mu.Lock()
		full := len(q.answers) >= maxAnswersPerLocation
		if full {
			q.dropped++
		}
		q.mu.Unlock()
		if !full {
			a := q.ask(ctx, q.names[i%len(q.names)])
			if a.Err != "" && ctx.Err() != nil {
				return // cut short by the end of the run, not unanswered
			}
			q.mu.Lock()
			q.answers = append(q.answers, a)
			q.mu.Unlock()
		}
	}
}

// ask sends one A query over UDP and records what came back.
func (q *querier) ask(ctx context.Context, name string) answeraudit.Answer {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	a := answeraudit.Answer{Location: q.location, Name: name, Sent: time.Now()}
	r, _, err := q.client.ExchangeContext(ctx, m, q.addr)
	a.Received = time.Now()
	if err != nil {
		a.Err = err.Error()
		return a
	}
	if !r.Response {
		// The query itself came back: with the location down and its port free, the
		// client's socket can get that very port and be connected to itself.
		a.Err = "no response: the query came back as it was sent"
		return a
	}
	a.Rcode = r.Rcode
	for _, rr := range r.Answer {
		if x, ok := rr.(*dns.A); ok && strings.EqualFold(x.Hdr.Name, name) {
			a.Values = append(a.Values, x.A.String())
		}
	}
	slices.Sort(a.Values)
	return a
}

// recorded returns the answers and the count of queries dropped.
func (q *querier) recorded() ([]answeraudit.Answer, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.answers), q.dropped
}
