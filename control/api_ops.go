package control

import (
	"net/http"

	"github.com/vigil-dns/vigil/config"
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
	}
}

func (a *API) getNotifications(w http.ResponseWriter, r *http.Request) {
	a.read(w, r, func(s *State) (any, error) {
		n := s.Settings().Notifications
		if n == nil {
			n = &config.Notifications{}
		}
		return n, nil
	})
}

// decodeNotifications decodes the notifications section (YAML or JSON) with its defaults.
func decodeNotifications(body []byte) (*config.Notifications, error) {
	doc, err := decodeItem(body, "notifications", func(n *yaml.Node) *yaml.Node {
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
