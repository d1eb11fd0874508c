package verify

import (
	"time"
)

// Observation is one location's state for one record set in one round of verification.
type Observation struct {
	// Location is the location's id.
	Location string
	// Key is the key of what its verdicts say it should answer; "" when they are unknown
	// (its digest could not be read), which leaves it out of any measurement.
	Key string
	// ChangedAt is when its newest verdict among the record set's checks changed, on the
	// checker's clock; zero when unknown.
	ChangedAt time.Time
	// Agrees says every name server of it asked answered as its verdicts say.
	Agrees bool
	// Disagreed says some name server's answer was a confirmed disagreement: the location
	// still did not answer accordingly when asked.
	Disagreed bool
}

// Convergence is one measured failover: from the first verdict change of a record set at
// any location to every location answering accordingly.
type Convergence struct {
	// RecordSet is the record set, "name type".
	RecordSet string `json:"record_set"`
	// Started is the first verdict change at any location; Converged is when the last
	// location began answering accordingly, as the evidence places it: its own verdict
	// change, or the last time it was seen answering against its verdicts, whichever is later.
	Started   time.Time `json:"started"`
	Converged time.Time `json:"converged"`
	// Seconds is Converged - Started: the failover time.
	Seconds float64 `json:"seconds"`
	// SeenSeconds is the time from Started to when the verifier first saw every location
	// answering accordingly: an upper bound of Seconds, late by up to the verifier's asking
	// (and the locations' digest caches).
	SeenSeconds float64 `json:"seen_seconds"`
	// Changed counts the locations whose expected answer changed in it.
	Changed int `json:"changed"`
}

// Pending is a convergence not measured yet.
type Pending struct {
	RecordSet string    `json:"record_set"`
	Started   time.Time `json:"started"`
	// Waiting are the locations not answering accordingly yet, when last asked.
	Waiting []string `json:"waiting"`
}

// tracker follows, per record set, each location's expected answer and measures how long
// the network takes to answer a change accordingly. It is pure: time is an argument.
//
// A change opens an episode that starts at the earliest verdict change in it; once every
// location answers accordingly, the episode stays open for settle so that later locations'
// changes of the same failover join it. It closes with the time the last location began
// answering accordingly as the evidence places it (its verdict change, or its last confirmed
// disagreement), and with the time the verifier saw them all agree. It holds
// at most maxSets record sets (each with at most one key per location observed); an episode
// open longer than maxAge is dropped, and a record set not observed for forget is forgotten.
type tracker struct {
	settle, maxAge, forget time.Duration
	maxSets                int
	sets                   map[string]*setState
}

type setState struct {
	keys      map[string]string // by location
	seen      time.Time
	open      bool
	started   time.Time
	converged time.Time            // when all were first seen agreeing; zero while some do not
	changed   map[string]time.Time // each changed location's verdict change
	late      map[string]time.Time // each location's last confirmed disagreement

	waiting []string
}

func newTracker(settle, maxAge, forget time.Duration, maxSets int) *tracker {
	return &tracker{settle: settle, maxAge: maxAge, forget: forget, maxSets: maxSets, sets: map[string]*setState{}}
}

// observe takes one round's observations of record set set at now. It returns the
// convergences that closed (at most one) and whether an episode was dropped as too old.
func (t *tracker) observe(set string, obs []Observation, now time.Time) (c *Convergence, dropped bool) {
	s := t.sets[set]
	if s == nil {
		if len(t.sets) >= t.maxSets {
			return nil, false
		}
		s = &setState{keys: map[string]string{}}
		t.sets[set] = s
	}
	s.seen = now
	present := make(map[string]bool, len(obs))
	all := len(obs) > 0
	var waiting []string
	for _, o := range obs {
		present[o.Location] = true
		if o.Key == "" || !o.Agrees {
			all = false
			waiting = append(waiting, o.Location)
		}
		if o.Key == "" {
			continue
		}
		prev, known := s.keys[o.Location]
		s.keys[o.Location] = o.Key
		if !known || prev == o.Key {
			continue
		}
		at := o.ChangedAt
		if at.IsZero() || at.After(now) {
			at = now
		}
		if !s.open {
			s.open, s.started, s.changed, s.late = true, at, map[string]time.Time{}, map[string]time.Time{}
		} else if at.Before(s.started) {
			s.started = at
		}
		s.changed[o.Location] = at
		s.converged = time.Time{}
	}
	for l := range s.keys {
		if !present[l] {
			delete(s.keys, l)
		}
	}
	s.waiting = waiting
	if !s.open {
		return nil, false
	}
	for _, o := range obs {
		if o.Disagreed {
			s.late[o.Location] = now
		}
	}
	switch {
	case !all:
		s.converged = time.Time{}
	case s.converged.IsZero():
		s.converged = now
	}
	if !s.converged.IsZero() && now.Sub(s.converged) >= t.settle {
		end := s.started
		for _, m := range []map[string]time.Time{s.changed, s.late} {
			for _, at := range m {
				if at.After(end) {
					end = at
				}
			}
		}
		c = &Convergence{RecordSet: set, Started: s.started, Converged: end, Seconds: end.Sub(s.started).Seconds(),
			SeenSeconds: s.converged.Sub(s.started).Seconds(), Changed: len(s.changed)}
		s.open, s.changed, s.late = false, nil, nil
		return c, false
	}
	if now.Sub(s.started) > t.maxAge {
		s.open, s.changed, s.late, s.converged = false, nil, nil, time.Time{}
		return nil, true
	}
	return nil, false
}

// sweep forgets the record sets not observed since forget before now.
func (t *tracker) sweep(now time.Time) {
	for k, s := range t.sets {
		if now.Sub(s.seen) > t.forget {
			delete(t.sets, k)
		}
	}
}

// pending returns the open episodes that do not all answer accordingly yet, or still settle.
func (t *tracker) pending() []Pending {
	var out []Pending
	for k, s := range t.sets {
		if s.open {
			out = append(out, Pending{RecordSet: k, Started: s.started, Waiting: append([]string{}, s.waiting...)})
		}
	}
	return out
}

// isOpen reports whether record set set has an open episode.
func (t *tracker) isOpen(set string) bool {
	s := t.sets[set]
	return s != nil && s.open
}
