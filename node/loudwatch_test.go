package node

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuffer is a log sink a test reads while the node writes to it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines returns the lines that contain every one of parts.
func (b *logBuffer) lines(parts ...string) []string {
	var out []string
	for l := range strings.SplitSeq(b.String(), "\n") {
		ok := l != ""
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

// A data-plane node that cannot read the configuration says so at the default log level, once
// per cause and voter, not at every retry: with a token the voter refuses, a WARN line names
// the voter's URL and 401; with a -control URL where nothing listens, the URL and "connection
// refused". /readyz says the same while the node serves nothing. The control: a node with the
// right token gets its configuration and logs no warning of the watch.
func TestWatchFailuresAreLoudAndLocated(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	_, api := startVoter(t, demoDoc(t, targets), nil)
	nobody := "http://" + freeAddr(t)

	run := func(id string, voters []string, token string) (*started, *logBuffer) {
		logs := &logBuffer{}
		cfg := dataNode(t, id, "us-east", t.TempDir(), voters)
		cfg.Token = token
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})).With("id", id)
		return start(t, mustNew(t, cfg)), logs
	}
	wrong, wrongLogs := run("wrong-token", []string{api}, "not-a-token-the-voter-knows")
	absent, absentLogs := run("no-voter", []string{nobody}, testToken)
	good, goodLogs := run("good", []string{api}, testToken)

	readyz := func(s *started) (int, string) {
		resp, err := http.Get("http://" + s.HTTPAddr() + "/readyz")
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		s     *started
		logs  *logBuffer
		voter string
		cause string
	}{{wrong, wrongLogs, api, "401 Unauthorized"}, {absent, absentLogs, nobody, "connection refused"}} {
		eventually(t, 10*time.Second, c.s.cfg.ID+": a WARN line with the voter and the cause", func() (bool, string) {
			l := c.logs.lines("level=WARN", c.voter, c.cause)
			return len(l) > 0, c.logs.String()
		})
		t.Logf("%s: %s", c.s.cfg.ID, c.logs.lines("level=WARN", c.voter)[0])
		eventually(t, 5*time.Second, c.s.cfg.ID+": /readyz names the voter and the cause", func() (bool, string) {
			code, body := readyz(c.s)
			return code == http.StatusServiceUnavailable && strings.Contains(body, c.voter) && strings.Contains(body, c.cause), fmt.Sprint(code, " ", body)
		})
		_, body := readyz(c.s)
		t.Logf("%s: /readyz %s", c.s.cfg.ID, strings.TrimSpace(body))
		ci := c.s.ConfigInfo()
		if ci.LastErrorVoter != c.voter || ci.LastErrorCause != c.cause || !strings.Contains(ci.Message, c.voter) {
			t.Errorf("%s: config info %+v, want the voter %s and the cause %s", c.s.cfg.ID, ci, c.voter, c.cause)
		}
	}
	// The node retries every 2s at most: within 5s more it has retried, and logged nothing new.
	before := len(wrongLogs.lines("level=WARN", api))
	time.Sleep(5 * time.Second)
	if after := len(wrongLogs.lines("level=WARN", api)); after != before {
		t.Errorf("the same failure was logged again within a minute: %d WARN lines, then %d:\n%s", before, after, wrongLogs.String())
	}
	if n := testutilFailures(t, wrong); n < 3 {
		t.Errorf("%g failed reads counted in 5s, want the retries to go on", n)
	}
	eventually(t, 10*time.Second, "good: a configuration", func() (bool, string) {
		ci := good.ConfigInfo()
		return ci.Index > 0, fmt.Sprintf("%+v", ci)
	})
	if l := goodLogs.lines("level=WARN", "control:"); len(l) > 0 {
		t.Errorf("the node with the right token warned: %q", l)
	}
}

// testutilFailures reads vigil_config_watch_failures_total from the node's metrics.
func testutilFailures(t *testing.T, s *started) float64 {
	t.Helper()
	mfs, err := s.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "vigil_config_watch_failures_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no vigil_config_watch_failures_total")
	return 0
}
