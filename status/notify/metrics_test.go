package notify

import (
	"bytes"
	"os/exec"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/control/state"
)

// stateStore is a Store over a fixed state, for the metrics (it never leads).
type stateStore struct{ s *state.State }

func (s stateStore) IsLeader() bool                       { return false }
func (s stateStore) State() *state.State                  { return s.s }
func (s stateStore) Apply(*state.Command) (uint64, error) { return 0, control.ErrNotLeader }

// TestMetricsLint: the Runner's metrics, with a value each, pass `promtool check metrics`.
func TestMetricsLint(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool not installed (apt-get install prometheus)")
	}
	reg := prometheus.NewRegistry()
	r, err := New(Config{Store: stateStore{state.NewState(&config.Document{})}, Source: &Digests{}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	r.m.outcome("hook", "delivered")
	r.m.decided(&state.NotifyCommand{At: time.Now()})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.CommandContext(t.Context(), "promtool", "check", "metrics")
	cmd.Stdin = &b
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\n%s", err, out, b.String())
	}
	if len(mfs) != 5 {
		t.Errorf("%d metric families, want 5", len(mfs))
	}
}
