package agent

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/location"
	"github.com/vigil-dns/vigil/location/unboundtest"
)

// The demo zone signed end to end: the control voter generates its keys when the document
// enables signing, the location receives them sealed through the Watcher and signs, and
// Debian's unbound, trusting only the DS the API gives for the parent, validates every answer
// the location gives: the failover record set before and after its primary fails (a real
// probe of a real target), the other policies, a name that does not exist and a type a name
// lacks.
func TestSignedDemoZoneValidatesInUnbound(t *testing.T) {
	if unboundtest.Binary() == "" {
		t.Skip("unbound is not installed (apt-get install -y unbound)")
	}
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	doc := demoDoc(t, targets)
	for i := range doc.Checks {
		if doc.Checks[i].Protocol != config.ProtocolCalculated {
			doc.Checks[i].CheckersPerRegion = 1
		}
	}
	doc.Quorum.FreshnessWindow = config.Duration(time.Second)
	z := &doc.Zones[0]
	z.TTL, z.SOA.Minimum = 1, 1
	z.DNSSEC = &config.DNSSEC{Enabled: true, Keys: "split", DNSKEYTTL: 1}

	if err := doc.Validate(); err != nil {
		t.Fatal(err)
	}
	_, api := startVoter(t, doc, func(vc *Config) {
		vc.DNSSECSecret = testKey
	})
	var view state.DNSSECView
	eventually(t, 10*time.Second, "the zone's keys and DS", func() (bool, string) {
		req, _ := http.NewRequest(http.MethodGet, api+"/v1/zones/demo.vigil.test/dnssec", nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var body struct{ Data state.DNSSECView }
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return false, err.Error()
		}
		view = body.Data
		return len(view.DS) == 1 && len(view.Keys) == 2, fmt.Sprintf("%+v", view)
	})

	acfg := dataNode(t, "a", "us-east", t.TempDir(), []string{api})
	acfg.DNSSECSecret = testKey
	a := start(t, mustNew(t, acfg))
	eventually(t, 15*time.Second, "the location signs the zone", func() (bool, string) {
		m := new(dns.Msg)
		m.SetQuestion("demo.vigil.test.", dns.TypeDNSKEY)
		m.SetEdns0(1232, true)
		r, err := dns.Exchange(m, a.DNSAddr())
		if err != nil {
			return false, err.Error()
		}
		return len(r.Answer) == 3, r.String()
	})
	u := unboundtest.Start(t, "demo.vigil.test.", a.DNSAddr(), view.DS[0])

	www := func(want string) {
		t.Helper()
		eventually(t, 15*time.Second, "www answers "+want+", validated", func() (bool, string) {
			r := u.Ask(t, "www.demo.vigil.test.", dns.TypeA)
			got := unboundtest.Addrs(r)
			return r.AuthenticatedData && slices.Equal(got, []string{want}), r.String()
		})
	}
	www("192.0.2.1")
	for _, name := range []string{"api", "all", "static"} {
		unboundtest.Secure(t, name, u.Ask(t, name+".demo.vigil.test.", dns.TypeA))
	}
	r := u.Ask(t, "nothing-here.demo.vigil.test.", dns.TypeA)
	unboundtest.Secure(t, "a name that does not exist", r)
	if len(r.Answer) != 0 {
		t.Fatalf("a name that does not exist answered: %v", r)
	}
	r = u.Ask(t, "www.demo.vigil.test.", dns.TypeAAAA)
	unboundtest.Secure(t, "a type the name lacks", r)
	if len(r.Answer) != 0 {
		t.Fatalf("a type the name lacks answered: %v", r)
	}

	targets["us-east"].down.Store(true)
	www("198.51.100.1")
	targets["us-east"].down.Store(false)
	www("192.0.2.1")
}

// A location whose DNSSEC secret does not open a signed zone's keys answers the zone
// unsigned, and says so: /readyz lists it as degraded with the reason, the served zones name
// it as unsigned, and the gauge vigil_location_dnssec_zone_unsigned is 1 for it. A location
// with the right secret signs and is not degraded.
func TestLocationWithoutTheSecretIsDegraded(t *testing.T) {
	targets := map[string]*target{"us-east": newTarget(t), "eu-west": newTarget(t), "sa-east": newTarget(t)}
	doc := demoDoc(t, targets)
	doc.Zones[0].DNSSEC = &config.DNSSEC{Enabled: true, Keys: "combined", DNSKEYTTL: 1}
	if err := doc.Validate(); err != nil {
		t.Fatal(err)
	}
	_, api := startVoter(t, doc, func(vc *Config) { vc.DNSSECSecret = testKey })
	cfg := dataNode(t, "b", "us-east", t.TempDir(), []string{api})
	cfg.DNSSECSecret = []byte("not-the-control-plane-secret-000")
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	b := start(t, mustNew(t, cfg))
	gcfg := dataNode(t, "a", "us-east", t.TempDir(), []string{api})
	gcfg.DNSSECSecret = testKey
	good := start(t, mustNew(t, gcfg))
	const apex = "demo.vigil.test."
	eventually(t, 15*time.Second, "the location without the secret says the zone is unsigned", func() (bool, string) {
		rd := b.Ready()
		var states []location.ZoneState
		for _, z := range b.Zones() {
			if z.Zone == apex {
				states = append(states, z)
			}
		}
		degraded := slices.ContainsFunc(rd.Degraded, func(s string) bool {
			return strings.Contains(s, apex) && strings.Contains(s, "unsigned") && strings.Contains(s, "DNSSEC secret")
		})
		return degraded && len(states) == 1 && strings.Contains(states[0].Unsigned, "DNSSEC secret"),
			fmt.Sprintf("degraded %q, zones %+v", rd.Degraded, states)
	})
	if got := unsignedGauge(t, reg, apex); got != 1 {
		t.Fatalf("vigil_location_dnssec_zone_unsigned{zone=%q} = %v, want 1", apex, got)
	}
	eventually(t, 15*time.Second, "the location with the secret signs", func() (bool, string) {
		m := new(dns.Msg)
		m.SetQuestion(apex, dns.TypeDNSKEY)
		m.SetEdns0(1232, true)
		r, err := dns.Exchange(m, good.DNSAddr())
		if err != nil {
			return false, err.Error()
		}
		return len(r.Answer) > 1, r.String()
	})
	if rd := good.Ready(); slices.ContainsFunc(rd.Degraded, func(s string) bool { return strings.Contains(s, "unsigned") }) {
		t.Fatalf("the location with the secret is degraded: %q", rd.Degraded)
	}
}

// unsignedGauge returns the value of vigil_location_dnssec_zone_unsigned for zone in reg, or
// 0 when it is absent.
func unsignedGauge(t *testing.T, reg *prometheus.Registry, zone string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "vigil_location_dnssec_zone_unsigned" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "zone" && l.GetValue() == zone {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	return 0
}

// The DNSSEC secret is the configured one; the gossip key seals only with the explicit
// insecure fallback, which is warned at start; a node that is neither voter nor location has
// none and refuses one; a short secret is refused.
func TestDNSSECSecretNoSilentFallback(t *testing.T) {
	gossipKey := []byte("gossip-key-0123456789abcdef01234")
	cfg := DefaultConfig()
	cfg.Roles, cfg.Gossip.Keys = RoleControl|RoleLocation, [][]byte{gossipKey}
	if s := dnssecSecret(cfg, testLogger()); s != nil {
		t.Errorf("no secret configured: sealed with %q", s)
	}
	var buf strings.Builder
	cfg.InsecureDNSSECSecretFromGossipKey = true
	if s := dnssecSecret(cfg, testLogger()); string(s) != string(gossipKey) {
		t.Errorf("the insecure fallback: %q, want the gossip key", s)
	}
	warnDNSSEC(cfg, slog.New(slog.NewTextHandler(&buf, nil)))
	if !strings.Contains(buf.String(), "INSECURE") || !strings.Contains(buf.String(), "-dnssec-secret-file") {
		t.Errorf("the fallback's warning: %q", buf.String())
	}
	cfg.InsecureDNSSECSecretFromGossipKey, cfg.DNSSECSecret = false, []byte("the-dnssec-secret-0123456789abcd")
	if s := dnssecSecret(cfg, testLogger()); string(s) != string(cfg.DNSSECSecret) {
		t.Errorf("configured: %q", s)
	}
	bad := func(c Config, want string) {
		t.Helper()
		var errs []string
		c.validateDNSSEC(func(f string, a ...any) { errs = append(errs, fmt.Sprintf(f, a...)) })
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, want) }) {
			t.Errorf("%s: got %q", want, errs)
		}
	}
	checker := cfg
	checker.Roles = RoleChecker
	bad(checker, "only voters (control) and locations")
	if s := dnssecSecret(checker, testLogger()); s != nil {
		t.Error("a checker has a DNSSEC secret")
	}
	short := cfg
	short.DNSSECSecret = []byte("short")
	bad(short, "want at least 16")
	both := cfg
	both.InsecureDNSSECSecretFromGossipKey = true
	bad(both, "exclusive")
}
