package dev

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPrometheusAndDashboards checks the deploy/ files with promtool, scrapes a running dev
// network with Debian's prometheus binary, and requires every dashboard panel's query (and
// the check variable's) to return at least one series.
func TestPrometheusAndDashboards(t *testing.T) {
	for _, bin := range []string{"prometheus", "promtool"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not installed (Debian package prometheus; .ci/run installs it)", bin)
		}
	}
	promtool := func(args ...string) {
		t.Helper()
		out, err := exec.CommandContext(t.Context(), "promtool", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	promtool("check", "config", "../../deploy/prometheus/prometheus-dev.yml")
	promtool("check", "rules", "../../deploy/prometheus/rules.yml")
	promtool("test", "rules", "../../deploy/prometheus/rules_test.yml")
	compose := strings.ReplaceAll(readFile(t, "../../deploy/prometheus/prometheus-compose.yml"), "/etc/prometheus/rules.yml", abs(t, "../../deploy/prometheus/rules.yml"))
	composeFile := filepath.Join(t.TempDir(), "compose.yml")
	writeFile(t, composeFile, compose)
	promtool("check", "config", composeFile)

	n := startTest(t)
	dir := t.TempDir()
	cfg := readFile(t, "../../deploy/prometheus/prometheus-dev.yml")
	cfg = strings.ReplaceAll(cfg, "127.0.0.1:7700", n.control)
	for i, r := range n.cfg.Regions {
		cfg = strings.ReplaceAll(cfg, "127.0.0.1:770"+strconv.Itoa(i+1), n.HTTPAddr(r))
	}
	cfg = strings.ReplaceAll(cfg, "scrape_interval: 2s", "scrape_interval: 1s")
	writeFile(t, filepath.Join(dir, "prometheus.yml"), cfg)
	writeFile(t, filepath.Join(dir, "rules.yml"), readFile(t, "../../deploy/prometheus/rules.yml"))
	webAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := exec.CommandContext(t.Context(), "prometheus",
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+webAddr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = t.Output(), t.Output()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	// Activity for every panel: queries at every location, and a last-resort answer (every
	// target down, so no record of `all` is healthy).
	for _, r := range n.cfg.Regions {
		if err := n.SetTargetDown(r, true); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "web-us-east unhealthy everywhere", func() (bool, string) {
		for _, r := range n.cfg.Regions {
			if v := n.Verdicts(r)["web-us-east"]; v.State.String() != "unhealthy" {
				return false, r + ": " + v.Sentence
			}
		}
		return true, ""
	})

	var exprs []string
	for _, f := range []string{"../../deploy/grafana/dashboards/overview.json", "../../deploy/grafana/dashboards/check.json"} {
		exprs = append(exprs, dashboardQueries(t, f)...)
	}
	api := "http://" + webAddr
	eventually(t, 60*time.Second, "every panel query returns a series", func() (bool, string) {
		for _, r := range n.cfg.Regions {
			_, _ = answers(n.DNSAddr(r), "all.demo.vigil.test")
		}
		for _, e := range exprs {
			e = strings.ReplaceAll(e, "$check", "web-us-east")
			k, err := seriesCount(api + "/api/v1/query?query=" + url.QueryEscape(e))
			if err != nil || k == 0 {
				return false, fmt.Sprintf("%s: %d series, %v", e, k, err)
			}
		}
		k, err := seriesCount(api + "/api/v1/label/check/values?match[]=vigil_location_verdict")
		if err != nil || k < len(n.cfg.Document.Checks) {
			return false, fmt.Sprintf("check variable: %d values, %v", k, err)
		}
		return true, ""
	})
	t.Logf("%d panel queries checked", len(exprs))

	// The network view's panel, against the real Prometheus: with sa-east cut off (targets
	// up again), sa-east's location is outvoted on the other regions' checks.
	outvoted := ""
	for _, e := range exprs {
		if strings.Contains(e, "group_left () max by (check)") {
			outvoted = e
		}
	}
	if outvoted == "" {
		t.Fatal("overview.json has no outvoted-locations query")
	}
	for _, r := range n.cfg.Regions {
		if err := n.SetTargetDown(r, false); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "every check healthy everywhere", func() (bool, string) {
		for _, r := range n.cfg.Regions {
			for id, v := range n.Verdicts(r) {
				if v.State.String() != "healthy" {
					return false, r + ": " + id + " " + v.Sentence
				}
			}
		}
		return true, ""
	})
	eventually(t, 30*time.Second, "the panel shows no location outvoted", func() (bool, string) {
		byNode, err := nodeValues(api + "/api/v1/query?query=" + url.QueryEscape(outvoted))
		if err != nil {
			return false, err.Error()
		}
		for _, r := range n.cfg.Regions {
			if v, ok := byNode[r+"-location"]; !ok || v != 0 {
				return false, fmt.Sprintf("%v", byNode)
			}
		}
		return true, ""
	})
	if err := n.Cut("sa-east"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the panel shows sa-east-location outvoted", func() (bool, string) {
		byNode, err := nodeValues(api + "/api/v1/query?query=" + url.QueryEscape(outvoted))
		if err != nil {
			return false, err.Error()
		}
		if byNode["sa-east-location"] < 1 || byNode["us-east-location"] != 0 || byNode["eu-west-location"] != 0 {
			return false, fmt.Sprintf("%v", byNode)
		}
		t.Logf("outvoted checks by location: %v", byNode)
		return true, ""
	})
}

// nodeValues GETs a Prometheus instant query and returns each result's value by its node label.
func nodeValues(u string) (map[string]float64, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&r); err != nil {
		return nil, fmt.Errorf("%s: %w", resp.Status, err)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("prometheus: %s", r.Error)
	}
	out := map[string]float64{}
	for _, x := range r.Data.Result {
		s, _ := x.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("value %v: %w", x.Value[1], err)
		}
		out[x.Metric["node"]] = v
	}
	return out, nil
}

// dashboardQueries returns the expression of every panel target of a dashboard file.
func dashboardQueries(t *testing.T, path string) []string {
	t.Helper()
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(readFile(t, path)), &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("%s: panel %q has no query", path, p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, tg.Expr)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no panels", path)
	}
	return out
}

// seriesCount GETs a Prometheus API URL and returns how many results it holds.
func seriesCount(u string) (int, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return 0, err
	}
	var r struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return 0, fmt.Errorf("%s: %w", resp.Status, err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("prometheus: %s", r.Error)
	}
	var vec struct {
		Result []json.RawMessage `json:"result"`
	}
	if json.Unmarshal(r.Data, &vec) == nil && vec.Result != nil {
		return len(vec.Result), nil
	}
	var values []string
	if err := json.Unmarshal(r.Data, &values); err != nil {
		return 0, err
	}
	return len(values), nil
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func abs(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
