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
}

// Convergence is one measured failover: from the first verdict change of a record set at
// any location to every location answering accordingly.
type Convergence struct {
	// RecordSet is the record set, "name type".
	RecordSet string `json:"record_set"`
	// Started is the first verdict change; Converged when every location was seen
	// answering accordingly (at most one round of asking later than it did).
	Started   time.Time `json:"started"`
	Converged time.Time `json:"converged"`
	// Seconds is Converged - Started.
	Seconds float64 `json:"seconds"`
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
// changes of the same failover join it, and closes with the time all last agreed. It holds
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
	converged time.Time // zero while some location does not answer accordingly
	changed   map[string]bool
	waiting   []string
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
			s.open, s.started, s.changed = true, at, map[string]bool{}
		} else if at.Before(s.started) {
			s.started = at
		}
		s.changed[o.Location] = true
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
	switch {
	case !all:
		s.converged = time.Time{}
	case s.converged.IsZero():
		s.converged = now
	}
	if !s.converged.IsZero() && now.Sub(s.converged) >= t.settle {
		c = &Convergence{RecordSet: set, Started: s.started, Converged: s.converged,
			Seconds: s.converged.Sub(s.started).Seconds(), Changed: len(s.changed)}
		s.open, s.changed = false, nil
		return c, false
	}
	if now.Sub(s.started) > t.maxAge {
		s.open, s.changed, s.converged = false, nil, time.Time{}
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
