package notify

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
)

// TestRefusedForGood: a receiver that refuses an event for good (400) or redirects it is
// tried once and the event given up for it, while a receiver that takes it gets it: the
// outbox empties and nothing is retried.
func TestRefusedForGood(t *testing.T) {
	var bad, moved, good atomic.Int32
	srv := func(n *atomic.Int32, code int) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			if code == http.StatusFound {
				http.Redirect(w, r, "http://192.0.2.1/elsewhere", code)
				return
			}
			w.WriteHeader(code)
		}))
		t.Cleanup(s.Close)
		return s.URL
	}
	badURL, movedURL, goodURL := srv(&bad, http.StatusBadRequest), srv(&moved, http.StatusFound), srv(&good, http.StatusNoContent)
	loc := newLocation(t, "loc-a")
	v := &voter{id: "v0", dir: filepath.Join(t.TempDir(), "v0"), raft: freeAddr(t)}
	v.start(t, &Digests{URLs: []string{loc.srv.URL}})
	t.Cleanup(v.kill)
	if err := v.node.Bootstrap(); err != nil {
		t.Fatal(err)
	}
	leaderOf(t, []*voter{v})
	doc, err := config.Parse(fmt.Appendf(nil, `
regions: [r]
notifications:
  receivers: [{name: bad, url: %q}, {name: moved, url: %q}, {name: good, url: %q}]
  rules: [{name: down, checks: [web], send_resolved: false, receivers: [bad, moved, good]}]
`, badURL, movedURL, goodURL))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.node.Apply(&state.Command{Op: state.OpApplyDocument, Document: doc}); err != nil {
		t.Fatal(err)
	}
	loc.state.Store("unhealthy")
	waitFor(t, 10*time.Second, "the firing event delivered or given up for every receiver", func() bool {
		out, _ := v.node.State().Outbox()
		return good.Load() == 1 && len(out) == 0
	})
	time.Sleep(300 * time.Millisecond) // three backoffs' worth: a retry would show
	if bad.Load() != 1 || moved.Load() != 1 || good.Load() != 1 {
		t.Fatalf("requests: refused %d, redirected %d, taken %d; want one each", bad.Load(), moved.Load(), good.Load())
	}
}
