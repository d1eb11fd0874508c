package verify

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/calibrate"
	"github.com/vigil-dns/vigil/status"
)

// fakeLocation is a location on loopback: a DNS server answering www with one address and a
// status API serving a digest with one verdict of web-us-east; both can be changed.
type fakeLocation struct {
	mu     sync.Mutex
	answer string
	state  string
	since  time.Time
	silent bool
	// cache serves the digest made at made for this long, as a location's status API does.
	cache   time.Duration
	made    time.Time
	dnsAddr string
	http    *httptest.Server
}

func startFake(t *testing.T, id string) *fakeLocation {
	t.Helper()
	f := &fakeLocation{answer: "192.0.2.1", state: "healthy", since: time.Now()}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.dnsAddr = pc.LocalAddr().String()
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, q *dns.Msg) {
		f.mu.Lock()
		a, silent := f.answer, f.silent
		f.mu.Unlock()
		if silent {
			return
		}
		m := new(dns.Msg)
		m.SetReply(q)
		rr, _ := dns.NewRR(q.Question[0].Name + " 30 IN A " + a)
		m.Answer = append(m.Answer, rr)
		_ = w.WriteMsg(m)
	})}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	f.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		f.mu.Lock()
		if now := time.Now(); now.Sub(f.made) >= f.cache {
			f.made = now
		}
		d := status.Digest{Location: id, GeneratedAt: f.made, Checks: []status.DigestCheck{{ID: "web-us-east", NetworkCell: status.NetworkCell{State: f.state, Since: f.since}}}}
		f.mu.Unlock()
		_ = json.NewEncoder(w).Encode(d)
	}))
	t.Cleanup(f.http.Close)
	return f
}

func (f *fakeLocation) set(fn func(f *fakeLocation)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// waitFor waits until cond holds, for within on an idle machine scaled by the slowdown
// measured meanwhile (internal/calibrate).
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	m := calibrate.Start()
	defer m.Stop()
	for ; m.Within(within); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("%s: not within %v of an idle machine (%v)", what, within, m.Reading())
}

// TestVerifier asks two fake locations over real sockets: they agree; one's verdict changes
// and it answers late, which shows as disagreement; when it answers accordingly the
// convergence is measured from its verdict change; a silent one is reported as not answering.
// The metrics pass promlint.
func TestVerifier(t *testing.T) {
	a, b := startFake(t, "a"), startFake(t, "b")
	doc := &config.Document{Zones: []config.Zone{{Name: "demo.vigil.test.", RecordSets: []config.RecordSet{*www(), {Name: "static.demo.vigil.test.", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.100"}}}}}}}
	reg := prometheus.NewRegistry()
	v, err := New(Options{
		Document: func() *config.Document { return doc },
		Locations: func() []Location {
			return []Location{{ID: "a", Status: a.http.URL, DNS: a.dnsAddr}, {ID: "b", Status: b.http.URL, DNS: b.dnsAddr}}
		},
		Interval: 20 * time.Millisecond, Timeout: 200 * time.Millisecond, Settle: 100 * time.Millisecond, Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = v.Run(t.Context()) }()
	waitFor(t, 5*time.Second, "both agree", func() bool {
		r := v.Report()
		return len(r.Locations) == 2 && r.Answers >= 4 && r.Disagreed == 0
	})
	changed := time.Now()
	b.set(func(f *fakeLocation) { f.state, f.since = "unhealthy", changed })
	waitFor(t, 5*time.Second, "b disagrees", func() bool {
		r := v.Report()
		return r.Disagreed > 0 && len(r.Pending) == 1 && r.Pending[0].Waiting[0] == "b"
	})
	time.Sleep(300 * time.Millisecond)
	b.set(func(f *fakeLocation) { f.answer = "198.51.100.1" })
	answered := time.Now()
	waitFor(t, 5*time.Second, "convergence measured", func() bool { return len(v.Report().Convergences) == 1 })
	c := v.Report().Convergences[0]
	// b answered against its verdicts for 300ms at least: the failover time, placed by the last
	// disagreement seen, is under the true time by at most a turn; when it was seen, over it.
	if lo, hi := answered.Sub(changed).Seconds(), time.Since(changed).Seconds(); c.Seconds < 0.15 || c.Seconds > lo || c.SeenSeconds < lo || c.SeenSeconds > hi || c.RecordSet != "www.demo.vigil.test A" || c.Changed != 1 {
		t.Errorf("convergence %+v: want www.demo.vigil.test A over 1 location, seconds between 0.15 and %.3f, seen between %.3f and %.3f", c, lo, lo, hi)
	}
	if n := testutil.CollectAndCount(reg, "vigil_answer_convergence_seconds"); n != 1 {
		t.Errorf("convergence histogram: %d series", n)
	}
	if n := testutil.ToFloat64(v.m.checks.WithLabelValues("b", OutcomeDisagree)); n < 1 {
		t.Errorf("b's disagreements counted %v", n)
	}

	a.set(func(f *fakeLocation) { f.silent = true })
	waitFor(t, 5*time.Second, "a reported as not answering", func() bool {
		r := v.Report()
		return len(r.Unanswering) == 1 && r.Unanswering[0] == "a" && strings.Contains(r.Locations[0].Reason, "timeout")
	})
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	rec := httptest.NewRecorder()
	v.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/verification", nil))
	var r Report
	if err := json.NewDecoder(rec.Body).Decode(&r); err != nil || len(r.Convergences) != 1 {
		t.Errorf("GET /v1/verification: %v, %+v", err, r)
	}
}

// TestVerifierUnconfirmed: a location that answers against its verdicts, with its digest
// served from a cache, is counted as disagreeing when the digest was made after the answer
// was asked for, and unconfirmed otherwise; never as agreeing.
func TestVerifierUnconfirmed(t *testing.T) {
	a := startFake(t, "a")
	a.set(func(f *fakeLocation) { f.state, f.cache = "unhealthy", 200*time.Millisecond })
	doc := &config.Document{Zones: []config.Zone{{Name: "demo.vigil.test.", RecordSets: []config.RecordSet{*www()}}}}
	v, err := New(Options{
		Document:  func() *config.Document { return doc },
		Locations: func() []Location { return []Location{{ID: "a", Status: a.http.URL, DNS: a.dnsAddr}} },
		Interval:  20 * time.Millisecond, Timeout: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = v.Run(t.Context()) }()
	waitFor(t, 10*time.Second, "disagreements and unconfirmed ones", func() bool {
		r := v.Report()
		return len(r.Locations) == 1 && r.Locations[0].Outcomes[OutcomeDisagree] >= 2 && r.Locations[0].Outcomes[OutcomeUnconfirmed] >= 2
	})
	if r := v.Report(); r.Locations[0].Outcomes[OutcomeAgree] != 0 || r.DisagreementShare != 1 {
		t.Errorf("a: %+v, share %v", r.Locations[0].Outcomes, r.DisagreementShare)
	}
}

// TestVerifierNameServers: the zone's virtual name servers a location hosts are asked beside
// its main listener, and one that answers against the location's verdicts is named.
func TestVerifierNameServers(t *testing.T) {
	a, other := startFake(t, "a"), startFake(t, "other")
	other.set(func(f *fakeLocation) { f.answer = "198.51.100.1" })
	doc := &config.Document{Zones: []config.Zone{{Name: "demo.vigil.test.", RecordSets: []config.RecordSet{*www()}}}}
	v, err := New(Options{
		Document: func() *config.Document { return doc },
		Locations: func() []Location {
			return []Location{{ID: "a", Status: a.http.URL, DNS: a.dnsAddr, NameServers: map[int]string{3: other.dnsAddr, 4: "127.0.0.1:1"}}}
		},
		ZoneNameServers: func(zone string) []int {
			if zone != "demo.vigil.test." {
				t.Errorf("zone %q", zone)
			}
			return []int{3, 5}
		},
		Interval: 20 * time.Millisecond, Timeout: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = v.Run(t.Context()) }()
	waitFor(t, 5*time.Second, "the name server's disagreement", func() bool {
		r := v.Report()
		return len(r.Locations) == 1 && r.Locations[0].Outcomes[OutcomeDisagree] >= 2
	})
	r := v.Report()
	l := r.Locations[0]
	// Per ask: the main listener agrees, ns 3 disagrees; ns 4 is not the zone's, ns 5 not hosted.
	if l.Server != other.dnsAddr || l.Outcome != OutcomeDisagree || l.Outcomes[OutcomeNoAnswer] != 0 ||
		l.Outcomes[OutcomeAgree] < l.Outcomes[OutcomeDisagree]-1 || l.Outcomes[OutcomeAgree] > l.Outcomes[OutcomeDisagree]+1 {
		t.Errorf("a: %+v", l)
	}
}
