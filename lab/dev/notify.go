package dev

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/status/notify"
)

// The dev network's notifications: its voter runs a notify.Runner over its locations'
// digests, and its control API hosts two receivers that keep what they get, so that a
// newcomer sees a notification arrive (`vigil dev notifications`): a generic webhook that
// checks the HMAC signature, and an Alertmanager-compatible /api/v2/alerts.

// DevWebhookSecret is the HMAC key of the dev network's webhook receiver.
const DevWebhookSecret = "dev-webhook-secret"

// maxReceived bounds the notifications the dev receivers keep.
const maxReceived = 200

// Received is one notification a dev receiver took.
type Received struct {
	// At is when it arrived.
	At time.Time `json:"at"`
	// Receiver is "webhook" or "alertmanager".
	Receiver string `json:"receiver"`
	// Key is the event's idempotency key (webhook), or the alert's labels (alertmanager).
	Key string `json:"key"`
	// Kind is firing or resolved.
	Kind string `json:"kind"`
	// Summary says it.
	Summary string `json:"summary"`
	// Duplicate says the webhook had taken this key already (a delivery repeated).
	Duplicate bool `json:"duplicate,omitempty"`
}

// receivers is the dev network's receivers' log.
type receivers struct {
	mu   sync.Mutex
	log  []Received
	keys map[string]bool
}

func (rc *receivers) add(r Received) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if r.Receiver == "webhook" {
		if rc.keys == nil {
			rc.keys = map[string]bool{}
		}
		r.Duplicate = rc.keys[r.Key]
		if len(rc.keys) < 100*maxReceived {
			rc.keys[r.Key] = true
		}
	}
	rc.log = append(rc.log, r)
	if len(rc.log) > maxReceived {
		rc.log = slices.Delete(rc.log, 0, len(rc.log)-maxReceived)
	}
}

// Notifications returns what the dev receivers took, oldest first.
func (n *Network) Notifications() []Received {
	n.recv.mu.Lock()
	defer n.recv.mu.Unlock()
	return slices.Clone(n.recv.log)
}

// receiverHandler serves the dev receivers and their log.
func (n *Network) receiverHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/dev/receiver/webhook", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if !notify.Verify([]byte(DevWebhookSecret), body, r.Header.Get(notify.HeaderSignature)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var e notify.Event
		if err := json.Unmarshal(body, &e); err != nil {
			http.Error(w, "not an event", http.StatusBadRequest)
			return
		}
		n.recv.add(Received{At: time.Now(), Receiver: "webhook", Key: e.Key, Kind: e.Kind, Summary: e.Summary})
	})
	mux.HandleFunc("POST /v1/dev/receiver/alertmanager/api/v2/alerts", func(w http.ResponseWriter, r *http.Request) {
		var alerts []struct {
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
			EndsAt      time.Time         `json:"endsAt"`
		}
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&alerts); err != nil {
			http.Error(w, "not alerts", http.StatusBadRequest)
			return
		}
		now := time.Now()
		for _, a := range alerts {
			kind := "firing"
			if !a.EndsAt.IsZero() && !a.EndsAt.After(now) {
				kind = "resolved"
			}
			n.recv.add(Received{At: now, Receiver: "alertmanager", Key: labelString(a.Labels), Kind: kind, Summary: a.Annotations["summary"]})
		}
	})
	mux.HandleFunc("GET /v1/dev/notifications", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, ReceivedList{Notifications: n.Notifications()})
	})
	return mux
}

// ReceivedList is GET /v1/dev/notifications.
type ReceivedList struct {
	// Notifications are what the receivers took, oldest first (at most 200).
	Notifications []Received `json:"notifications"`
}

// labelString writes labels as {a="1", b="2"}, sorted.
func labelString(l map[string]string) string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, l[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// withDevNotifications returns doc with notifications to the dev receivers at base (the
// control API) when it has none of its own: a check unhealthy at two locations or more fires
// as soon as the leader sees it. The checks' failure and success thresholds already keep a
// flap from firing; a "for" on top would let a short outage, such as the five-minute tour's
// walkthrough (a target down, then up as soon as the failover shows), pass unseen.
func withDevNotifications(doc *config.Document, base string) *config.Document {
	if doc.Notifications != nil {
		return doc
	}
	d := *doc
	d.Notifications = &config.Notifications{
		Receivers: []config.Receiver{
			{Name: "dev-webhook", Kind: config.ReceiverWebhook, URL: base + "/v1/dev/receiver/webhook", Secret: DevWebhookSecret},
			{Name: "dev-alertmanager", Kind: config.ReceiverAlertmanager, URL: base + "/v1/dev/receiver/alertmanager"},
		},
		Rules: []config.NotifyRule{{Name: "check-down", Scope: config.ScopeGlobal, MinLocations: 2,
			Receivers: []string{"dev-webhook", "dev-alertmanager"}}},
	}
	return &d
}

// startNotify runs the voter's notification Runner over the locations' digests.
func (n *Network) startNotify(ctx context.Context) error {
	n.mu.Lock()
	urls := make([]string, 0, len(n.statusURLs))
	for _, u := range n.statusURLs {
		urls = append(urls, u)
	}
	n.mu.Unlock()
	slices.Sort(urls)
	r, err := notify.New(notify.Config{Store: n.voter, Source: &notify.Digests{URLs: urls}, Logger: n.log,
		Interval: 500 * time.Millisecond, Refresh: time.Minute,
		Registerer: prometheus.WrapRegistererWith(prometheus.Labels{"node": controlID}, n.controlReg)})
	if err != nil {
		return fmt.Errorf("dev: %w", err)
	}
	n.goRun(ctx, "notifications", r.Run)
	return nil
}

// NotificationsOf reads the dev receivers' log of a running dev network.
func (c Client) NotificationsOf(ctx context.Context) ([]Received, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(c.BaseURL, "/")+"/v1/dev/notifications", nil)
	if err != nil {
		return nil, fmt.Errorf("dev: client: %w", err)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, c.requestError(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("dev: client: %s", resp.Status)
	}
	var l ReceivedList
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&l); err != nil {
		return nil, fmt.Errorf("dev: client: answer: %w", err)
	}
	return l.Notifications, nil
}
