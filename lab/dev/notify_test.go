package dev

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestDevNotifications: in the dev network, taking us-east's target down sends exactly one
// firing notification to the webhook (signed, by key) and to the Alertmanager-compatible
// receiver, and bringing it up exactly one resolved; nothing else fires.
func TestDevNotifications(t *testing.T) {
	n := startTest(t)
	regions := n.cfg.Regions
	eventually(t, 20*time.Second, "www answers us-east everywhere", allAnswer(n, regions, "www.demo.vigil.test", "192.0.2.1"))
	c := Client{BaseURL: n.ControlURL()}
	if _, err := c.SetTargetDown(t.Context(), "us-east", true); err != nil {
		t.Fatal(err)
	}
	got := func(receiver, kind string) []Received {
		list, err := c.NotificationsOf(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var out []Received
		for _, r := range list {
			if r.Receiver == receiver && r.Kind == kind {
				out = append(out, r)
			}
		}
		return out
	}
	both := func(kind string) func() (bool, string) {
		return func() (bool, string) {
			w, a := got("webhook", kind), got("alertmanager", kind)
			return len(w) > 0 && len(a) > 0, fmt.Sprintf("webhook %v, alertmanager %v", w, a)
		}
	}
	eventually(t, 20*time.Second, "a firing notification at both receivers", both("firing"))
	time.Sleep(2 * time.Second)
	if _, err := c.SetTargetDown(t.Context(), "us-east", false); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a resolved notification at both receivers", both("resolved"))
	time.Sleep(2 * time.Second) // a duplicate decision would show by now

	list, err := c.NotificationsOf(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var hookKeys, amAlerts []string
	for _, r := range list {
		t.Logf("%s %s %s %s %s", r.At.Format("15:04:05.000"), r.Receiver, r.Kind, r.Key, r.Summary)
		switch r.Receiver {
		case "webhook":
			hookKeys = append(hookKeys, r.Key)
		case "alertmanager":
			amAlerts = append(amAlerts, r.Kind+" "+r.Key)
		}
	}
	slices.Sort(hookKeys)
	hookKeys = slices.Compact(hookKeys)
	if len(hookKeys) != 2 || !strings.HasSuffix(hookKeys[0], "/firing") || hookKeys[1] != strings.TrimSuffix(hookKeys[0], "firing")+"resolved" {
		t.Errorf("webhook events %v: want one firing and one resolved of one alert", hookKeys)
	}
	slices.Sort(amAlerts)
	amAlerts = slices.Compact(amAlerts)
	want := []string{`firing {alertname="check-down", check="web-us-east", source="vigil"}`, `resolved {alertname="check-down", check="web-us-east", source="vigil"}`}
	if !slices.Equal(amAlerts, want) {
		t.Errorf("alertmanager alerts %v, want %v", amAlerts, want)
	}
}

// TestDevNotificationsAfterWalkthrough: the README's five-minute tour of `vigil dev` takes
// us-east's target down and up again as soon as eu-west's location answers the failover;
// `vigil dev notifications` then shows that outage, fired and resolved. The outage lasts
// about as long as the checks' thresholds take, so the dev rule must fire on it at once.
func TestDevNotificationsAfterWalkthrough(t *testing.T) {
	n := startTest(t)
	// As in a network that has run a while: every location has a verdict of the check.
	eventually(t, 20*time.Second, "web-us-east healthy at every location", func() (bool, string) {
		for _, r := range n.cfg.Regions {
			_, body := httpGet(t, "http://"+n.HTTPAddr(r)+"/v1/network/digest")
			if !strings.Contains(body, `{"id":"web-us-east","state":"healthy"`) {
				return false, r + ": " + body
			}
		}
		return true, ""
	})
	c := Client{BaseURL: n.ControlURL()}
	if _, err := c.SetTargetDown(t.Context(), "us-east", true); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "eu-west answers the failover", allAnswer(n, []string{"eu-west"}, "www.demo.vigil.test", "198.51.100.1"))
	if _, err := c.SetTargetDown(t.Context(), "us-east", false); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "a firing and a resolved notification of web-us-east", func() (bool, string) {
		list, err := c.NotificationsOf(t.Context())
		if err != nil {
			return false, err.Error()
		}
		kinds := map[string]bool{}
		for _, r := range list {
			if strings.Contains(r.Key, "web-us-east") {
				kinds[r.Receiver+" "+r.Kind] = true
			}
		}
		ok := kinds["webhook firing"] && kinds["webhook resolved"] && kinds["alertmanager firing"] && kinds["alertmanager resolved"]
		return ok, fmt.Sprintf("received %v", list)
	})

	// The control API's /metrics shows the notifications' metrics.
	code, body := httpGet(t, n.ControlURL()+"/metrics")
	for _, want := range []string{
		`vigil_notify_deliveries_total{node="dev-control",outcome="delivered",receiver="dev-webhook"}`,
		`vigil_notify_deliveries_total{node="dev-control",outcome="delivered",receiver="dev-alertmanager"}`,
		"vigil_notify_decisions_total", "vigil_notify_alerts_firing",
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("control /metrics (status %d) does not show %s", code, want)
		}
	}
}
