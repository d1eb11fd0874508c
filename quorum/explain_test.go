package quorum

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestExplanationJSON checks the shape the status API prints.
func TestExplanationJSON(t *testing.T) {
	p := defaultPolicy()
	rs := []Report{
		{Checker: "us-1", Region: "us-east", Healthy: true, Latency: 12 * time.Millisecond, Sequence: 7, LastProgress: t0, Reason: "HTTP 200"},
		{Checker: "eu-1", Region: "eu-west", Healthy: true, LastProgress: t0.Add(-time.Minute)},
		{Checker: "sa-1", Region: "sa-east"},
	}
	e := Explain(p, rs, []string{"us-1", "eu-1", "ap-1"}, Verdict{}, t0.Add(time.Second))
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]any{
		"state":             "healthy",
		"served_as_healthy": true,
		"held":              false,
		"rule":              "threshold",
		"explanation":       "1 of 1 fresh report is healthy (100%), more than the 18% threshold: healthy",
		"healthy_threshold": 0.18,
		"min_reporters":     1.0,
		"freshness_window":  "15s",
		"hold":              "1m0s",
		"since":             "2026-11-30T12:00:01Z",
		"never_heard":       []any{"ap-1"},
		"counts": map[string]any{"healthy": 1.0, "unhealthy": 0.0, "fresh": 1.0, "stale": 2.0,
			"never_heard": 1.0},
	} {
		if !reflect.DeepEqual(got[key], want) {
			t.Errorf("%s: got %#v, want %#v", key, got[key], want)
		}
	}
	if _, ok := got["held_since"]; ok {
		t.Error("held_since present while reports are enough")
	}
	votes, _ := got["votes"].([]any)
	if len(votes) != 3 {
		t.Fatalf("votes: %s", b)
	}
	want := []map[string]any{
		{"checker": "us-1", "status": "healthy", "counted": true, "expected": true, "latency": "12ms", "sequence": 7.0,
			"reason": "HTTP 200", "why": "counted healthy: heard 1s ago, within the 15s freshness window"},
		{"checker": "eu-1", "status": "stale", "counted": false, "stale_since": "2026-11-30T11:59:15Z",
			"why": "not counted: stale, last heard 1m1s ago, longer than the 15s freshness window"},
		{"checker": "sa-1", "status": "stale", "counted": false, "expected": false,
			"why": "not counted: never heard making progress"},
	}
	for i, w := range want {
		v := votes[i].(map[string]any)
		for key, val := range w {
			if !reflect.DeepEqual(v[key], val) {
				t.Errorf("vote %d %s: got %#v, want %#v", i, key, v[key], val)
			}
		}
	}
}

// TestExplainAgreesWithEvaluate checks that Explain's verdict is Evaluate's, and that Summary
// round-trips the compact verdict.
func TestExplainAgreesWithEvaluate(t *testing.T) {
	p := Policy{HealthyThreshold: 0.4, MinReporters: 2, FreshnessWindow: 10 * time.Second, Hold: 30 * time.Second, Inverted: true}
	rs := fleet(5, 2)
	rs[0].LastProgress = t0.Add(-time.Minute)
	prev := Evaluate(p, rs, nil, Verdict{}, t0)
	for _, now := range []time.Time{t0, t0.Add(5 * time.Second), t0.Add(20 * time.Second), t0.Add(time.Hour)} {
		v := Evaluate(p, rs, []string{"zz"}, prev, now)
		e := Explain(p, rs, []string{"zz"}, prev, now)
		if e.State != v.State || e.Counts != v.Counts || e.Rule != v.Rule || e.Sentence != v.Sentence() || !e.Since.Equal(v.Since) {
			t.Errorf("at %v: explanation %+v, verdict %+v", now, e, v)
		}
		counted := 0
		for _, vote := range e.Votes {
			if vote.Counted {
				counted++
			}
		}
		if counted != v.Counts.Fresh {
			t.Errorf("at %v: %d votes counted, verdict counted %d", now, counted, v.Counts.Fresh)
		}
		prev = v
	}
}

// TestHeldAndCombinedJSON checks the fields a held verdict and a calculated one add.
func TestHeldAndCombinedJSON(t *testing.T) {
	p := defaultPolicy()
	prev := Evaluate(p, fleet(3, 3), nil, Verdict{}, t0)
	held := Explain(p, fleet(3, 3), nil, prev, t0.Add(20*time.Second))
	b, err := json.Marshal(held)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got["held"] != true || got["held_since"] != "2026-11-30T12:00:20Z" || got["state"] != "healthy" || got["rule"] != "held" {
		t.Errorf("held explanation: %s", b)
	}
	e := ExplainCombined(2, []string{"web", "db"}, []Verdict{{State: StateUnknown}, {State: StateUnhealthy}}, false, false, Verdict{}, t0)
	if b, err = json.Marshal(e); err != nil {
		t.Fatal(err)
	}
	want := `"children":[{"check":"web","state":"unknown","counted_healthy":true},{"check":"db","state":"unhealthy","counted_healthy":false}]`
	if !strings.Contains(string(b), want) || !strings.Contains(string(b), `"min_healthy":2`) || strings.Contains(string(b), "min_reporters") {
		t.Errorf("combined explanation: %s", b)
	}
}

// TestVoteJSONRoundTrip: a vote written as JSON reads back as the same vote (the status API's
// client reads quorum.Vote), and a vote of no known name is refused.
func TestVoteJSONRoundTrip(t *testing.T) {
	p := defaultPolicy()
	rs := []Report{
		{Checker: "us-1", Region: "us-east", Healthy: true, Latency: 12 * time.Millisecond, Sequence: 7, LastProgress: t0, Reason: "ok"},
		{Checker: "eu-1", Region: "eu-west", LastProgress: t0, Reason: "HTTP 503"},
		{Checker: "sa-1", Region: "sa-east", Healthy: true, LastProgress: t0.Add(-time.Hour)},
	}
	e := Explain(p, rs, []string{"us-1"}, Verdict{}, t0.Add(time.Second))
	b, err := json.Marshal(e.Votes)
	if err != nil {
		t.Fatal(err)
	}
	var back []Vote
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, e.Votes) {
		t.Errorf("votes read back\n got %+v\nwant %+v", back, e.Votes)
	}
	if got := []VoteStatus{back[0].Status, back[1].Status, back[2].Status}; !reflect.DeepEqual(got, []VoteStatus{VoteHealthy, VoteUnhealthy, VoteStale}) {
		t.Errorf("statuses %v", got)
	}
	var v Vote
	if err := json.Unmarshal([]byte(`{"status":"withdrawn"}`), &v); err == nil {
		t.Error("a vote named withdrawn was read")
	}
}

// TestRuleText: every rule's name reads back as the rule, and an unknown name is refused.
func TestRuleText(t *testing.T) {
	for r := RuleNone; r <= RuleCombined; r++ {
		b, err := r.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Rule
		if err := back.UnmarshalText(b); err != nil || back != r {
			t.Errorf("rule %s read back as %s (%v)", r, back, err)
		}
	}
	var r Rule
	if err := r.UnmarshalText([]byte("withdrawn")); err == nil {
		t.Error("a rule named withdrawn was read")
	}
}
