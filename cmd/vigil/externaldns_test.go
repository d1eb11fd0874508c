package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/internal/syncbuf"
)

// `vigil externaldns` as an operator runs it: on loopback, a name allowed with
// -allowed-hosts, its metrics on their own listener. A Host it does not know and a POST that
// is not the webhook's media type are refused and counted; an owner that is not a valid
// managed_by stops it at start.
func TestExternalDNSCommand(t *testing.T) {
	listen, metrics := freePort(t), freePort(t)
	t.Setenv("VIGIL_TOKEN", "unused")
	args := []string{"-listen", listen, "-metrics-listen", metrics, "-server", "http://" + freePort(t),
		"-zone", "ext.example.test", "-allowed-hosts", "edns.internal"}
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncbuf.Buffer
	done := make(chan int, 1)
	go func() { done <- runExternalDNS(ctx, args, &stdout, &stderr) }()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("exit %d: %s", code, stderr.String())
			}
		case <-time.After(10 * time.Second):
			t.Error("vigil externaldns did not stop within 10s")
		}
	}()
	waitUntil(t, 10*time.Second, "the metrics listener", func() bool { return strings.Contains(stdout.String(), "metrics on") })

	do := func(method, path, host, ctype string) int {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+listen+path, strings.NewReader("[]"))
		if host != "" {
			req.Host = host
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		method, host, ctype string
		want                int
	}{
		{"GET", "", "", http.StatusOK},
		{"GET", "localhost:8888", "", http.StatusOK},
		{"GET", "edns.internal:8888", "", http.StatusOK},
		{"GET", "evil.example", "", http.StatusMisdirectedRequest},
		{"POST", "", "text/plain", http.StatusUnsupportedMediaType},
	} {
		path := "/"
		if c.method == "POST" {
			path = "/adjustendpoints"
		}
		if got := do(c.method, path, c.host, c.ctype); got != c.want {
			t.Errorf("%s %s Host %q Content-Type %q: %d, want %d", c.method, path, c.host, c.ctype, got, c.want)
		}
	}
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, line := range []string{`vigil_externaldns_requests_refused_total{reason="host"} 1`,
		`vigil_externaldns_requests_refused_total{reason="media_type"} 1`} {
		if !strings.Contains(string(body), line) {
			t.Errorf("metrics lack %s:\n%s", line, body)
		}
	}

	var out, errOut bytes.Buffer
	if code := runExternalDNS(context.Background(), []string{"-zone", "ext.example.test", "-owner", "external dns", "-listen", freePort(t)}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "owner") {
		t.Errorf("an invalid -owner: exit %d, %s", code, errOut.String())
	}
}
