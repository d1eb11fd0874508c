package status

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/location/routing"
)

// The DNS view (GET /v1/answers): what this location answers now for each record set that
// consults a health check, with the rule applied and whether last resort is in force. Each
// answer is the one GET /v1/answer gives for the set; this lists them without the operator
// naming each.

// HealthSetsView is what a LocationView may also offer for the DNS view: the record sets whose
// answers a check can change (location.Snapshot.HealthSetsOf on the snapshot served). A
// location without it serves no DNS view (404).
type HealthSetsView interface {
	HealthSetsOf(checkID string) []location.SetName
}

// Bounds of the DNS view: every set listed costs a routing decision.
const (
	defaultAnswers = 200
	maxAnswers     = 1000
)

// answers serves GET /v1/answers[?q=NAME-PART][&limit=N].
func (a *API) answers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := checkQuery(q, "q", "limit"); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	hv, ok := a.opts.Location.(HealthSetsView)
	if !ok {
		writeError(w, http.StatusNotFound, "status: this location lists no record sets; ask one set with /v1/answer?name=NAME&type=TYPE")
		return
	}
	limit := defaultAnswers
	if s := q.Get("limit"); s != "" {
		l, err := strconv.Atoi(s)
		if err != nil || l < 1 || l > maxAnswers {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("status: query limit: want 1 to %d, not %q", maxAnswers, s))
			return
		}
		limit = l
	}
	search := strings.ToLower(q.Get("q"))
	if len(search) > 256 {
		writeError(w, http.StatusBadRequest, "status: query q too long")
		return
	}
	seen := map[location.SetName]bool{}
	var sets []location.SetName
	for _, cv := range a.opts.Location.Verdicts() {
		for _, s := range hv.HealthSetsOf(cv.ID) {
			if !seen[s] {
				seen[s] = true
				sets = append(sets, s)
			}
		}
	}
	slices.SortFunc(sets, func(x, y location.SetName) int {
		return cmp.Or(cmp.Compare(x.Name, y.Name), cmp.Compare(x.Type, y.Type))
	})
	notes := a.overridesInForce()
	list := AnswerList{Location: a.opts.Node.Identity().ID, GeneratedAt: a.now(), Sets: len(sets), Answers: []AnswerSet{}}
	for _, s := range sets {
		if search != "" && !strings.Contains(s.Name, search) {
			continue
		}
		list.Matching++
		if len(list.Answers) == limit {
			continue
		}
		res, err := a.opts.Location.Answer(s.Name, s.Type)
		if err != nil {
			list.Answers = append(list.Answers, AnswerSet{Answer: Answer{Name: s.Name, Type: s.Type, Values: []string{}, Candidates: []routing.Candidate{}},
				Error: strings.TrimPrefix(err.Error(), "location: ")})
			continue
		}
		ans := answerOf(s.Name, s.Type, res)
		ans.Overrides = answerOverrides(&ans, notes)
		if ans.LastResort {
			list.LastResort++
		}
		list.Answers = append(list.Answers, AnswerSet{Answer: ans})
	}
	writeJSON(w, http.StatusOK, list)
}
