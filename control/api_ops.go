package control

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/safetext"
	yaml "go.yaml.in/yaml/v3"
)

// opsRoutes are the routes of the operational state: notifications and alerts, overrides,
// the audit log.
func (a *API) opsRoutes() []route {
	r := func(method, path string, write bool, h http.HandlerFunc) route {
		return route{Route{method, path}, write, h}
	}
	return []route{
		r("GET", "/v1/notifications", false, a.getNotifications),
		r("PUT", "/v1/notifications", true, a.putNotifications),
		r("GET", "/v1/alerts", false, a.getAlerts),
		r("GET", "/v1/overrides", false, a.listOverrides),
		r("POST", "/v1/overrides", true, a.setOverride),
		r("DELETE", "/v1/overrides/{id}", true, a.clearOverride),
		r("GET", "/v1/audit", false, a.getAudit),
		r("GET", "/v1/audit/refusals", false, a.getRefusals),
	}
}

func (a *API) getNotifications(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, func(s *State) (any, error) {
		n := s.Settings().Notifications.Redacted() // secrets are write-only
		if n == nil {
			n = &config.Notifications{}
		}
		return n, nil
	})
}

// decodeNotifications decodes the notifications section (YAML or JSON) with its defaults.
func decodeNotifications(body []byte) (*config.Notifications, error) {
	doc, err := decodeItem(body, "notifications", `{"notifications": `, `}`, func(n *yaml.Node) *yaml.Node {
		return mapping(scalar("notifications"), n)
	})
	if err != nil {
		return nil, err
	}
	if doc.Notifications == nil {
		return &config.Notifications{}, nil
	}
	return doc.Notifications, nil
}

func (a *API) putNotifications(w http.ResponseWriter, r *http.Request) {
	body, release, ok := a.bodyOf(w, r)
	if !ok {
		return
	}
	defer release()
	n, err := decodeNotifications(body)
	a.decoded(body, release)
	if err != nil {
		writeError(w, statusOf(err), err)
		return
	}
	if len(n.Receivers) == 0 && len(n.Rules) == 0 {
		n = nil
	}
	a.commit(w, r, body, &Command{Op: OpPutNotifications, Notifications: n}, false)
}

// AlertsView is GET /v1/alerts: the alerts that fire and the notifications waiting for
// delivery.
type AlertsView struct {
	// Firing are the alerts that fire, by key.
	Firing []*Alert `json:"firing"`
	// Outbox are the notifications not yet taken by every receiver, oldest first.
	Outbox []*Notification `json:"outbox"`
	// Dropped counts the notifications a full outbox dropped.
	Dropped uint64 `json:"dropped"`
}

func (a *API) getAlerts(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, func(s *State) (any, error) {
		out, dropped := s.Outbox()
		return AlertsView{Firing: s.Alerts(), Outbox: nonNil(out), Dropped: dropped}, nil
	})
}

// OverrideRequest is the body of POST /v1/overrides.
type OverrideRequest struct {
	// Kind is healthy or unhealthy (with Check), or drain (with Zone, Name, Type, Value).
	Kind  string `json:"kind"`
	Check string `json:"check,omitempty"`
	Zone  string `json:"zone,omitempty"`
	Name  string `json:"name,omitempty"`
	Type  string `json:"type,omitempty"`
	Value string `json:"value,omitempty"`
	// Reason says why (required).
	Reason string `json:"reason"`
	// For is how long it lasts, e.g. "2h"; or Expires, when it ends.
	For     string    `json:"for,omitempty"`
	Expires time.Time `json:"expires,omitzero"`
}

// textProblems lists the fields of the request that hold characters free text may not
// (safetext.Check): control characters, line separators, bidirectional overrides.
func (req *OverrideRequest) textProblems() config.Errors {
	var es config.Errors
	for _, f := range []struct{ path, text string }{{"kind", req.Kind}, {"check", req.Check}, {"zone", req.Zone},
		{"name", req.Name}, {"type", req.Type}, {"value", req.Value}, {"reason", req.Reason}, {"for", req.For}} {
		if err := safetext.Check(f.text); err != nil {
			es = append(es, config.FieldError{Path: f.path, Message: err.Error()})
		}
	}
	return es
}

// OverrideView is an override as the API lists it.
type OverrideView struct {
	*Override
	// Active says it is in force now, by the answering voter's clock.
	Active bool `json:"active"`
}

func (a *API) listOverrides(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, func(s *State) (any, error) {
		now := time.Now()
		out := []OverrideView{}
		for _, o := range s.Overrides() {
			out = append(out, OverrideView{o, o.Active(now)})
		}
		return out, nil
	})
}

func (a *API) setOverride(w http.ResponseWriter, r *http.Request) {
	body, release, ok := a.bodyOf(w, r)
	if !ok {
		return
	}
	defer release()
	var req OverrideRequest
	err := decodeStrict(body, &req)
	a.decoded(body, release)
	if err != nil {
		writeError(w, http.StatusBadRequest, config.Errors{{Message: "override: " + err.Error()}})
		return
	}
	// Reasons and names are shown in tables and terminals (vigil override list, vigil
	// audit): text that could end a line or send an escape sequence is refused here, at the
	// write. The log's apply does not check it, so that entries committed before apply alike on replay.
	if es := req.textProblems(); len(es) > 0 {
		writeError(w, http.StatusUnprocessableEntity, es)
		return
	}
	now := time.Now()
	o := &Override{Kind: req.Kind, Check: req.Check, Zone: req.Zone, Name: req.Name, Type: config.RecordType(req.Type),
		Value: req.Value, Reason: req.Reason, Author: principalOf(r).Name, Created: now, Expires: req.Expires}
	if req.For != "" {
		d, err := time.ParseDuration(req.For)
		if err != nil || d <= 0 {
			writeError(w, http.StatusBadRequest, config.Errors{{Path: "for", Message: fmt.Sprintf("not a positive duration: %q (want e.g. 2h)", req.For)}})
			return
		}
		o.Expires = now.Add(d)
	}
	if o.Expires.IsZero() {
		writeError(w, http.StatusBadRequest, config.Errors{{Path: "for", Message: "an override needs \"for\" or \"expires\""}})
		return
	}
	a.commit(w, r, body, &Command{Op: OpSetOverride, Override: o}, true)
}

func (a *API) clearOverride(w http.ResponseWriter, r *http.Request) {
	a.commit(w, r, nil, &Command{Op: OpClearOverride, ID: r.PathValue("id")}, false)
}

// AuditView is GET /v1/audit: a page of the audit log, oldest first, and what a verifier
// of its hash chain needs (VerifyAudit): with limit=MaxAuditEntries the page is the whole
// log, read from one state.
type AuditView struct {
	// Entries are the entries, oldest first.
	Entries []*AuditEntry `json:"entries"`
	// Newest is the Seq of the newest entry of the log, and Head its Hash.
	Newest uint64 `json:"newest"`
	Head   string `json:"head,omitempty"`
	// Retained is how many entries the whole log holds.
	Retained int `json:"retained"`
	// ChainStart is the Seq before the first chained entry: entries up to it were written
	// before the log was chained and carry no hashes.
	ChainStart uint64 `json:"chain_start"`
	// Checkpoints account for the chained entries retention pruned, by retention group.
	Checkpoints []AuditCheckpoint `json:"checkpoints,omitempty"`
}

func (a *API) getAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, before := 100, uint64(0)
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxAuditEntries {
			writeError(w, http.StatusBadRequest, config.Errors{{Path: "limit", Message: fmt.Sprintf("want 1 to %d, got %q", MaxAuditEntries, v)}})
			return
		}
		limit = n
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, config.Errors{{Path: "before", Message: fmt.Sprintf("not a sequence number: %q", v)}})
			return
		}
		before = n
	}
	a.read(w, r, func(s *State) (any, error) {
		v := AuditView{Entries: s.Audit(limit, before), Retained: s.opsOrEmpty().Audit.Len()}
		v.Newest, v.Head, v.ChainStart, v.Checkpoints = s.AuditChain()
		return v, nil
	})
}
