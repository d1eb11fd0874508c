package config

import (
	"fmt"
	"net/url"
	"time"

	"github.com/vigil-dns/vigil/internal/safetext"
)

// Notifications says whom to tell when verdicts change, and when: receivers are where
// notifications go, rules decide which changes of which checks are worth one. The control
// plane's leader sends them (package notify).
type Notifications struct {
	// Receivers are the endpoints notifications are sent to; rules name them.
	Receivers []Receiver `yaml:"receivers" json:"receivers"`
	// Rules decide when a check's verdicts make a notification.
	Rules []NotifyRule `yaml:"rules" json:"rules"`
}

// ReceiverKind names the wire format a receiver speaks.
type ReceiverKind string

// The kinds of receiver.
const (
	// ReceiverWebhook is a generic JSON webhook: the event as JSON, its body signed with
	// HMAC-SHA256 when a secret is set, and a stable idempotency key per event.
	ReceiverWebhook ReceiverKind = "webhook"
	// ReceiverSlack is a Slack-compatible incoming webhook: {"text": ...}.
	ReceiverSlack ReceiverKind = "slack"
	// ReceiverAlertmanager is the Prometheus Alertmanager v2 API (POST /api/v2/alerts), with
	// firing and resolved alerts.
	ReceiverAlertmanager ReceiverKind = "alertmanager"
)

// Receiver is one endpoint that notifications are sent to.
type Receiver struct {
	// Name names the receiver in rules: [a-z0-9][a-z0-9._-]*, unique.
	Name string `yaml:"name" json:"name"`
	// Kind is webhook (default), slack or alertmanager.
	Kind ReceiverKind `yaml:"kind" json:"kind"`
	// URL is where notifications are POSTed: http or https. For alertmanager, the base URL
	// of Alertmanager (the path /api/v2/alerts is added); one behind basic authentication
	// takes it in the URL (https://user:password@alertmanager.example/). Everything after
	// the host (user and password, path, query) is a secret, as a Slack URL's path is: reads
	// show the URL as RedactURL does ("https://hooks.slack.com/…"), and a write that gives it
	// back so keeps the stored one (KeepSecrets).
	URL string `yaml:"url" json:"url"`
	// Secret, for a webhook, is the HMAC-SHA256 key its body is signed with (header
	// X-Vigil-Signature: sha256=<hex>). It is write-only: reads show SecretSet in its place,
	// and a write that gives SecretSet, or none, keeps the stored one; SecretClear removes it.
	Secret string `yaml:"secret" json:"secret,omitempty"`
}

// NotifyScope says where a rule counts unhealthy verdicts.
type NotifyScope string

// The scopes of a rule.
const (
	// ScopeGlobal fires once for the whole network when at least min_locations locations
	// hold the check unhealthy.
	ScopeGlobal NotifyScope = "global"
	// ScopeRegional fires for each location that holds the check unhealthy, on its own.
	ScopeRegional NotifyScope = "regional"
)

// NotifyRule decides when a check's verdicts make a notification.
type NotifyRule struct {
	// Name names the rule in notifications: [a-z0-9][a-z0-9._-]*, unique.
	Name string `yaml:"name" json:"name"`
	// Checks are the ids of the checks the rule watches; empty: every check. A check that
	// does not exist (or no longer does) is watched when it does.
	Checks []string `yaml:"checks" json:"checks,omitempty"`
	// Scope is global (default) or regional.
	Scope NotifyScope `yaml:"scope" json:"scope"`
	// MinLocations, for a global rule, is how many locations must hold the check unhealthy:
	// 1 to 128, default 1.
	MinLocations int `yaml:"min_locations" json:"min_locations"`
	// For is how long the condition must hold before the alert fires: 0 to 24h, default 0.
	For Duration `yaml:"for" json:"for"`
	// Repeat, when set, sends the firing notification again this often while the alert
	// still fires: 0 (never, default) or 1m to 7d.
	Repeat Duration `yaml:"repeat" json:"repeat"`
	// SendResolved sends a resolved notification when the condition ends. Default true.
	SendResolved *bool `yaml:"send_resolved" json:"send_resolved,omitempty"`
	// Receivers are the names of the receivers told; at least one.
	Receivers []string `yaml:"receivers" json:"receivers"`
}

// Resolved reports whether the rule sends a notification when its alert resolves.
func (r *NotifyRule) Resolved() bool { return r.SendResolved == nil || *r.SendResolved }

// Bounds of notifications.
const (
	// MaxReceivers and MaxNotifyRules bound a document's notifications.
	MaxReceivers   = 64
	MaxNotifyRules = 256
	maxNotifyLocs  = 128
	maxNotifyFor   = 24 * time.Hour
	minRepeat      = time.Minute
	maxRepeat      = 7 * 24 * time.Hour
)

// normalize applies the notifications' defaults.
func (n *Notifications) normalize() {
	if n == nil {
		return
	}
	for i := range n.Receivers {
		if n.Receivers[i].Kind == "" {
			n.Receivers[i].Kind = ReceiverWebhook
		}
	}
	for i := range n.Rules {
		r := &n.Rules[i]
		if r.Scope == "" {
			r.Scope = ScopeGlobal
		}
		if r.MinLocations == 0 {
			r.MinLocations = 1
		}
	}
}

// validateNotifications checks receivers and rules and the names between them.
func (v *validator) validateNotifications() {
	n := v.doc.Notifications
	if n == nil {
		return
	}
	if len(n.Receivers) > MaxReceivers {
		v.add("notifications.receivers", "%d receivers, at most %d", len(n.Receivers), MaxReceivers)
	}
	if len(n.Rules) > MaxNotifyRules {
		v.add("notifications.rules", "%d rules, at most %d", len(n.Rules), MaxNotifyRules)
	}
	recv := map[string]bool{}
	for i, r := range n.Receivers {
		p := fmt.Sprintf("notifications.receivers[%d]", i)
		if !validCheckID(r.Name) {
			v.add(p+".name", "invalid receiver name %q: want [a-z0-9][a-z0-9._-]*, at most %d bytes", r.Name, maxCheckID)
		} else if recv[r.Name] {
			v.add(p+".name", "duplicate receiver %q", r.Name)
		}
		recv[r.Name] = true
		switch r.Kind {
		case "", ReceiverWebhook, ReceiverSlack, ReceiverAlertmanager:
		default:
			v.add(p+".kind", "unknown kind %q: want webhook, slack or alertmanager", r.Kind)
		}
		if u, err := url.Parse(r.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || safetext.Check(r.URL) != nil {
			// The URL is shown redacted: it may hold a secret, and errors reach logs.
			v.add(p+".url", "want an http or https URL, got %s", RedactURL(r.URL))
		}
	}
	rules := map[string]bool{}
	for i, r := range n.Rules {
		v.validateNotifyRule(fmt.Sprintf("notifications.rules[%d]", i), &r, recv, rules)
	}
}

// validateNotifyRule checks one rule; recv holds the receivers' names, seen the rules' so far.
func (v *validator) validateNotifyRule(p string, r *NotifyRule, recv, seen map[string]bool) {
	if !validCheckID(r.Name) {
		v.add(p+".name", "invalid rule name %q: want [a-z0-9][a-z0-9._-]*, at most %d bytes", r.Name, maxCheckID)
	} else if seen[r.Name] {
		v.add(p+".name", "duplicate rule %q", r.Name)
	}
	seen[r.Name] = true
	switch r.Scope {
	case "", ScopeGlobal, ScopeRegional:
	default:
		v.add(p+".scope", "unknown scope %q: want global or regional", r.Scope)
	}
	if r.MinLocations < 0 || r.MinLocations > maxNotifyLocs {
		v.add(p+".min_locations", "%d: want 1 to %d", r.MinLocations, maxNotifyLocs)
	}
	if f := r.For.Std(); f < 0 || f > maxNotifyFor {
		v.add(p+".for", "%v: want 0 to %v", f, maxNotifyFor)
	}
	if rp := r.Repeat.Std(); rp != 0 && (rp < minRepeat || rp > maxRepeat) {
		v.add(p+".repeat", "%v: want 0 (never) or %v to %v", rp, minRepeat, maxRepeat)
	}
	if len(r.Receivers) == 0 {
		v.add(p+".receivers", "at least one receiver is required")
	}
	for j, name := range r.Receivers {
		if !recv[name] {
			v.add(fmt.Sprintf("%s.receivers[%d]", p, j), "no receiver named %q", name)
		}
	}
	for j, id := range r.Checks {
		if !validCheckID(id) {
			v.add(fmt.Sprintf("%s.checks[%d]", p, j), "invalid check id %q", id)
		}
	}
}

// Validate returns every problem of n as Errors, with paths under "notifications", or nil.
func (n *Notifications) Validate() error {
	v := newValidator(&Document{Notifications: n}, nil)
	v.validateNotifications()
	return v.errs.err()
}
