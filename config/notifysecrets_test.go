package config

import "testing"

// TestRedactURL: everything after the host is hidden, and a URL with nothing after it shows
// whole.
func TestRedactURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://hooks.slack.com/services/T0/B0/x": "https://hooks.slack.com/…",
		"https://u:p@am.example:9093/":             "https://am.example:9093/…",
		"https://u@am.example:9093":                "https://am.example:9093/…",
		"http://am.example:9093":                   "http://am.example:9093",
		"http://am.example:9093/":                  "http://am.example:9093",
		"https://h.example/?token=x":               "https://h.example/…",
		"https://h.example#frag":                   "https://h.example/…",
		"not a url":                                "(a URL that does not parse)",
		"http://h/\x7f":                            "(a URL that does not parse)",
	} {
		if got := RedactURL(raw); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", raw, got, want)
		}
	}
}

// TestKeepSecrets: markers and omissions keep the stored secrets by receiver name; a new
// value replaces; SecretClear removes; a marker with nothing stored is an error.
func TestKeepSecrets(t *testing.T) {
	stored := &Notifications{Receivers: []Receiver{{Name: "a", URL: "https://h.example/p/secret", Secret: "k"}}}
	shown := stored.Redacted()
	got, err := shown.KeepSecrets(stored)
	if err != nil || got.Receivers[0] != stored.Receivers[0] {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	if shown.Receivers[0].Secret != SecretSet || stored.Receivers[0].Secret != "k" {
		t.Fatalf("Redacted changed its receiver or did not redact: %+v %+v", shown, stored)
	}
	in := &Notifications{Receivers: []Receiver{{Name: "a", URL: "https://h.example/new", Secret: SecretClear}}}
	if got, err = in.KeepSecrets(stored); err != nil || got.Receivers[0].Secret != "" || got.Receivers[0].URL != "https://h.example/new" {
		t.Fatalf("clear and a new URL: %+v %v", got, err)
	}
	if _, err := (&Notifications{Receivers: []Receiver{{Name: "b", URL: "https://h.example/…", Secret: SecretSet}}}).KeepSecrets(stored); err == nil {
		t.Fatal("markers for a receiver with nothing stored were taken")
	}
}
