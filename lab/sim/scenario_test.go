package sim

import (
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/lab/dev"
	"github.com/vigil-dns/vigil/lab/oracle/answeraudit"
	"github.com/vigil-dns/vigil/quorum"
)

// runScenario runs a named scenario on a fresh dev network and fails the test on any error,
// violation or flip of a healthy endpoint.
func runScenario(t *testing.T, name string) Result {
	t.Helper()
	// Networks on loopback with ports of their own, mostly waiting on timers: two at a time
	// (go test's default -parallel on this machine) halve the package's time.
	t.Parallel()
	sc, err := Scenario(name, dev.DefaultConfig().Regions)
	if err != nil {
		t.Fatal(err)
	}
	return runScript(t, sc)
}

// runScript runs sc on a fresh dev network of the demo configuration and fails the test on
// any error, violation or flip of a healthy endpoint, or when the script's detection and
// recovery were not measured.
func runScript(t *testing.T, sc Script) Result {
	t.Helper()
	res := runChecked(t, sc)
	if res.Detection <= 0 || res.Recovery <= 0 || res.Counted == nil {
		t.Errorf("detection %v, recovery %v: both must have been measured", res.Detection, res.Recovery)
	}
	return res
}

// runChecked runs sc on the network it names with the demo configuration and fails the test
// on any error, violation or flip of a healthy endpoint.
func runChecked(t *testing.T, sc Script) Result {
	t.Helper()
	doc, err := config.Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var timeline strings.Builder
	res, err := Run(t.Context(), Options{
		Script: sc, Document: doc, DataDir: t.TempDir(), Timeline: &timeline,
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelError})),
	})
	var report strings.Builder
	_ = res.WriteReport(&report)
	t.Logf("timeline:\n%s%s", timeline.String(), report.String())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Audit.Violations); n > 0 {
		t.Errorf("%d history violations, first: %v", n, res.Audit.Violations[0])
	}
	checkFlips(t, res)
	if res.Audit.Answers < 100 {
		t.Errorf("only %d answers recorded", res.Audit.Answers)
	}
	checkOracle(t, res)
	skipIfStarved(t, res)
	return res
}

// skipIfStarved skips, after every other assertion, a run whose harness was stalled for
// more than half of its judged time and excused something for it: such a run cannot tell a
// fault from the machine (everything in its stalls' windows is excused), so it does not
// count as a pass. A run that excused nothing, or stalled less, stands.
func skipIfStarved(t *testing.T, res Result) {
	t.Helper()
	excused := len(res.StarvedFlips) + len(res.Audit.Excused)
	if res.Oracle != nil {
		excused += len(res.Oracle.Excused)
	}
	var end time.Time
	for _, a := range res.History.Answers {
		end = later(end, a.Received)
	}
	judged := end.Sub(res.ReadyAt)
	stalled := stalledBetween(res.Stalls, res.ReadyAt, end)
	if excused > 0 && judged > 0 && 2*stalled > judged {
		t.Skipf("the harness was stalled %v of the %v judged and %d findings were excused for it: the run cannot tell a fault from the machine",
			stalled.Round(time.Millisecond), judged.Round(time.Millisecond), excused)
	}
}

// checkFlips fails the test on a flip of a healthy endpoint that no stall of the harness
// explains, and logs those that one does (Result.StarvedFlips).
func checkFlips(t *testing.T, res Result) {
	t.Helper()
	if len(res.Flips) > 0 {
		t.Errorf("healthy endpoints flipped: %v", res.Flips)
	}
	if n := len(res.Audit.Excused); n > 0 {
		t.Logf("excused: %d answers that only a check starved by a stall ≥ probe timeout allowed, first: %v", n, res.Audit.Excused[0])
	}
	if n := len(res.StarvedFlips); n > 0 {
		t.Logf("excused: %d flips of healthy endpoints after stalls ≥ probe timeout (%d stalls, %v in all): %v",
			n, len(res.Stalls), stalledBetween(res.Stalls, time.Time{}, time.Now()), res.StarvedFlips)
	}
}

// checkOracle fails the test unless the independent oracle judged the run and found no
// wrong answer, no flip, and no location with more unanswered queries than its bound.
func checkOracle(t *testing.T, res Result) {
	t.Helper()
	if o := res.Oracle; o == nil || o.Judged < 100 || !o.OK() {
		t.Errorf("oracle: %s (the report above says which)", oracleSummary(res))
	}
}

// oracleSummary says the oracle's figures of res in one line.
func oracleSummary(res Result) string {
	o := res.Oracle
	if o == nil {
		return "did not judge: " + res.OracleErr
	}
	counted, _ := o.UnansweredTotal()
	return fmt.Sprintf("%d judged, %d wrong, %d flips, %d unanswered", o.Judged, len(o.Wrong), len(o.Flips), counted)
}

// TestPartition is the São Paulo story.
func TestPartition(t *testing.T) {
	res := runScenario(t, "partition")
	// During the cut, sa-east answered all.demo.vigil.test with its own endpoint only, and
	// the other locations without it.
	saOnly := answered(res, "sa-east", all, saEast)
	othersWithout := answered(res, "us-east", all, usEast, euWest) && answered(res, "eu-west", all, usEast, euWest)
	if !saOnly || !othersWithout {
		t.Errorf("partition answers: sa-east served only São Paulo: %v; us-east dropped São Paulo: %v", saOnly, othersWithout)
	}
	// sa-east heard that neither us-east nor eu-west works: www in last resort there only.
	if res.Audit.LastResortAt["sa-east"] == 0 || res.Audit.LastResortAt["us-east"] != 0 {
		t.Errorf("last-resort answers by location: %v; want some at sa-east, none at us-east", res.Audit.LastResortAt)
	}
	// The same history against a zone whose failover pair is swapped must fail: the audit
	// sees what the locations really answered.
	doc, err := config.Load("../../examples/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	wrong := answeraudit.New(doc, 0)
	swapped := *wrong.Sets[www]
	swapped.Records = []config.Record{swapped.Records[1], swapped.Records[0]}
	swapped.Records[0].Role, swapped.Records[1].Role = config.RolePrimary, config.RoleSecondary
	wrong.Sets[www] = &swapped
	if v := wrong.Audit(res.History); len(v.Violations) == 0 {
		t.Errorf("an audit of a swapped failover pair found no violation in %d answers", v.Answers)
	}
	for _, l := range res.Regions {
		for id, s := range res.Final[l] {
			if s != quorum.StateHealthy {
				t.Errorf("after the heal, %s at %s is %s", id, l, s)
			}
		}
	}
}

const (
	usEast, euWest, saEast = "192.0.2.1", "198.51.100.1", "203.0.113.1"
	www, all               = "www.demo.vigil.test.", "all.demo.vigil.test."
)

// answered reports whether location answered name with values at least once.
func answered(res Result, location, name string, values ...string) bool {
	for _, a := range res.History.Answers {
		if a.Location == location && a.Name == name && strings.Join(a.Values, " ") == strings.Join(values, " ") {
			return true
		}
	}
	return false
}

// TestAllDown: every endpoint fails; every location answers in last resort, never nothing.
func TestAllDown(t *testing.T) {
	res := runScenario(t, "all-down")
	for _, l := range res.Regions {
		if res.Audit.LastResortAt[l] == 0 {
			t.Errorf("%s never answered in last resort", l)
		}
		if !answered(res, l, all, usEast, euWest, saEast) || !answered(res, l, www, usEast) {
			t.Errorf("%s: no last-resort answer of every record for all, or of the primary for www", l)
		}
	}
}

// TestCascade: one endpoint fails and traffic moves to the others; they fail too, and the
// answers go to last resort, not to an empty answer.
func TestCascade(t *testing.T) {
	res := runScenario(t, "cascade")
	for _, l := range res.Regions {
		if !answered(res, l, www, euWest) || !answered(res, l, all, euWest, saEast) {
			t.Errorf("%s never failed over to the two survivors", l)
		}
		if res.Audit.LastResortAt[l] == 0 {
			t.Errorf("%s never answered in last resort", l)
		}
	}
	if res.Detection <= 0 {
		t.Errorf("no detection time")
	}
}

// TestScriptSplit runs testdata/split-us-eu.txt: one link cut, gossip relays through the
// third region, so nothing flips, then a failover across the split.
func TestScriptSplit(t *testing.T) {
	if testing.Short() {
		t.Skip("long: a third dev network")
	}
	t.Parallel()
	f, err := os.Open("testdata/split-us-eu.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc, err := ParseScript("split-us-eu", f, dev.DefaultConfig().Regions)
	if err != nil {
		t.Fatal(err)
	}
	res := runScript(t, sc)
	for _, l := range res.Regions {
		if !answered(res, l, www, euWest) {
			t.Errorf("%s never failed over while us-east and eu-west were split", l)
		}
	}
}

// TestCheckerOffline: one checker loses its own network. The locations stop counting it; it
// is never counted as unhealthy, and no verdict changes. Other checkers' reports may turn
// unhealthy for a moment on a starved machine (a probe that timed out because nothing ran:
// the first probes of a run at load 20 on 2 cores did), which says nothing of the offline
// checker: the test asks whose unhealthy reports were counted.
func TestCheckerOffline(t *testing.T) {
	const offline = "us-east-checker-1"
	res := runScenario(t, "checker-offline")
	dropped := false
	// starved says the run measured online checkers' probes failing with every target up:
	// the machine, not the network, made them time out, and the offline checker's probes
	// may have timed out the same way before it went offline or after it came back.
	var starved []string
	var offlineUnhealthy []string
	for _, l := range res.Regions {
		for _, id := range []string{"web-us-east", "web-eu-west", "web-sa-east"} {
			c, a := res.Counted[l][id], res.AfterRepair[l][id]
			for _, from := range slices.Concat(c.UnhealthyFrom, a.UnhealthyFrom) {
				if from != offline {
					starved = append(starved, from+" of "+id+" at "+l)
				}
			}
			if slices.Contains(c.UnhealthyFrom, offline) {
				offlineUnhealthy = append(offlineUnhealthy, fmt.Sprintf("%s at %s counted an unhealthy report of %s while it was offline (most unhealthy at once: %d)", id, l, offline, c.MaxUnhealthy))
			}
			// Its probes failed while it was cut off; its canary failed too, so it withdrew
			// instead of reporting them when it came back.
			if slices.Contains(a.UnhealthyFrom, offline) {
				offlineUnhealthy = append(offlineUnhealthy, fmt.Sprintf("%s at %s counted an unhealthy report of %s after it came back", id, l, offline))
			}
			if c.MinFresh == 0 {
				t.Errorf("%s at %s had no fresh report at some point", id, l)
			}
			dropped = dropped || c.MinFresh < c.MaxFresh
		}
	}
	if !dropped {
		t.Errorf("no location ever counted fewer fresh reports: the checker never went offline")
	}
	if len(starved) > 0 {
		t.Logf("unhealthy reports of online checkers, every target up (probes that timed out on a busy machine): %s", strings.Join(starved, "; "))
	}
	for _, m := range offlineUnhealthy {
		if len(starved) > 0 {
			t.Logf("%s; not a failure: online checkers' probes failed in the same run", m)
		} else {
			t.Error(m)
		}
	}
	if res.Audit.LastResort != 0 {
		t.Errorf("%d last-resort answers with every endpoint up", res.Audit.LastResort)
	}
}

// TestControlDown: the control plane is lost and every data-plane node restarts from its disk
// copy; the locations keep answering, and still fail over when a target goes down.
func TestControlDown(t *testing.T) {
	if testing.Short() {
		t.Skip("long: ten agent runtimes restarted one by one")
	}
	res := runScenario(t, "control-down")
	for _, l := range res.Regions {
		if !answered(res, l, www, euWest) {
			t.Errorf("%s never failed over after the restart, the control plane down", l)
		}
	}
	// Only a location's own restart may leave queries unanswered: a small share.
	if v := res.Audit; v.Unanswered*10 > v.Answers {
		t.Errorf("%d queries unanswered, %d answered", v.Unanswered, v.Answers)
	}
}
