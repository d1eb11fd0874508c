package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/calibrate"
)

// receiver is a real HTTP receiver on loopback that records what it accepts.
type receiver struct {
	srv    *httptest.Server
	fail   atomic.Bool // answer 500
	secret []byte
	mu     sync.Mutex
	tried  int      // requests, failed ones included
	keys   []string // accepted events' keys, in order, repeats included
	bodies []string
	badSig int
}

func newReceiver(t *testing.T, secret string, keyOf func(body []byte, r *http.Request) []string) *receiver {
	rc := &receiver{secret: []byte(secret)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.tried++
		if rc.fail.Load() {
			http.Error(w, "down for the test", http.StatusInternalServerError)
			return
		}
		if len(rc.secret) > 0 && !Verify(rc.secret, body, r.Header.Get(HeaderSignature)) {
			rc.badSig++
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		rc.keys = append(rc.keys, keyOf(body, r)...)
		rc.bodies = append(rc.bodies, string(body))
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) snapshot() (tried int, keys []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.tried, slices.Clone(rc.keys)
}

func distinct(keys []string) []string {
	out := slices.Clone(keys)
	slices.Sort(out)
	return slices.Compact(out)
}

// location serves a verdict digest that the test sets.
type location struct {
	srv   *httptest.Server
	state atomic.Value // string: the state of check "web"
}

func newLocation(t *testing.T, id string) *location {
	l := &location{}
	l.state.Store("healthy")
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"location": %q, "region": "r", "checks": [{"id": "web", "state": %q}, {"id": "db", "state": %q}], "overrides": [{"kind": "healthy", "check": "db"}]}`, id, l.state.Load(), l.state.Load())
	}))
	t.Cleanup(l.srv.Close)
	return l
}

// voter is a control voter (raft over TCP on loopback, BoltDB) with its Runner.
type voter struct {
	id, dir, raft string
	node          *control.Server
	stop          context.CancelFunc
	done          chan struct{}
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func (v *voter) start(t *testing.T, src Source) {
	t.Helper()
	var err error
	v.node, err = control.NewServer(control.ServerConfig{ID: v.id, DataDir: v.dir, RaftAddr: v.raft, APIURL: "http://" + v.id, RaftSecret: []byte("notify-test-raft-secret-00000000"),
		Timing:       control.Timing{Heartbeat: 300 * time.Millisecond, Election: 300 * time.Millisecond, LeaderLease: 150 * time.Millisecond, Commit: 20 * time.Millisecond},
		ApplyTimeout: 5 * time.Second, SnapshotThreshold: 8})
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Store: v.node, Source: src, Interval: 100 * time.Millisecond, MinBackoff: 50 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond, AttemptTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	v.stop, v.done = cancel, make(chan struct{})
	go func() { defer close(v.done); _ = r.Run(ctx) }()
}

// kill stops the runner and the voter as a crash would: its files stay.
func (v *voter) kill() {
	if v.node == nil {
		return
	}
	v.stop()
	<-v.done
	_ = v.node.Close()
	v.node = nil
}

// waitFor waits until cond holds, for within on an idle machine scaled by the slowdown
// measured meanwhile (internal/calibrate).
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	m := calibrate.Start()
	defer m.Stop()
	for !cond() {
		if !m.Within(within) {
			t.Fatalf("timed out after %v of an idle machine (%v) waiting for %s", within, m.Reading(), what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// onLeader runs fn on the leader until it succeeds (a leadership change under load fails a
// write), for at most 10s.
func onLeader(t *testing.T, vs []*voter, what string, fn func(l *voter) error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err = fn(leaderOf(t, vs)); err == nil {
			return
		}
	}
	t.Fatalf("%s: %v", what, err)
}

func leaderOf(t *testing.T, vs []*voter) *voter {
	t.Helper()
	var l *voter
	waitFor(t, 10*time.Second, "a leader", func() bool {
		for _, v := range vs {
			if v.node != nil && v.node.IsLeader() {
				l = v
				return true
			}
		}
		return false
	})
	return l
}

var slackKey = regexp.MustCompile(`\(([^()]+/[0-9]+/[a-z0-9-]+)\)"}$`)

// TestOneNotificationPerEventAcrossLeaderChange runs three voters, each with its Runner, three
// locations' digests and three real receivers (webhook with HMAC, Slack-compatible,
// Alertmanager-compatible) on loopback. The check goes down at two locations while the webhook
// fails; the leader is killed while it retries, the webhook recovers, the new leader
// delivers; the killed voter restarts; the check recovers. Each receiver must accept exactly
// one firing and one resolved event (by key), the webhook's signed; a check that goes down
// under a maintenance override (db) alerts nobody.
func TestOneNotificationPerEventAcrossLeaderChange(t *testing.T) {
	web := newReceiver(t, "s3cret", func(body []byte, r *http.Request) []string {
		var e Event
		if json.Unmarshal(body, &e) != nil || e.Key != r.Header.Get(HeaderKey) {
			return []string{"malformed"}
		}
		return []string{e.Key}
	})
	slack := newReceiver(t, "", func(body []byte, _ *http.Request) []string {
		if m := slackKey.FindSubmatch(body); m != nil {
			return []string{string(m[1])}
		}
		return []string{"malformed: " + string(body)}
	})
	am := newReceiver(t, "", func(body []byte, r *http.Request) []string {
		var as []amAlert
		if r.URL.Path != "/api/v2/alerts" || json.Unmarshal(body, &as) != nil {
			return []string{"malformed"}
		}
		var out []string
		for _, a := range as {
			state := "firing"
			if !a.EndsAt.IsZero() && !a.EndsAt.After(time.Now()) {
				state = "resolved"
			}
			out = append(out, a.Labels["alertname"]+"/"+a.Labels["check"]+"/"+state)
		}
		return out
	})
	locs := []*location{newLocation(t, "loc-a"), newLocation(t, "loc-b"), newLocation(t, "loc-c")}
	src := &Digests{URLs: []string{locs[0].srv.URL, locs[1].srv.URL, locs[2].srv.URL}, Timeout: 500 * time.Millisecond}
	base := t.TempDir()
	vs := make([]*voter, 3)
	for i := range vs {
		vs[i] = &voter{id: fmt.Sprintf("v%d", i), dir: filepath.Join(base, fmt.Sprint(i)), raft: freeAddr(t)}
		vs[i].start(t, src)
	}
	t.Cleanup(func() {
		for _, v := range vs {
			v.kill()
		}
	})
	if err := vs[0].node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	leaderOf(t, vs)
	for _, v := range vs[1:] {
		onLeader(t, vs, "add voter "+v.id, func(l *voter) error {
			_, err := l.node.AddVoter(state.Voter{ID: v.id}, v.raft)
			return err
		})
	}
	doc, err := config.Parse([]byte(fmt.Sprintf(`
regions: [r]
notifications:
  receivers:
    - {name: hook, url: %q, secret: s3cret}
    - {name: chat, kind: slack, url: %q}
    - {name: am, kind: alertmanager, url: %q}
  rules:
    - {name: web-down, min_locations: 2, for: 200ms, receivers: [hook, chat, am]}
`, web.srv.URL, slack.srv.URL, am.srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	onLeader(t, vs, "apply the document", func(l *voter) error {
		_, err := l.node.Apply(&state.Command{Op: state.OpApplyDocument, Document: doc})
		return err
	})

	web.fail.Store(true)
	locs[0].state.Store("unhealthy")
	locs[1].state.Store("unhealthy")
	var out []*state.Notification
	var l *voter
	waitFor(t, 10*time.Second, "the webhook to refuse the firing event twice, the others to take it", func() bool {
		n, _ := web.snapshot()
		l = leaderOf(t, vs) // the sender to kill
		out, _ = l.node.State().Outbox()
		return n >= 2 && len(out) == 1 && slices.Equal(out[0].Pending, []string{"hook"})
	})
	if out[0].Kind != state.KindFiring {
		t.Fatalf("outbox before the kill: %+v", out[0])
	}
	firingKey := out[0].Key
	l.kill()
	web.fail.Store(false)
	l2 := leaderOf(t, vs)
	waitFor(t, 15*time.Second, "the new leader to deliver the firing event", func() bool {
		_, keys := web.snapshot()
		return slices.Contains(keys, firingKey)
	})
	l.start(t, src) // the old leader comes back from its files
	waitFor(t, 10*time.Second, "the restarted voter to catch up", func() bool {
		return l.node.State().Index >= l2.node.State().Index
	})
	for _, loc := range locs {
		loc.state.Store("healthy")
	}
	waitFor(t, 15*time.Second, "every receiver to take the resolved event", func() bool {
		ld := leaderOf(t, vs)
		out, _ := ld.node.State().Outbox()
		return len(out) == 0 && len(ld.node.State().Alerts()) == 0
	})
	time.Sleep(500 * time.Millisecond) // any late duplicate decision would show by now

	resolvedKey := strings.TrimSuffix(firingKey, "firing") + "resolved"
	for _, c := range []struct {
		name string
		rc   *receiver
		want []string
	}{
		{"webhook", web, []string{firingKey, resolvedKey}},
		{"slack", slack, []string{firingKey, resolvedKey}},
		{"alertmanager", am, []string{"web-down/web/firing", "web-down/web/resolved"}},
	} {
		tried, keys := c.rc.snapshot()
		t.Logf("%s: %d requests, accepted %v", c.name, tried, keys)
		if got := distinct(keys); !slices.Equal(got, c.want) {
			t.Errorf("%s accepted %v, want exactly the events %v", c.name, got, c.want)
		}
	}
	if web.badSig != 0 {
		t.Errorf("the webhook saw %d bad signatures", web.badSig)
	}
}
