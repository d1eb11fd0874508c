package status

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/vigil-dns/vigil/location/history"
)

// HistoryView is what the status API reads of a location's history (node.Node implements it
// for MountStatus). Every method is cheap: it reads memory.
type HistoryView interface {
	// CheckHistory returns check id's latest verdict changes and availability at now.
	CheckHistory(id string, now time.Time) (history.CheckHistory, bool)
	// HistorySummaries returns a page of every check's state and availability at now, sorted
	// by id after the cursor after; next is the following page's cursor.
	HistorySummaries(after string, limit int, now time.Time) (page []history.CheckHistory, next string)
	// AnswerHistory returns the latest answer changes of the record sets of name (all when
	// empty), newest first.
	AnswerHistory(name string) []history.AnswerChange
}

// HistoryList is GET /v1/history: every check's state and availability at a location, a page
// at a time.
type HistoryList struct {
	// Location is the answering node; GeneratedAt when it answered.
	Location    string    `json:"location"`
	GeneratedAt time.Time `json:"generated_at"`
	// Checks are the page, sorted by id, without their changes.
	Checks []history.CheckHistory `json:"checks"`
	// Next is the cursor of the next page; empty on the last.
	Next string `json:"next,omitempty"`
}

// CheckHistory is GET /v1/history/{id}: one check's latest verdict changes and availability
// at a location.
type CheckHistory struct {
	// Location is the answering node.
	Location string `json:"location"`
	history.CheckHistory
}

// AnswerHistory is GET /v1/answer-history: the latest changes of what record sets answer
// from at a location.
type AnswerHistory struct {
	// Location is the answering node.
	Location string `json:"location"`
	// Changes are newest first.
	Changes []history.AnswerChange `json:"changes"`
}

// history guards a handler that needs the location's history.
func (a *API) withHistory(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.opts.History == nil {
			writeError(w, http.StatusNotFound, "status: this node keeps no history (it is not a DNS location)")
			return
		}
		h(w, r)
	}
}

// historyList serves GET /v1/history?cursor=&limit=.
func (a *API) historyList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := checkQuery(q, "cursor", "limit"); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	limit := defaultLimit
	if s := q.Get("limit"); s != "" {
		l, err := strconv.Atoi(s)
		if err != nil || l < 1 || l > maxLimit {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("status: query limit: want 1 to %d, not %q", maxLimit, s))
			return
		}
		limit = l
	}
	now := a.now()
	page, next := a.opts.History.HistorySummaries(q.Get("cursor"), limit, now)
	if page == nil {
		page = []history.CheckHistory{}
	}
	writeJSON(w, http.StatusOK, HistoryList{Location: a.opts.Node.Identity().ID, GeneratedAt: now, Checks: page, Next: next})
}

// checkHistory serves GET /v1/history/{id}.
func (a *API) checkHistory(w http.ResponseWriter, r *http.Request) {
	if err := checkQuery(r.URL.Query()); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	id := r.PathValue("id")
	h, ok := a.opts.History.CheckHistory(id, a.now())
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("status: no history of check %q at this location", id))
		return
	}
	writeJSON(w, http.StatusOK, CheckHistory{Location: a.opts.Node.Identity().ID, CheckHistory: h})
}

// answerHistory serves GET /v1/answer-history[?name=NAME].
func (a *API) answerHistory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if err := checkQuery(q, "name"); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	cs := a.opts.History.AnswerHistory(q.Get("name"))
	if cs == nil {
		cs = []history.AnswerChange{}
	}
	writeJSON(w, http.StatusOK, AnswerHistory{Location: a.opts.Node.Identity().ID, Changes: cs})
}
