package main

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/quorum"
	"github.com/vigil-dns/vigil/status"
)

// listingLocation is a demoLocation that also lists the record sets each check decides, as a
// running location does, so that it serves the DNS view.
type listingLocation struct{ *demoLocation }

func (l listingLocation) HealthSetsOf(id string) []location.SetName {
	return l.srv.Snapshot().HealthSetsOf(id)
}

// TestStatusDNSView: vigil status dns prints, for each record set with a health check, what
// the location answers now, the policy, the rule and whether last resort is in force, from a
// real location server's answers: us-east's and sa-east's targets failing, eu-west's healthy,
// www fails over to eu-west and api and all answer eu-west alone; with every region failing,
// each set answers in last resort (www its primary).
func TestStatusDNSView(t *testing.T) {
	now := time.Now()
	r := func(id, region string, healthy bool) quorum.Report {
		return quorum.Report{Checker: id, Region: region, Healthy: healthy, Reason: "ok", LastProgress: now.Add(-time.Second)}
	}
	three := func(healthy bool) []quorum.Report {
		return []quorum.Report{r("us-1", "us-east", healthy), r("eu-1", "eu-west", healthy), r("sa-1", "sa-east", healthy)}
	}
	serve := func(reports map[string][]quorum.Report) string {
		api, err := status.New(status.Options{Node: demoNode{}, Location: listingLocation{newDemoLocation(t, reports, now)}})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(api)
		t.Cleanup(srv.Close)
		return strings.TrimPrefix(srv.URL, "http://")
	}

	addr := serve(map[string][]quorum.Report{"web-us-east": three(false), "web-eu-west": three(true), "web-sa-east": three(false)})
	code, stdout, stderr := runValidateCmd(t, "status", "--addr", addr, "dns")
	want := []string{
		"location loc-1: 3 record sets consult a health check; 0 in last resort",
		"RECORD SET              ANSWER        POLICY      RULE       LAST RESORT  RECORDS",
		"all.demo.vigil.test. A  198.51.100.1  multivalue  healthy    no           192.0.2.1 web-us-east unhealthy; 198.51.100.1 web-eu-west healthy; 203.0.113.1 web-sa-east unhealthy",
		"api.demo.vigil.test. A  198.51.100.1  weighted    weighted   no           192.0.2.1 web-us-east unhealthy; 198.51.100.1 web-eu-west healthy; 203.0.113.1 web-sa-east unhealthy",
		"www.demo.vigil.test. A  198.51.100.1  failover    secondary  no           192.0.2.1 web-us-east unhealthy; 198.51.100.1 web-eu-west healthy",
	}
	if code != 0 || strings.TrimRight(stdout, "\n") != strings.Join(want, "\n") {
		t.Errorf("vigil status dns: exit %d, stderr %s\n%s\nwant\n%s", code, stderr, stdout, strings.Join(want, "\n"))
	}

	// A search, and a limit below the matching sets.
	code, stdout, _ = runValidateCmd(t, "status", "--addr", addr, "dns", "a", "-limit", "1")
	if code != 0 || !strings.HasPrefix(stdout, "location loc-1: 3 record sets consult a health check, 2 match; 0 in last resort; the first 1 listed (-limit)\n") ||
		!strings.Contains(stdout, "all.demo.vigil.test. A") || strings.Contains(stdout, "api.demo.vigil.test.") {
		t.Errorf("vigil status dns a -limit 1: exit %d\n%s", code, stdout)
	}

	down := serve(map[string][]quorum.Report{"web-us-east": three(false), "web-eu-west": three(false), "web-sa-east": three(false)})
	code, stdout, stderr = runValidateCmd(t, "status", "--addr", down, "dns", "-search", "www")
	if code != 0 || !strings.HasPrefix(stdout, "location loc-1: 3 record sets consult a health check, 1 match; 1 in last resort\n") ||
		!strings.Contains(stdout, "www.demo.vigil.test. A  192.0.2.1  failover  last-resort  yes  ") {
		t.Errorf("vigil status dns -search www, every region down: exit %d, stderr %s\n%s", code, stderr, stdout)
	}
	code, stdout, _ = runValidateCmd(t, "status", "--json", "--addr", down, "dns")
	var l status.AnswerList
	if err := json.Unmarshal([]byte(stdout), &l); code != 0 || err != nil || l.LastResort != 3 || len(l.Answers) != 3 {
		t.Errorf("vigil status --json dns: exit %d, %v, %+v", code, err, l)
	}

	// A location that lists no record sets answers 404: the error says to ask one set.
	plain, err := status.New(status.Options{Node: demoNode{}, Location: newDemoLocation(t, nil, now)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(plain)
	t.Cleanup(srv.Close)
	code, _, stderr = runValidateCmd(t, "status", "--addr", strings.TrimPrefix(srv.URL, "http://"), "dns")
	if code != 1 || !strings.Contains(stderr, "ask one set with /v1/answer?name=NAME") {
		t.Errorf("vigil status dns at a location without the view: exit %d, %s", code, stderr)
	}
}
