package control

import (
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/internal/syncbuf"
)

// TestWatchFailureCauses: a Watcher names the cause of a failed read in its WARN line and
// status: an https voter read without its CA is "TLS", a voter that refuses the token is
// "401 Unauthorized", one that does not answer in time is "timeout".
func TestWatchFailureCauses(t *testing.T) {
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	refuse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error": "control: the bearer token is not valid for this request"}`, http.StatusUnauthorized)
	}))
	t.Cleanup(refuse.Close)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	for _, c := range []struct {
		url, cause string
		client     *http.Client
	}{
		{tlsSrv.URL, "TLS", nil},
		{refuse.URL, "401 Unauthorized", nil},
		{slow.URL, "timeout", &http.Client{Timeout: 200 * time.Millisecond}},
	} {
		logs := &syncbuf.Buffer{}
		w, _ := runWatcher(t, client.WatcherConfig{Voters: []string{c.url}, Client: c.client, RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(logs, nil))})
		waitFor(t, 5*time.Second, c.cause+" in the status", func() bool {
			st := w.Status()
			return st.LastErrorCause == c.cause && st.LastErrorVoter == c.url && strings.Contains(st.Message, c.url)
		})
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(strings.ReplaceAll(logs.String(), `"`, ""), "cause="+c.cause) {
			t.Errorf("%s: no WARN line with the cause %q:\n%s", c.url, c.cause, logs.String())
		}
		if n := strings.Count(logs.String(), "level=WARN"); n != 1 {
			t.Errorf("%s: %d WARN lines, want one for repeated failures of one cause", c.url, n)
		}
	}
}
