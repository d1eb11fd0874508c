package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/status"
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
		n := mustNew(t, cfg)
		if err := n.MountStatus(nil); err != nil {
			t.Fatal(err)
		}
		return start(t, n), logs
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
		// vigil status members says the same.
		sc, err := status.NewClient(c.s.HTTPAddr())
		if err != nil {
			t.Fatal(err)
		}
		info, err := sc.Node(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var members strings.Builder
		if err := status.WriteMembers(&members, info, status.MemberList{}); err != nil {
			t.Fatal(err)
		}
		if m := members.String(); !strings.Contains(m, "the voter at "+c.voter+" failed: "+c.cause) ||
			!strings.Contains(m, "last error reading the control plane at ") || strings.Contains(m, "no voter has answered") {
			t.Errorf("%s: vigil status members does not name the voter and the cause:\n%s", c.s.cfg.ID, m)
		}
		t.Logf("%s: vigil status members:\n%s", c.s.cfg.ID, members.String())
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

// A voter takes a new named token appended to its -token-file within seconds, without a
// restart: a data-plane node reading with that token, refused with 401 until then (WARN),
// gets its configuration and logs that the voter answers again (INFO). A token file that no
// longer parses is refused, counted and logged, and the tokens in use stay.
func TestTokenFileReloadsWithoutRestart(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	voterLogs := &logBuffer{}
	voter, api := startVoter(t, demoDoc(t, targets), func(c *Config) {
		c.Control.TokenFile, c.Control.TokenRecheck = tokenFile, 200*time.Millisecond
		c.Logger = slog.New(slog.NewTextHandler(voterLogs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	})
	secret, line, err := control.NewToken("dataplane-eu", control.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	cfg := dataNode(t, "reader", "eu-west", t.TempDir(), []string{api})
	cfg.Token = secret
	cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	reader := start(t, mustNew(t, cfg))
	eventually(t, 10*time.Second, "the node with the unknown token warns of 401", func() (bool, string) {
		return len(logs.lines("level=WARN", api, "401 Unauthorized")) > 0, logs.String()
	})
	if ci := reader.ConfigInfo(); ci.Index != 0 {
		t.Fatalf("a node with an unknown token got a configuration: %+v", ci)
	}

	appendLine(t, tokenFile, "# the EU data plane\n"+line+"\n")
	took := eventually(t, 10*time.Second, "the appended token works", func() (bool, string) {
		ci := reader.ConfigInfo()
		return ci.Index > 0, fmt.Sprintf("%+v", ci)
	})
	t.Logf("the appended token was taken %v after the write", took.Round(100*time.Millisecond))
	if l := logs.lines("level=INFO", "answers again", api); len(l) != 1 {
		t.Errorf("want one INFO line that the voter answers again, got %q", l)
	}
	if l := voterLogs.lines("level=INFO", "token files reloaded", "named_tokens=1"); len(l) != 1 {
		t.Errorf("want one INFO line of the reload, got %q\n%s", l, voterLogs.String())
	}

	// A broken file is refused: both tokens still work.
	appendLine(t, tokenFile, "ops write sha256:not-hex\n")
	eventually(t, 10*time.Second, "the broken file is refused and counted", func() (bool, string) {
		return reloads(t, voter, "refused") == 1, voterLogs.String()
	})
	if l := voterLogs.lines("level=ERROR", "refused", "sha256"); len(l) != 1 {
		t.Errorf("want one ERROR line of the refusal, got %q", l)
	}
	if n := reloads(t, voter, "loaded"); n != 1 {
		t.Errorf("loaded reloads: %g, want 1", n)
	}
	for _, tok := range []string{testToken, secret} {
		req, _ := http.NewRequest(http.MethodGet, api+"/v1/state", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("after a refused reload, a token in use gets %s", resp.Status)
		}
	}
}

func appendLine(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// reloads reads vigil_control_token_reloads_total{result} from the voter's metrics.
func reloads(t *testing.T, s *started, result string) float64 {
	t.Helper()
	mfs, err := s.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "vigil_control_token_reloads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// A checker whose -join names no gossip peer that listens is alone: its reports reach no
// location. It says so at WARN with the peer and "connection refused", not again at every
// rejoin (once a second here) within a minute, and /readyz names the peer and the cause.
// The control: a checker that joins a live peer warns of nothing.
func TestGossipJoinFailureIsLoud(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	_, api := startVoter(t, demoDoc(t, targets), nil)
	nobody := freeAddr(t)
	run := func(id string, join ...string) (*started, *logBuffer) {
		logs := &logBuffer{}
		cfg := dataNode(t, id, "us-east", t.TempDir(), []string{api}, join...)
		cfg.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
		return start(t, mustNew(t, cfg)), logs
	}
	alone, aloneLogs := run("alone", nobody)
	first, _ := run("first")
	joined, joinedLogs := run("joined", first.GossipAddr())

	eventually(t, 10*time.Second, "a WARN line with the peer and the cause", func() (bool, string) {
		return len(aloneLogs.lines("level=WARN", "cannot join the pool", nobody, "connection refused")) > 0, aloneLogs.String()
	})
	t.Logf("alone: %s", aloneLogs.lines("level=WARN", "cannot join the pool")[0])
	eventually(t, 5*time.Second, "/readyz names the peer and the cause", func() (bool, string) {
		resp, err := http.Get("http://" + alone.HTTPAddr() + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(string(b), nobody) &&
			strings.Contains(string(b), "connection refused"), string(b)
	})
	time.Sleep(3 * time.Second) // three rejoins at least
	if l := aloneLogs.lines("level=WARN", "cannot join the pool"); len(l) != 1 {
		t.Errorf("want one WARN line within a minute, got %d:\n%s", len(l), strings.Join(l, "\n"))
	}
	eventually(t, 10*time.Second, "the control joins", func() (bool, string) {
		return len(joined.Members()) > 1, fmt.Sprint(joined.Members())
	})
	if l := joinedLogs.lines("level=WARN", "gossip"); len(l) > 0 {
		t.Errorf("a node that joined warned: %q", l)
	}
}
