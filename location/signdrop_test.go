package location

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
)

// logLines keeps the records a slog.Logger writes, for tests.
type logLines struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logLines) Enabled(context.Context, slog.Level) bool { return true }
func (l *logLines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}
func (l *logLines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logLines) WithGroup(string) slog.Handler      { return l }

// withMessage returns the records of message msg and the sum of their "dropped" attributes.
func (l *logLines) withMessage(msg string) (n int, dropped uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range l.recs {
		if r.Message != msg {
			continue
		}
		n++
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "dropped" {
				dropped += a.Value.Uint64()
			}
			return true
		})
	}
	return n, dropped
}

// TestSignBudgetDropsCountedAndLogged: a flood of new names in a signed zone past the location's
// signing budget gets no response for what cannot be signed (never an unsigned answer); each
// such query is counted in vigil_location_queries_dropped_total{reason="sign_budget"}, and
// logged at most once every ten seconds with the drops since the last line, which add up to
// the count. The control: the same flood without the DO bit is answered whole, nothing
// dropped.
func TestSignBudgetDropsCountedAndLogged(t *testing.T) {
	now := time.Unix(2_000_000, 0)
	var clock sync.Mutex
	lines := &logLines{}
	reg := prometheus.NewRegistry()
	const rate = 20
	s := startServer(t, Config{Registerer: reg, SignBudget: dnssec.NewBudget(rate), Logger: slog.New(lines), Now: func() time.Time {
		clock.Lock()
		defer clock.Unlock()
		return now
	}})
	advance := func(d time.Duration) { clock.Lock(); now = now.Add(d); clock.Unlock() }
	z := config.DefaultZone()
	z.Name = "example.test."
	z.NameServers = []string{"ns.elsewhere.test."}
	z.RecordSets = []config.RecordSet{{Name: "www", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.1"}}}}
	s.SetSnapshot(mustSnapshot(t, []config.Zone{z}, nil))
	sealer, err := dnssec.NewSealer([]byte("sign-budget-test-seal-secret-000"))
	if err != nil {
		t.Fatal(err)
	}
	zk, err := dnssec.InitialKeys("example.test.", dnssec.SchemeCombined, sealer, now.Unix())
	if err != nil {
		t.Fatal(err)
	}
	sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	s.SetSigners(map[string]*dnssec.Signer{"example.test.": sg})

	const msg = "location: queries of signed zones dropped unanswered: the signing budget is spent"
	flood := func(round, n int, do bool) (answered, unsigned int) {
		for i := range n {
			q := query(fmt.Sprintf("r%d-%d.example.test.", round, i), dns.TypeA, 0)
			if do {
				q = doQuery(q.Question[0].Name, dns.TypeA, 1232)
			}
			out := s.Respond(packed(t, q), Request{NameServer: -1})
			if out == nil {
				continue
			}
			answered++
			var r dns.Msg
			if err := r.Unpack(out); err != nil {
				t.Fatal(err)
			}
			signed := false
			for _, rr := range r.Ns {
				signed = signed || rr.Header().Rrtype == dns.TypeRRSIG
			}
			if do && !signed {
				unsigned++
			}
		}
		return answered, unsigned
	}
	// The control: without DO nothing needs signing, nothing is dropped.
	if answered, _ := flood(0, 500, false); answered != 500 {
		t.Fatalf("control, no DO: %d of 500 answered", answered)
	}
	sent, got := 0, 0
	for round, step := range []time.Duration{0, 3 * time.Second, 3 * time.Second, 5 * time.Second, 11 * time.Second} {
		advance(step)
		answered, unsigned := flood(round+1, 500, true)
		if unsigned > 0 {
			t.Fatalf("round %d: %d answers went out unsigned", round, unsigned)
		}
		sent += 500
		got += answered
	}
	dropped := uint64(sent - got)
	// The budget allows its burst (rate) and rate a second after: about 20 + 22×20 signatures
	// over 22 seconds, each denial needing several.
	if dropped < uint64(sent)/2 || got == 0 {
		t.Fatalf("%d of %d answered: want the budget to answer some and drop most", got, sent)
	}
	var counted float64
	for _, f := range mustGather(t, reg) {
		if f.GetName() != "vigil_location_queries_dropped_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == "sign_budget" {
					counted += m.GetCounter().GetValue()
				}
			}
		}
	}
	if uint64(counted) != dropped {
		t.Errorf("vigil_location_queries_dropped_total{reason=\"sign_budget\"} = %v, want %d", counted, dropped)
	}
	// Log lines at 0s, 11s (3+3+5) and 22s: three, over 2,500 queries.
	n, logged := lines.withMessage(msg)
	t.Logf("%d queries, %d answered, %d dropped, %d log lines", sent, got, dropped, n)
	if n != 3 {
		t.Errorf("%d log lines about dropped queries, want 3 (one every ten seconds of the flood)", n)
	}
	if pending := s.signDrops.Load(); logged+pending != dropped {
		t.Errorf("log lines say %d dropped and %d are pending, want %d in all", logged, pending, dropped)
	}
}
