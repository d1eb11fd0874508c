package control

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/vigil-dns/vigil/control/client"
	"github.com/vigil-dns/vigil/control/state"
)

func runWatcher(t testing.TB, cfg client.WatcherConfig) (*client.Watcher, context.CancelFunc) {
	t.Helper()
	w, err := client.NewWatcher(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return w, stop
}

// TestWatcherStaticStability: a Watcher follows the control plane and keeps a copy on disk;
// with the control plane entirely down it keeps serving that copy, also after a restart of
// the node; a node that never saw a configuration says so.
func TestWatcherStaticStability(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "node", "config.json")

	// Never seen: no voter answers, no copy.
	w0, stop0 := runWatcher(t, client.WatcherConfig{Voters: []string{"http://" + freeAddr(t)}, CachePath: cache, RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond})
	time.Sleep(100 * time.Millisecond)
	if s, src := w0.Current(); s != nil || src != state.SourceNone || w0.Status().Source != state.SourceNone || w0.Status().LastError == "" {
		t.Fatalf("never-seen watcher: %v %+v", src, w0.Status())
	}
	stop0()

	c := newCluster(t, 3)
	c.leader(5 * time.Second)
	idx := mustWrite(t, "PUT", c.voters[0].url()+"/v1/document", "application/yaml", testDoc)
	// Only one voter is given: the Watcher learns the others from the state.
	w, stop := runWatcher(t, client.WatcherConfig{Voters: []string{c.voters[1].url()}, CachePath: cache, Wait: 2 * time.Second, RetryMin: 10 * time.Millisecond, RetryMax: 100 * time.Millisecond})
	waitFor(t, 5*time.Second, "the watcher to follow the control plane", func() bool {
		s, src := w.Current()
		return src == state.SourceControlPlane && s != nil && s.Index >= idx
	})
	next := mustWrite(t, "POST", c.voters[0].url()+"/v1/checks", "application/json", checkJSON("web-7", 8087))
	// The voter it reads from goes away; it carries on with another.
	c.stop(1)
	waitFor(t, 5*time.Second, "the watcher to see the next write", func() bool {
		s, _ := w.Current()
		_, ok := s.Check("web-7")
		return ok && s.Index >= next
	})
	if disk, err := client.LoadCache(cache); err != nil || disk.Index < next {
		t.Fatalf("disk copy: %v, %v", disk, err)
	}

	// The control plane goes down entirely: the watcher keeps what it has.
	for i := range c.voters {
		c.stop(i)
	}
	time.Sleep(200 * time.Millisecond)
	if s, src := w.Current(); src != state.SourceControlPlane || s.Index < next {
		t.Fatalf("after the control plane went down: %v %d", src, s.Index)
	}
	stop()

	// The node restarts with the control plane still down: it serves the disk copy, and its
	// metrics say so.
	reg := prometheus.NewRegistry()
	w2, _ := runWatcher(t, client.WatcherConfig{Voters: []string{c.voters[0].url()}, CachePath: cache, RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond, Registerer: reg})
	time.Sleep(100 * time.Millisecond)
	s, src := w2.Current()
	if src != state.SourceDisk || s == nil || s.Index < next {
		t.Fatalf("restart without a control plane: %v %+v", src, w2.Status())
	}
	if _, ok := s.Check("web-7"); !ok || w2.Status().Index != s.Index {
		t.Fatalf("disk copy lacks the last write: %+v", w2.Status())
	}
	want := fmt.Sprintf(`
# HELP vigil_config_watch_index The raft index of the configuration this node runs from; 0 when it has none.
# TYPE vigil_config_watch_index gauge
vigil_config_watch_index %d
# HELP vigil_config_watch_source 1 for where the configuration in use came from: none, disk or control-plane.
# TYPE vigil_config_watch_source gauge
vigil_config_watch_source{source="control-plane"} 0
vigil_config_watch_source{source="disk"} 1
vigil_config_watch_source{source="none"} 0
`, s.Index)
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "vigil_config_watch_index", "vigil_config_watch_source"); err != nil {
		t.Fatal(err)
	}
	if n := counterValue(t, reg, "vigil_config_watch_failures_total"); n < 1 {
		t.Fatalf("failures counted: %v", n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Fatalf("promlint: %v %v", problems, err)
	}
	// No temporary files are left beside the copy and its journal.
	entries, _ := os.ReadDir(filepath.Dir(cache))
	for _, e := range entries {
		if e.Name() != "config.json" && e.Name() != "config.json.journal" {
			t.Fatalf("files beside the copy: %v", entries)
		}
	}
}

// TestWatcherNeverGoesBack: an answer older than the configuration in use is ignored.
func TestWatcherNeverGoesBack(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "config.json")
	newer := state.NewState(mustDoc(t, testDoc))
	newer.Index = 50
	if err := client.SaveCache(cache, newer); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, 1)
	idx := mustWrite(t, "PUT", c.voters[0].url()+"/v1/document", "application/yaml", testDoc)
	if idx >= 50 {
		t.Skipf("cluster index %d already past the copy", idx)
	}
	w, _ := runWatcher(t, client.WatcherConfig{Voters: []string{c.voters[0].url()}, CachePath: cache, Wait: 300 * time.Millisecond})
	waitFor(t, 5*time.Second, "the watcher to hear the voter", func() bool { return !w.Status().LastContact.IsZero() })
	if s, src := w.Current(); s.Index != 50 || src != state.SourceDisk {
		t.Fatalf("went back to index %d (%v)", s.Index, src)
	}
}

// TestCorruptCache: a damaged copy is reported and ignored, never served.
func TestCorruptCache(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cache, []byte(`{"index": 3, "docu`), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := client.NewWatcher(client.WatcherConfig{CachePath: cache})
	if err != nil {
		t.Fatal(err)
	}
	if s, src := w.Current(); s != nil || src != state.SourceNone || w.Status().LastError == "" {
		t.Fatalf("corrupt copy: %v %+v", src, w.Status())
	}
}

// counterValue returns the value of the registry's counter name.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no counter %s", name)
	return 0
}
