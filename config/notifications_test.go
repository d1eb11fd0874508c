package config

import (
	"strings"
	"testing"
)

const notifyDoc = `
regions: [us-east, eu-west, sa-east]
notifications:
  receivers:
    - {name: ops, url: "http://127.0.0.1:9/hook", secret: s3cret}
    - {name: am, kind: alertmanager, url: "http://127.0.0.1:9093"}
  rules:
    - {name: web-down, checks: [web], min_locations: 2, for: 30s, repeat: 1h, receivers: [ops, am]}
    - {name: web-regional, scope: regional, receivers: [ops]}
checks:
  - {id: web, protocol: http, target: {host: 192.0.2.1}}
`

func TestNotificationsDecodeAndDefaults(t *testing.T) {
	d, err := Parse([]byte(notifyDoc))
	if err != nil {
		t.Fatal(err)
	}
	n := d.Notifications
	if n == nil || len(n.Receivers) != 2 || len(n.Rules) != 2 {
		t.Fatalf("notifications: %+v", n)
	}
	if n.Receivers[0].Kind != ReceiverWebhook || n.Rules[1].Scope != ScopeRegional || n.Rules[1].MinLocations != 1 || !n.Rules[0].Resolved() {
		t.Fatalf("defaults not applied: %+v", n)
	}
	if n.Rules[0].For.Std().Seconds() != 30 || n.Rules[0].MinLocations != 2 {
		t.Fatalf("rule: %+v", n.Rules[0])
	}
}

func TestNotificationsInvalid(t *testing.T) {
	for _, tc := range []struct{ edit, want string }{
		{`{name: x, url: "ftp://h/"}`, `notifications.receivers[0].url: want an http or https URL, got ftp://h`},
		{`{name: X, url: "http://h/"}`, `notifications.receivers[0].name: invalid receiver name "X"`},
		{`{name: x, kind: pager, url: "http://h/"}`, `notifications.receivers[0].kind: unknown kind "pager"`},
	} {
		doc := "regions: [a]\nnotifications:\n  receivers: [" + tc.edit + "]\n  rules: [{name: r, receivers: [nobody], repeat: 5s}]\n"
		_, err := Parse([]byte(doc))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.edit, err, tc.want)
		}
		for _, want := range []string{`rules[0].receivers[0]: no receiver named "nobody"`, `rules[0].repeat: 5s: want 0 (never) or 1m0s to 168h0m0s`} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("got %v, want %q", err, want)
			}
		}
	}
}
