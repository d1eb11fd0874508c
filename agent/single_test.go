package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// One node with both data-plane roles, on the real network with an encrypted pool: it probes
// the demo's three targets, decides, answers DNS, and its HTTP endpoints say so.
func TestSingleNodeServesDemo(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	cfg := soloConfig(t, "solo", targets)
	cfg.Static.Quorum.FreshnessWindow = 1e9 // 1s: warm quickly
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := start(t, n)
	eventually(t, 10*time.Second, "www answers us-east", func() (bool, string) {
		got, err := query(s.DNSAddr(), "www.demo.vigil.test")
		return err == nil && slices.Equal(got, []string{"192.0.2.1"}), fmtAnswer(got, err)
	})
	eventually(t, 5*time.Second, "www's check decided", func() (bool, string) {
		ex, err := s.ExplainCheck("web-us-east")
		return err == nil && ex.State.String() == "healthy", fmt.Sprint(ex.State, err)
	})
	// Answering as before any verdict (every record healthy) is no change of the answer.
	if ah, err := s.AnswerHistory("www.demo.vigil.test"); err != nil || len(ah) != 0 {
		t.Fatalf("answer history of www while healthy: %+v, %v; want none", ah, err)
	}
	targets["us-east"].down.Store(true)
	eventually(t, 8*time.Second, "www fails over to eu-west", func() (bool, string) {
		got, err := query(s.DNSAddr(), "www.demo.vigil.test")
		return err == nil && slices.Equal(got, []string{"198.51.100.1"}), fmtAnswer(got, err)
	})
	eventually(t, 5*time.Second, "www's answer history holds the failover", func() (bool, string) {
		ah, err := s.AnswerHistory("www.demo.vigil.test")
		ok := err == nil && len(ah) == 1 && slices.Equal(ah[0].From, []string{"192.0.2.1"}) && slices.Equal(ah[0].To, []string{"198.51.100.1"})
		return ok, fmt.Sprintf("%+v %v", ah, err)
	})
	ex, err := s.ExplainCheck("web-us-east")
	if err != nil || ex.State.String() != "unhealthy" || len(ex.Votes) != 1 {
		t.Fatalf("explain web-us-east: %+v, %v", ex, err)
	}
	eventually(t, 5*time.Second, "a report of each of the three probed checks", func() (bool, string) {
		res := s.CheckerResults()
		return len(res) == 3, fmt.Sprint(res)
	})
	eventually(t, 5*time.Second, "/readyz", func() (bool, string) {
		code, body := get(t, "http://"+s.HTTPAddr()+"/readyz")
		return code == http.StatusOK, body
	})
	if code, _ := get(t, "http://"+s.HTTPAddr()+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	code, body := get(t, "http://"+s.HTTPAddr()+"/metrics")
	if code != http.StatusOK || !strings.Contains(body, "vigil_location_queries_total") || !strings.Contains(body, "vigil_checker_probes_total") {
		t.Errorf("/metrics: %d, missing metrics", code)
	}
	info := s.ConfigInfo()
	if info.Source != SourceStatic || info.Checks != 4 {
		t.Errorf("config info: %+v", info)
	}
	var ci ConfigInfo
	if b, _ := json.Marshal(info); json.Unmarshal(b, &ci) != nil {
		t.Errorf("config info does not round-trip JSON")
	}
}

func fmtAnswer(got []string, err error) string {
	b, _ := json.Marshal(got)
	if err != nil {
		return string(b) + " " + err.Error()
	}
	return string(b)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
