package notify

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/syncbuf"
)

// TestDeliveryLogsNoSecret: deliveries that fail (a Slack URL and an Alertmanager URL with a
// password, both at a closed port; a signed webhook answering 500) are logged, retried and
// logged again, and no log line holds the Slack URL's path, the password or the HMAC key.
// The control: net/http's own error for the same request says the whole URL.
func TestDeliveryLogsNoSecret(t *testing.T) {
	const slackPath, amPass, hmacKey = "T0AAA/B0BBB/slackSecretPath93", "am-pass-Wq72", "hmac-key-Lm30"
	closed := freeAddr(t) // nothing listens there
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) }))
	t.Cleanup(hook.Close)
	slackURL := "http://" + closed + "/services/" + slackPath
	amURL := "http://vigil:" + amPass + "@" + closed + "/"

	var logs syncbuf.Buffer
	loc := newLocation(t, "loc-a")
	v := &voter{id: "v0", dir: filepath.Join(t.TempDir(), "v0"), raft: freeAddr(t)}
	var err error
	v.node, err = control.NewServer(control.ServerConfig{ID: v.id, DataDir: v.dir, RaftAddr: v.raft, APIURL: "http://v0", RaftSecret: []byte("notify-test-raft-secret-00000000"),
		Timing:       control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond},
		ApplyTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Store: v.node, Source: &Digests{URLs: []string{loc.srv.URL}}, Interval: 100 * time.Millisecond,
		MinBackoff: 50 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, AttemptTimeout: time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	v.stop, v.done = cancel, make(chan struct{})
	go func() { defer close(v.done); _ = r.Run(ctx) }()
	t.Cleanup(v.kill)
	if err := v.node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	leaderOf(t, []*voter{v})
	doc, err := config.Parse(fmt.Appendf(nil, `
regions: [r]
notifications:
  receivers:
    - {name: chat, kind: slack, url: %q}
    - {name: am, kind: alertmanager, url: %q}
    - {name: hook, url: %q, secret: %q}
  rules: [{name: down, checks: [web], receivers: [chat, am, hook]}]
`, slackURL, amURL, hook.URL+"/in", hmacKey))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.node.Apply(&state.Command{Op: state.OpApplyDocument, Document: doc}); err != nil {
		t.Fatal(err)
	}
	loc.state.Store("unhealthy")
	waitFor(t, 10*time.Second, "two failed attempts logged for each receiver", func() bool {
		l := logs.String()
		for _, name := range []string{"chat", "am", "hook"} {
			if strings.Count(l, "receiver="+name+" ") < 2 {
				return false
			}
		}
		return true
	})
	l := logs.String()
	for _, s := range []string{slackPath, "slackSecretPath", amPass, hmacKey} {
		if strings.Contains(l, s) {
			t.Errorf("the log holds %q:\n%s", s, l)
		}
	}
	if !strings.Contains(l, "http://"+closed+"/…") {
		t.Errorf("the log does not say where the delivery went (redacted):\n%s", l)
	}
	// The control: the error net/http gives for the same request holds the secrets.
	_, err = http.Post(slackURL, "application/json", strings.NewReader("{}"))
	if err == nil || !strings.Contains(err.Error(), slackPath) {
		t.Fatalf("control: net/http's error does not say the URL: %v", err)
	}
	t.Logf("%d log bytes of failed deliveries, none with a secret; control: net/http says %q", len(l), err)
}

// TestRedactError: every form of a delivery error keeps what it says of the failure and loses
// the URL's path, query, user and password.
func TestRedactError(t *testing.T) {
	for _, raw := range []string{
		"http://127.0.0.1:1/services/T0/B0/pathSecret",
		"https://user:passSecret@127.0.0.1:1/",
		"http://127.0.0.1:1/in?token=querySecret",
	} {
		req, err := http.NewRequest(http.MethodPost, raw, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = post(&http.Client{Timeout: time.Second}, req)
		if err == nil {
			t.Fatalf("%s: delivered", raw)
		}
		msg := err.Error()
		if strings.Contains(msg, "Secret") || !strings.Contains(msg, "127.0.0.1:1") || !strings.Contains(msg, "refused") {
			t.Errorf("%s: %q", raw, msg)
		}
	}
	r := &config.Receiver{Name: "bad", URL: "http://h/\x7fpathSecret"}
	if _, err := request(context.Background(), r, []*state.Notification{{Key: "k"}}, time.Now()); err == nil || strings.Contains(err.Error(), "Secret") {
		t.Errorf("a URL that does not parse: %v", err)
	}
}
