package gossip

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// TestMetricsLint registers every metric of a node in a fresh registry and lints the names.
func TestMetricsLint(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	// Touch the vectors so that they are gathered.
	m.received.WithLabelValues("delta").Inc()
	m.receivedV1.WithLabelValues("state").Inc()
	m.refused.WithLabelValues("packet", refusedAuth).Inc()
	m.drop(kindDelta, reasonMalformed)
	m.members.WithLabelValues("eu").Set(1)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 11 {
		t.Errorf("gathered %d metric families, want 11", len(mfs))
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), "vigil_") {
			t.Errorf("%s lacks the vigil_ prefix", mf.GetName())
		}
	}
	if _, err := newMetrics(reg); err == nil {
		t.Error("registering twice in one registry succeeded")
	}
}

// TestConfigErrors: a bad configuration is refused with every problem named.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string
	}{
		{"empty", Config{}, []string{"empty node id", "region must be", "need at least one known role", "no encryption key"}},
		{"short key", Config{ID: "a", Region: "r", Roles: RoleChecker, Keys: [][]byte{[]byte("short")}},
			[]string{"key 0: key is 5 bytes"}},
		{"insecure with keys", Config{ID: "a", Region: "r", Roles: RoleLocation, Keys: [][]byte{testKey}, Insecure: true},
			[]string{"insecure mode and keys are exclusive"}},
		{"tiny interval", Config{ID: "a", Region: "r", Roles: RoleLocation, Insecure: true, HeartbeatInterval: 1},
			[]string{"heartbeat interval 1ns is below 10ms"}},
	} {
		if tc.cfg.Validate() == nil {
			t.Errorf("%s: Validate accepted", tc.name)
		}
		_, err := New(tc.cfg)
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
	}
	if _, err := ParseKey("not base64!"); err == nil {
		t.Error("ParseKey accepted bad base64")
	}
	if k, err := ParseKey("AAAAAAAAAAAAAAAAAAAAAA=="); err != nil || len(k) != 16 {
		t.Errorf("ParseKey of a 16-byte key: %v", err)
	}
}

// TestMeta: node metadata round-trips, with and without an HTTP address; without one it is
// what builds before the field wrote; fields after those known are skipped; bad metadata is
// refused.
func TestMeta(t *testing.T) {
	m := Member{ID: "eu-c0", Region: "eu", Roles: RoleChecker | RoleLocation, Version: "v1.2.3"}
	for _, http := range []string{"", "10.0.0.7:8053"} {
		for _, leaving := range []bool{false, true} {
			m.HTTP, m.Leaving = http, leaving
			got, err := decodeMeta(encodeMeta(m))
			if err != nil || got != m {
				t.Errorf("round trip: %+v, %v", got, err)
			}
		}
	}
	m.HTTP, m.Leaving = "", false
	old := []byte{1, 3, 5, 'e', 'u', '-', 'c', '0', 2, 'e', 'u', 6, 'v', '1', '.', '2', '.', '3'}
	if b := encodeMeta(m); string(b) != string(old) {
		t.Errorf("metadata without an HTTP address: %x, want the earlier format %x", b, old)
	}
	m.HTTP = "h:1"
	if got, err := decodeMeta(append(encodeMeta(m), 2, 'x', 'y')); err != nil || got != m {
		t.Errorf("a later field: %+v, %v; want it skipped", got, err)
	}
	for _, b := range [][]byte{nil, {2, 1}, {1, 0x7f, 0, 0, 0}, {1, 1, 5, 'a'}, {1, 1, 1, 'a', 1, 'b'},
		append(encodeMeta(m), 5, 'a')} {
		if _, err := decodeMeta(b); err == nil {
			t.Errorf("decodeMeta(%x) accepted", b)
		}
	}
	if s := (RoleChecker | RoleLocation).String(); s != "checker+location" {
		t.Errorf("roles string %q", s)
	}
}
