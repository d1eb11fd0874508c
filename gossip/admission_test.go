package gossip

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// admissionPool is a pool, never started, whose admission delegate and refusal log are
// tested directly; its logs go to out.
func admissionPool(t *testing.T, out *bytes.Buffer, now *time.Time) *Pool {
	t.Helper()
	n, err := New(Config{ID: "a", Region: "r1", Roles: RoleChecker, Insecure: true, BindPort: 0,
		Registerer: prometheus.NewRegistry(), Logger: slog.New(slog.NewTextHandler(out, nil)),
		Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Shutdown)
	return n
}

// TestAdmissionRefusesImpossibleNodes: empty and control-character names, impossible
// protocol and delegate versions and metadata that does not decode are refused, and the
// node of this build is admitted.
func TestAdmissionRefusesImpossibleNodes(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1_700_000_000, 0)
	n := admissionPool(t, &out, &now)
	good := func() *memberlist.Node {
		v := n.vsn
		return &memberlist.Node{Name: "b", Meta: encodeMeta(Member{ID: "b", Region: "r1", Roles: RoleLocation}),
			PMin: v[0], PMax: v[1], PCur: v[2], DMin: v[3], DMax: v[4], DCur: v[5], State: memberlist.StateAlive}
	}
	cases := []struct {
		name   string
		edit   func(*memberlist.Node)
		reason string
	}{
		{"this build", func(*memberlist.Node) {}, ""},
		{"empty name", func(p *memberlist.Node) { p.Name = ""; p.Meta = encodeMeta(Member{Region: "r1", Roles: RoleChecker}) }, refusedName},
		{"newline in name", func(p *memberlist.Node) {
			p.Name = "b\nforged"
			p.Meta = encodeMeta(Member{ID: p.Name, Region: "r1", Roles: RoleChecker})
		}, refusedName},
		{"bidi override in name", func(p *memberlist.Node) {
			p.Name = "b\u202e"
			p.Meta = encodeMeta(Member{ID: p.Name, Region: "r1", Roles: RoleChecker})
		}, refusedName},
		{"all versions 0", func(p *memberlist.Node) { p.PMin, p.PMax, p.PCur, p.DMin, p.DMax, p.DCur = 0, 0, 0, 0, 0, 0 }, refusedVersions},
		{"current protocol 0", func(p *memberlist.Node) { p.PCur = 0 }, refusedVersions},
		{"protocol beyond memberlist's", func(p *memberlist.Node) { p.PMax, p.PCur = 200, 200 }, refusedVersions},
		{"range without ours", func(p *memberlist.Node) { p.PMin, p.PMax, p.PCur = 5, 5, 5 }, refusedVersions},
		{"delegate minimum above maximum", func(p *memberlist.Node) { p.DMin = 7 }, refusedVersions},
		{"no metadata", func(p *memberlist.Node) { p.Meta = nil }, refusedMeta},
		{"metadata of another node", func(p *memberlist.Node) { p.Meta = encodeMeta(Member{ID: "c", Region: "r1", Roles: RoleChecker}) }, refusedMeta},
		{"metadata without roles", func(p *memberlist.Node) { p.Meta = encodeMeta(Member{ID: "b", Region: "r1"}) }, refusedMeta},
		{"metadata cut short", func(p *memberlist.Node) { p.Meta = p.Meta[:4] }, refusedMeta},
	}
	for _, c := range cases {
		p := good()
		c.edit(p)
		if got := n.vetNode(p); got != c.reason {
			t.Errorf("%s: refused for %q, want %q", c.name, got, c.reason)
		}
		err := (*admission)(n).NotifyAlive(p)
		if (err != nil) != (c.reason != "") {
			t.Errorf("%s: NotifyAlive %v", c.name, err)
		}
		if err := (*admission)(n).NotifyMerge([]*memberlist.Node{good(), p}); (err != nil) != (c.reason != "") {
			t.Errorf("%s: NotifyMerge %v", c.name, err)
		}
	}
	if got := testutil.ToFloat64(n.m.membersRefused.WithLabelValues(refusedVersions)); got != 10 {
		t.Errorf("vigil_gossip_members_refused_total{reason=versions} %v, want 10", got)
	}
}

// TestRefusalsLoggedAtBoundedRate: 10,000 refusals, of names all different and through
// memberlist's own lines as well, make one line per window, the next one with the counts.
func TestRefusalsLoggedAtBoundedRate(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1_700_000_000, 0)
	n := admissionPool(t, &out, &now)
	mlog := newMemberlistLogger(n.log, n.cfg.Now, n.refuse)
	for i := range 10_000 {
		name := fmt.Sprintf("x%d", i)
		switch i % 3 {
		case 0:
			_ = (*admission)(n).NotifyAlive(&memberlist.Node{Name: name})
		case 1:
			mlog.Printf("[WARN] memberlist: Ignoring an alive message for '%s' (127.0.0.1:%d) because protocol version(s) are wrong: 0 <= 0 <= 0 should be >0", name, i)
		case 2:
			mlog.Printf("[WARN] memberlist: ignoring alive message for '%s' (127.0.0.1:%d) because Vsn is not present", name, i)
		}
		mlog.Printf("[WARN] memberlist: ignoring alive message for '%s': %v", name, refusalError(refusedMeta))
		if i == 4_999 {
			now = now.Add(refusedEvery)
		}
	}
	lines := strings.Count(out.String(), "\n")
	if lines != 2 || strings.Count(out.String(), "refused members that cannot be nodes") != 2 {
		t.Fatalf("%d lines for 10,000 refusals, want 2:\n%s", lines, out.String())
	}
	if !strings.Contains(out.String(), "versions=5000") {
		t.Errorf("second line does not count the versions refused since the first:\n%s", out.String())
	}
}

// TestMemberlistLogKindsBounded: lines that differ each (a node name or port in each) make
// at most maxKinds+1 lines a window.
func TestMemberlistLogKindsBounded(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1_700_000_000, 0)
	l := newMemberlistLogger(slog.New(slog.NewTextHandler(&out, nil)), func() time.Time { return now }, nil)
	for i := range 5000 {
		l.Printf("[ERR] memberlist: Conflicting address for n%d. Mine: 127.0.0.1:1 Theirs: 127.0.0.1:%d", i, i)
	}
	if got := strings.Count(out.String(), "\n"); got != maxKinds+1 {
		t.Errorf("%d lines for 5,000 different lines, want %d", got, maxKinds+1)
	}
}

func TestIgnoredNode(t *testing.T) {
	for _, c := range []struct{ line, reason, name string }{
		{"memberlist: ignoring alive message for 'it's' (127.0.0.1:9) because Vsn is not present", refusedVersions, "it's"},
		{"memberlist: ignoring alive message for '': " + refusalError(refusedName).Error(), "", ""},
		{"memberlist: ignoring alive message for 'x': some other reason", "", ""},
	} {
		reason, name, ok := ignoredNode(c.line)
		if reason != c.reason || name != c.name || ok != (c.line != "memberlist: ignoring alive message for 'x': some other reason") {
			t.Errorf("%q: %q %q %v", c.line, reason, name, ok)
		}
	}
}
