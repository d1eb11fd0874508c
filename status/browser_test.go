package status

import (
	"bytes"
	"context"
	"image/png"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/testproc"
)

// runChromium runs headless Chromium with args and the page URL, and returns its stdout.
// Virtual time lets the page's script fetch and draw before the DOM is dumped.
func runChromium(t *testing.T, bin, url string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--no-first-run", "--disable-extensions", "--disable-background-networking",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=10000"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, url)...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// artifactDir is where the test leaves its screenshots: outside the repository.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(os.TempDir(), "vigil-artifacts")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestPageInBrowser loads the status page of a running HTTP server with the demo scenario's
// verdicts in headless Chromium: the unhealthy check shows as unhealthy in the rendered DOM
// (which only the page's script draws), its evidence opens, and screenshots are saved.
func TestPageInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	bin := testproc.Chromium(t)
	loc := newTestLocation(t)
	demoScenario(loc)
	a, _, _ := newTestAPI(t, loc, nil)
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)

	dom := string(runChromium(t, bin, srv.URL+"/#check=web-eu-west", "--dump-dom"))
	row := func(id string) string {
		m := regexp.MustCompile(`(?s)<tr[^>]*data-check="` + regexp.QuoteMeta(id) + `"[^>]*>(.*?)</tr>`).FindStringSubmatch(dom)
		if m == nil {
			t.Fatalf("no row for %s in the rendered DOM:\n%s", id, dom)
		}
		return m[1]
	}
	verdictCell := regexp.MustCompile(`<td[^>]*class="verdict"[^>]*>`)
	stateAttr := regexp.MustCompile(`data-state="(\w+)"`)
	for id, want := range map[string]string{"web-eu-west": "unhealthy", "web-us-east": "healthy", "web-sa-east": "unknown", "web-majority": "healthy"} {
		r := row(id)
		m := stateAttr.FindStringSubmatch(verdictCell.FindString(r))
		if m == nil || m[1] != want {
			t.Errorf("%s: verdict cell %q, want data-state=%q in\n%s", id, m, want, r)
		}
	}
	if r := row("web-sa-east"); !strings.Contains(r, `data-region="sa-east" data-state="stale"`) {
		t.Errorf("web-sa-east: no stale sa-east cell in\n%s", r)
	}
	if r := row("web-us-east"); !strings.Contains(r, `data-region="sa-east" data-state="unknown"`) {
		t.Errorf("web-us-east: no unknown sa-east cell in\n%s", r)
	}
	ev := regexp.MustCompile(`<section id="evidence"[^>]*>`).FindString(dom)
	if !strings.Contains(ev, `data-check="web-eu-west"`) || !strings.Contains(ev, `data-state="unhealthy"`) || strings.Contains(ev, "hidden") {
		t.Errorf("evidence section not open on web-eu-west: %q", ev)
	}
	if !strings.Contains(dom, "0 of 6 fresh reports are healthy (0%), not more than the 18% threshold: unhealthy") ||
		strings.Count(dom, `<tr data-checker=`) != 6 || !strings.Contains(dom, "ap-9: not counted") {
		t.Errorf("evidence lacks the sentence, the six votes or the absent checker")
	}
	// Ages are counted by the node's clock (t0, in 2026), not the browser's.
	if !regexp.MustCompile(`<tr data-checker="us-1"><td>us-1</td><td>us-east</td><td data-state="unhealthy">unhealthy</td><td>status: HTTP 503</td><td>12ms</td><td>1s ago</td>`).MatchString(dom) {
		t.Errorf("vote of us-1 not drawn as heard 1s ago")
	}
	if !strings.Contains(dom, "4 checks: 2 healthy, 1 unhealthy, 1 unknown.") {
		t.Errorf("summary missing")
	}
	if regexp.MustCompile(`<p id="error"[^>]*>[^<]+`).MatchString(dom) && !strings.Contains(regexp.MustCompile(`<p id="error"[^>]*>`).FindString(dom), "hidden") {
		t.Errorf("the page shows an error")
	}

	screenshots(t, bin, srv.URL+"/#check=web-eu-west", "status-page", 844, 800)
}

// screenshots keeps a phone's (390 pixels wide) and a desktop's (1280) screenshot of url as
// test artifacts named prefix-phone.png and prefix-desktop.png, each checked to be a PNG of
// the size asked.
func screenshots(t *testing.T, bin, url, prefix string, phoneHeight, desktopHeight int) {
	t.Helper()
	for _, shot := range []struct {
		name          string
		width, height int
	}{{"phone", 390, phoneHeight}, {"desktop", 1280, desktopHeight}} {
		path := filepath.Join(artifactDir(t), prefix+"-"+shot.name+".png")
		os.Remove(path)
		runChromium(t, bin, url, "--hide-scrollbars",
			"--screenshot="+path, "--window-size="+strconv.Itoa(shot.width)+","+strconv.Itoa(shot.height))
		f, err := os.Open(path)
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("screenshot %s: %v", path, err)
		}
		if b := img.Bounds(); b.Dx() != shot.width || b.Dy() != shot.height {
			t.Errorf("screenshot %s is %v", path, b)
		}
		t.Logf("screenshot: %s", path)
	}
}

// TestForcedCheckInBrowser: a check forced unhealthy by an override draws, in headless
// Chromium, as unhealthy and forced (the state DNS acts on, with who forced it and the verdict
// underneath), and the summary counts it apart from the healthy.
func TestForcedCheckInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium")
	}
	bin := testproc.Chromium(t)
	loc := newTestLocation(t)
	demoScenario(loc)
	a, _, _ := newTestAPI(t, nil, nil)
	a.opts.Location = overrideLocation{loc, []*state.Override{{ID: "a1", Kind: state.OverrideUnhealthy, Check: "web-us-east",
		Reason: "deploy", Author: "alice", Created: t0.Add(-time.Minute), Expires: t0.Add(time.Hour)}}}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close)

	dom := string(runChromium(t, bin, srv.URL+"/", "--dump-dom"))
	m := regexp.MustCompile(`(?s)<tr[^>]*data-check="web-us-east"[^>]*>(.*?)</tr>`).FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("no row for web-us-east in the rendered DOM:\n%s", dom)
	}
	cell := regexp.MustCompile(`(?s)<td[^>]*class="verdict"[^>]*>.*?</td>`).FindString(m[1])
	for _, want := range []string{`data-state="unhealthy"`, `data-forced="unhealthy"`, "unhealthy (forced)", "by alice", "verdict healthy"} {
		if !strings.Contains(cell, want) {
			t.Errorf("forced check's cell lacks %q: %s", want, cell)
		}
	}
	if !strings.Contains(dom, "4 checks: 1 healthy, 1 unhealthy, 1 unknown; 1 forced by an override (1 unhealthy, 0 healthy).") {
		t.Errorf("the summary does not count the forced check apart")
	}
}
