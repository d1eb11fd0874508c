package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Notification secrets are write-only. The control plane's voters hold them (the leader
// delivers with them); every answer of a read, and every copy that leaves the voters, has
// them redacted (Notifications.Redacted). A write may give them back redacted, or leave them
// out, and keeps the ones stored (Notifications.KeepSecrets), so that a configuration read,
// edited and written back keeps its secrets.

// The markers of a redacted or cleared secret.
const (
	// SecretSet stands for a receiver's secret in reads; given in a write, it keeps the
	// secret stored for the receiver of that name.
	SecretSet = "(set)"
	// SecretClear, given as a receiver's secret in a write, removes the stored one.
	SecretClear = "(clear)"
	// URLHidden ends a URL whose secret part (everything after the host) is redacted:
	// "https://hooks.slack.com/…".
	URLHidden = "/…"
)

// RedactURL returns raw with everything after its host hidden: scheme://host/… when it has a
// user, password, path (other than "/"), query or fragment, else scheme://host. A Slack
// webhook's URL, an Alertmanager URL with a password and a webhook URL with a token in its
// path or query thus show where they point and nothing that lets anyone post to them. A URL
// that does not parse shows as "(a URL that does not parse)".
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "(a URL that does not parse)"
	}
	shown := u.Scheme + "://" + u.Host
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		return shown + URLHidden
	}
	return shown
}

// HasSecrets reports whether n holds a secret that reads must not show: a receiver's secret
// or a URL with something after its host.
func (n *Notifications) HasSecrets() bool {
	if n == nil {
		return false
	}
	for _, r := range n.Receivers {
		if r.Secret != "" || RedactURL(r.URL) != r.URL {
			return true
		}
	}
	return false
}

// Redacted returns a copy of n with every secret replaced by its marker: a receiver's secret
// by SecretSet, its URL by RedactURL's form. n is not changed; nil stays nil.
func (n *Notifications) Redacted() *Notifications {
	if n == nil {
		return nil
	}
	c := *n
	c.Receivers = slices.Clone(n.Receivers)
	for i := range c.Receivers {
		r := &c.Receivers[i]
		if r.Secret != "" {
			r.Secret = SecretSet
		}
		r.URL = RedactURL(r.URL)
	}
	return &c
}

// KeepSecrets returns n, as a write gives it, with the secrets it leaves out taken from
// stored, the notifications in place, receiver by receiver of the same name:
//
//   - a secret that is empty or SecretSet keeps the stored receiver's secret (none if it has
//     none); SecretClear removes it; any other value replaces it;
//   - a URL that is the stored receiver's URL as RedactURL shows it keeps the stored URL;
//     any other URL replaces it.
//
// SecretSet, or a URL ending in URLHidden, for a receiver that has no such stored secret is
// an error (Errors, paths under "notifications"): the write must give the secret itself.
// n and stored are not changed; nil stays nil.
func (n *Notifications) KeepSecrets(stored *Notifications) (*Notifications, error) {
	if n == nil {
		return nil, nil
	}
	old := map[string]*Receiver{}
	if stored != nil {
		for i := range stored.Receivers {
			old[stored.Receivers[i].Name] = &stored.Receivers[i]
		}
	}
	c := *n
	c.Receivers = slices.Clone(n.Receivers)
	var errs Errors
	for i := range c.Receivers {
		r := &c.Receivers[i]
		p := fmt.Sprintf("notifications.receivers[%d]", i)
		prev := old[r.Name]
		switch r.Secret {
		case SecretClear:
			r.Secret = ""
		case "", SecretSet:
			if prev != nil && prev.Secret != "" {
				r.Secret = prev.Secret
			} else if r.Secret == SecretSet {
				errs = append(errs, FieldError{Path: p + ".secret", Message: fmt.Sprintf("%q keeps the stored secret, but receiver %q has none: give the secret itself", SecretSet, r.Name)})
			}
		}
		switch {
		case prev != nil && r.URL == RedactURL(prev.URL):
			r.URL = prev.URL
		case strings.HasSuffix(r.URL, URLHidden):
			errs = append(errs, FieldError{Path: p + ".url", Message: fmt.Sprintf("the URL is redacted (ends in %q) and is not the stored URL of receiver %q as reads show it: give the whole URL", URLHidden, r.Name)})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return &c, nil
}
