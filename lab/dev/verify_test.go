package dev

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/status/verify"
)

// TestDevAnswerVerification: after us-east's
// target goes down, the checkers' verifiers measure the failover of www (from the first
// location's verdict change to every location answering eu-west) and export it; the measured
// time, and the verdict change itself, are within the detection bound (interval × failure
// threshold, plus slack for gossip and a loaded machine).
func TestDevAnswerVerification(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a dev network through a failover")
	}
	n := startTest(t)
	regions := n.cfg.Regions
	const www = "www.demo.vigil.test A"
	eventually(t, 30*time.Second, "www answers us-east everywhere", allAnswer(n, regions, "www.demo.vigil.test", "192.0.2.1"))
	eventually(t, 30*time.Second, "the verifiers find every location agreeing", func() (bool, string) {
		for _, r := range regions {
			rep, ok := n.Verification(r)
			if !ok {
				return false, r + " has no verifier"
			}
			if len(rep.Locations) != len(regions) {
				return false, fmt.Sprintf("%s's verifier asked %d locations", r, len(rep.Locations))
			}
			for _, l := range rep.Locations {
				if l.Outcomes["agree"] == 0 {
					return false, fmt.Sprintf("%s's verifier: %s: %+v", r, l.ID, l)
				}
			}
		}
		return true, ""
	})
	for _, r := range regions {
		if rep, _ := n.Verification(r); rep.Disagreed != 0 || len(rep.Unanswering) != 0 {
			t.Errorf("%s's verifier before any fault: %d disagreed of %d, unanswering %v: %+v", r, rep.Disagreed, rep.Answers, rep.Unanswering, rep.Locations)
		}
	}

	const interval, threshold = time.Second, 3
	bound := interval*threshold + 5*time.Second
	c := Client{BaseURL: n.ControlURL()}
	down := time.Now()
	if _, err := c.SetTargetDown(t.Context(), "us-east", true); err != nil {
		t.Fatal(err)
	}
	// Detection, plus the verifier's settle time (5s) and a few turns of asking.
	eventually(t, bound+20*time.Second, "us-east's verifier measures www's failover", func() (bool, string) {
		rep, _ := n.Verification("us-east")
		for _, cv := range rep.Convergences {
			if cv.RecordSet == www {
				return true, ""
			}
		}
		return false, fmt.Sprintf("convergences %+v, pending %+v", rep.Convergences, rep.Pending)
	})
	rep, _ := n.Verification("us-east")
	for _, cv := range rep.Convergences {
		if cv.RecordSet != www {
			continue
		}
		t.Logf("www failover as us-east-checker-1 measured it: verdict change %v after the fault, every location answering %.2fs later, seen after %.2fs (%d locations changed)",
			cv.Started.Sub(down).Round(time.Millisecond), cv.Seconds, cv.SeenSeconds, cv.Changed)
		if cv.Started.Before(down) || cv.Started.Sub(down) > bound {
			t.Errorf("www's verdict change %v after the fault, want within %v", cv.Started.Sub(down), bound)
		}
		if cv.Seconds < 0 || cv.Seconds > bound.Seconds() {
			t.Errorf("www's measured failover %.2fs, want within %v", cv.Seconds, bound)
		}
		// Seen by asking one record set a second, pending ones every other turn, through the
		// locations' digests (cached for digestAge in the dev network).
		if cv.SeenSeconds < cv.Seconds || cv.SeenSeconds > 20 {
			t.Errorf("www's failover seen after %.2fs, want between %.2fs and 20s", cv.SeenSeconds, cv.Seconds)
		}
		if cv.Changed != len(regions) {
			t.Errorf("www's failover changed %d locations, want %d", cv.Changed, len(regions))
		}
	}
	// Exported: us-east's location serves /metrics for the region's nodes.
	_, body := httpGet(t, "http://"+n.HTTPAddr("us-east")+"/metrics")
	m := regexp.MustCompile(`(?m)^vigil_answer_convergence_seconds_count\{node="us-east-checker-1"\} (\d+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no vigil_answer_convergence_seconds_count of us-east-checker-1 in /metrics")
	}
	if k, _ := strconv.Atoi(m[1]); k < 1 {
		t.Errorf("vigil_answer_convergence_seconds_count %d, want at least 1", k)
	}
	if !regexp.MustCompile(`(?m)^vigil_answer_checks_total\{location="eu-west-location",node="us-east-checker-1",outcome="agree"\} [1-9]`).MatchString(body) {
		t.Errorf("no agreeing answers of eu-west-location counted by us-east-checker-1 in /metrics")
	}
	var b strings.Builder
	_ = verify.WriteReport(&b, rep, time.Now())
	t.Logf("vigil status --addr (us-east-checker-1) verification:\n%s", b.String())
}
