package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// Event is the JSON body a webhook receiver gets: one notification.
type Event struct {
	// Key is the event's idempotency key: the same on every delivery of this event, by any
	// voter; a receiver drops a key it has seen. Also in the Idempotency-Key header.
	Key string `json:"key"`
	// Kind is "firing" or "resolved"; Repeat numbers a repeated firing (0: the first).
	Kind   string `json:"kind"`
	Repeat int    `json:"repeat,omitempty"`
	// Rule, Check and Location say what fired; Location only for a regional rule.
	Rule     string `json:"rule"`
	Check    string `json:"check"`
	Location string `json:"location,omitempty"`
	// Since is when the alert fired; At when this event was decided.
	Since time.Time `json:"since"`
	At    time.Time `json:"at"`
	// Unhealthy are the locations that held the check unhealthy then.
	Unhealthy []string `json:"unhealthy,omitempty"`
	// Summary says it in one sentence.
	Summary string `json:"summary"`
}

// The headers of a webhook delivery.
const (
	// HeaderKey carries the event's idempotency key.
	HeaderKey = "Idempotency-Key"
	// HeaderSignature carries "sha256=" and the hex HMAC-SHA256 of the body under the
	// receiver's secret.
	HeaderSignature = "X-Vigil-Signature"
)

// Sign returns the signature header value of body under secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify reports whether sig is body's signature under secret (constant time).
func Verify(secret, body []byte, sig string) bool {
	return hmac.Equal([]byte(sig), []byte(Sign(secret, body)))
}

func eventOf(n *state.Notification) Event {
	return Event{Key: n.Key, Kind: n.Kind, Repeat: n.Repeat, Rule: n.Rule, Check: n.Check, Location: n.Location,
		Since: n.Since, At: n.At, Unhealthy: n.Unhealthy, Summary: n.Summary}
}

// amAlert is one alert of the Alertmanager v2 API (POST /api/v2/alerts).
type amAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt,omitzero"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

// amFiringFor is how long Alertmanager keeps a firing alert without hearing it again; the
// leader posts firing alerts again well within it (Runner's refresh).
const amFiringFor = 15 * time.Minute

// amOf returns n as an Alertmanager alert: its labels name the alert (rule, check, location),
// so a delivery repeated is the same alert to Alertmanager.
func amOf(n *state.Notification, now time.Time) amAlert {
	a := amAlert{Labels: map[string]string{"alertname": n.Rule, "check": n.Check, "source": "vigil"},
		Annotations: map[string]string{"summary": n.Summary, "vigil_key": n.Key}, StartsAt: n.Since}
	if n.Location != "" {
		a.Labels["location"] = n.Location
	}
	if n.Kind == state.KindResolved {
		a.EndsAt = n.At
	} else {
		a.EndsAt = now.Add(amFiringFor)
	}
	return a
}

// request builds the HTTP request that delivers ns to receiver r (more than one only for
// alertmanager).
func request(ctx context.Context, r *config.Receiver, ns []*state.Notification, now time.Time) (*http.Request, error) {
	var body []byte
	var err error
	url := r.URL
	switch r.Kind {
	case config.ReceiverSlack:
		n := ns[0]
		body, err = json.Marshal(map[string]string{"text": fmt.Sprintf("[%s] %s (%s)", strings.ToUpper(n.Kind), n.Summary, n.Key)})
	case config.ReceiverAlertmanager:
		as := make([]amAlert, len(ns))
		for i, n := range ns {
			as[i] = amOf(n, now)
		}
		body, err = json.Marshal(as)
		url = strings.TrimRight(url, "/") + "/api/v2/alerts"
	default:
		body, err = json.Marshal(eventOf(ns[0]))
	}
	if err != nil {
		return nil, fmt.Errorf("notify: encode: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		// The parse error quotes the whole URL, a secret: it is left out.
		return nil, fmt.Errorf("notify: receiver %s: its URL %s does not make a request: correct it with PUT /v1/notifications",
			r.Name, config.RedactURL(url))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "vigil-notify")
	if len(ns) == 1 {
		req.Header.Set(HeaderKey, ns[0].Key)
	}
	if r.Secret != "" {
		req.Header.Set(HeaderSignature, Sign([]byte(r.Secret), body))
	}
	return req, nil
}

// permanentError is a refusal that retrying does not change.
type permanentError struct{ code int }

func (e permanentError) Error() string { return fmt.Sprintf("refused with HTTP %d", e.code) }

// post sends req and reads the answer (a bounded part of it). Its error never holds the
// URL's secret parts (see redactError): it is logged.
func post(client *http.Client, req *http.Request) error {
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("notify: POST %s: %w", config.RedactURL(req.URL.String()), redactError(err, req.URL))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	switch {
	case res.StatusCode >= 200 && res.StatusCode < 300:
		return nil
	case res.StatusCode >= 300 && res.StatusCode < 400:
		return permanentError{res.StatusCode} // redirects are not followed
	case res.StatusCode >= 400 && res.StatusCode < 500 && res.StatusCode != http.StatusRequestTimeout && res.StatusCode != http.StatusTooManyRequests:
		return permanentError{res.StatusCode}
	}
	return fmt.Errorf("notify: HTTP %d", res.StatusCode)
}

// redactedError is an error whose message has a receiver URL's secret parts taken out.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Unwrap returns the error redacted, less the *url.Error that carried the whole URL.
func (e *redactedError) Unwrap() error { return e.err }

// redactError returns err of a request to u without u's secret parts. net/http's
// *url.Error says the whole URL (a Slack webhook's path is its credential, an Alertmanager
// URL may hold a password): it is dropped for the error it wraps, and whatever of u the
// message still holds (path, query, user, password) is replaced by "…".
func redactError(err error, u *url.URL) error {
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	msg := inner.Error()
	if ue != nil {
		msg = ue.Op + ": " + msg
	}
	for _, part := range secretParts(u) {
		msg = strings.ReplaceAll(msg, part, "…")
	}
	return &redactedError{msg: msg, err: inner}
}

// secretParts returns the parts of u that are secret (everything after the host), longest
// first.
func secretParts(u *url.URL) []string {
	var parts []string
	add := func(s string) {
		if len(s) > 1 {
			parts = append(parts, s)
		}
	}
	add(u.String())
	if u.User != nil {
		add(u.User.String())
		add(u.User.Username())
		if p, ok := u.User.Password(); ok {
			add(p)
		}
	}
	add(u.EscapedPath())
	add(u.Path)
	add(u.RawQuery)
	add(u.Fragment)
	slices.SortFunc(parts, func(a, b string) int { return len(b) - len(a) })
	return parts
}
