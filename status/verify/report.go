package verify

import (
	"cmp"
	"encoding/json"
	"net/http"
	"slices"
	"time"
)

// Report is what a verifier found, as GET /v1/verification serves it.
type Report struct {
	// GeneratedAt is when the report was made.
	GeneratedAt time.Time `json:"generated_at"`
	// Interval is the time between two record sets asked.
	Interval string `json:"interval"`
	// Answers counts the answers judged; Disagreed those that disagreed with their
	// location's verdicts; DisagreementShare is Disagreed / Answers (0 without answers).
	Answers           int64   `json:"answers"`
	Disagreed         int64   `json:"disagreed"`
	DisagreementShare float64 `json:"disagreement_share"`
	// Locations are the locations asked, by id, each with its outcomes and its last ask.
	Locations []LocationReport `json:"locations"`
	// Unanswering are the locations whose last ask got no answer from some name server.
	Unanswering []string `json:"unanswering"`
	// Convergences are the recent measured failovers, newest first (at most 32).
	Convergences []Convergence `json:"convergences"`
	// Pending are the verdict changes not answered accordingly everywhere yet.
	Pending []Pending `json:"pending"`
	// Dropped counts the verdict changes not answered accordingly within the bound.
	Dropped int `json:"dropped"`
}

// LocationReport is one location as the verifier last found it.
type LocationReport struct {
	// ID is the location's id.
	ID string `json:"id"`
	// Outcomes counts the answers by outcome since the verifier started.
	Outcomes map[string]int64 `json:"outcomes"`
	// RecordSet is the record set last asked; At when; Outcome the worst of its name
	// servers' (agree when all agreed), with the Server and Reason of the first that did not.
	RecordSet string    `json:"record_set"`
	At        time.Time `json:"at"`
	Outcome   string    `json:"outcome"`
	Server    string    `json:"server,omitempty"`
	Reason    string    `json:"reason,omitempty"`
}

// Report returns what the verifier found.
func (v *Verifier) Report() Report {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := Report{GeneratedAt: v.opts.Now(), Interval: v.opts.Interval.String(), Answers: v.answers, Disagreed: v.disagree,
		Locations: []LocationReport{}, Unanswering: []string{}, Convergences: []Convergence{}, Pending: v.tr.pending(), Dropped: v.dropped}
	if r.Answers > 0 {
		r.DisagreementShare = float64(r.Disagreed) / float64(r.Answers)
	}
	for id, st := range v.locs {
		l := st.last
		l.ID = id
		l.Outcomes = make(map[string]int64, len(st.outcomes))
		for k, n := range st.outcomes {
			l.Outcomes[k] = n
		}
		r.Locations = append(r.Locations, l)
		if l.Outcome == OutcomeNoAnswer {
			r.Unanswering = append(r.Unanswering, id)
		}
	}
	slices.SortFunc(r.Locations, func(a, b LocationReport) int { return cmp.Compare(a.ID, b.ID) })
	slices.Sort(r.Unanswering)
	for i := len(v.recent) - 1; i >= 0; i-- {
		r.Convergences = append(r.Convergences, v.recent[i])
	}
	if r.Pending == nil {
		r.Pending = []Pending{}
	}
	slices.SortFunc(r.Pending, func(a, b Pending) int { return cmp.Compare(a.RecordSet, b.RecordSet) })
	return r
}

// ServeHTTP serves GET /v1/verification: the Report as JSON.
func (v *Verifier) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		w.WriteHeader(http.StatusMethodNotAllowed)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": "verify: only GET"})
		return
	}
	_ = json.NewEncoder(w).Encode(v.Report())
}
