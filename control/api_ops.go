package control

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
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
	a.read(w, r, func(s *state.State) (any, error) {
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
	a.commit(w, r, body, &state.Command{Op: state.OpPutNotifications, Notifications: n}, false)
}

func (a *API) getAlerts(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, func(s *state.State) (any, error) {
		out, dropped := s.Outbox()
		return state.AlertsView{Firing: s.Alerts(), Outbox: nonNil(out), Dropped: dropped}, nil
	})
}

func (a *API) listOverrides(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, func(s *state.State) (any, error) {
		now := time.Now()
		out := []state.OverrideView{}
		for _, o := range s.Overrides() {
			out = append(out, state.OverrideView{Override: o, Active: o.Active(now)})
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
	var req state.OverrideRequest
	err := decodeStrict(body, &req)
	a.decoded(body, release)
	if err != nil {
		writeError(w, http.StatusBadRequest, config.Errors{{Message: "override: " + err.Error()}})
		return
	}
	// Reasons and names are shown in tables and terminals (vigil override list, vigil
	// audit): text that could end a line or send an escape sequence is refused here, at the
	// write. The log's apply does not check it, so that entries committed before apply alike on replay.
	if es := req.TextProblems(); len(es) > 0 {
		writeError(w, http.StatusUnprocessableEntity, es)
		return
	}
	now := time.Now()
	o := &state.Override{Kind: req.Kind, Check: req.Check, Zone: req.Zone, Name: req.Name, Type: config.RecordType(req.Type),
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
	a.commit(w, r, body, &state.Command{Op: state.OpSetOverride, Override: o}, true)
}

func (a *API) clearOverride(w http.ResponseWriter, r *http.Request) {
	a.commit(w, r, nil, &state.Command{Op: state.OpClearOverride, ID: r.PathValue("id")}, false)
}

func (a *API) getAudit(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit, before := 100, uint64(0)
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > state.MaxAuditEntries {
			writeError(w, http.StatusBadRequest, config.Errors{{Path: "limit", Message: fmt.Sprintf("want 1 to %d, got %q", state.MaxAuditEntries, v)}})
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
	a.read(w, r, func(s *state.State) (any, error) {
		v := state.AuditView{Entries: s.Audit(limit, before), Retained: s.AuditRetained()}
		v.Newest, v.Head, v.ChainStart, v.Checkpoints = s.AuditChain()
		return v, nil
	})
}
