package location

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
)

// NOTIFY (RFC 1996) tells each secondary of a zone that the zone changed, so that it asks
// for the new version at once rather than at its next refresh. Each (zone, secondary) has
// one sender at most, which sends the latest serial: a change that comes while a NOTIFY is
// retried replaces it, so that the senders are bounded by the configured secondaries, not by
// the changes. The first NOTIFY waits 250 ms for its signed answer, each retry twice as long
// as the one before (up to TransferConfig.NotifyTimeout), up to TransferConfig.NotifyAttempts
// sends: a lost datagram costs a quarter of a second, a secondary that is down little.

// notifyFirstWait is how long the first NOTIFY of a change waits for its answer; each retry
// waits twice as long as the one before, up to TransferConfig.NotifyTimeout.
const notifyFirstWait = 250 * time.Millisecond

// notifier sends the NOTIFY messages of a location.
type notifier struct {
	x       *xfr
	mu      sync.Mutex
	targets map[notifyKey]*notifyTarget
	wg      sync.WaitGroup
}

type notifyKey struct {
	zone string
	addr netip.AddrPort
}

// notifyTarget is one secondary of one zone: the SOA to announce next, if any, and whether
// a sender runs.
type notifyTarget struct {
	key     TSIGKey
	pending *dns.SOA
	running bool
}

func newNotifier(x *xfr) *notifier {
	return &notifier{x: x, targets: map[notifyKey]*notifyTarget{}}
}

// notify announces soa, the zone apex's new SOA, to each of secs, signed with its key.
// Targets of zones or secondaries no longer configured are dropped once idle.
func (n *notifier) notify(ctx context.Context, apex string, soa *dns.SOA, secs []Secondary, keys map[string]TSIGKey) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for k, t := range n.targets {
		if k.zone == apex && !t.running && !hasSecondary(secs, k.addr) {
			delete(n.targets, k)
		}
	}
	for _, sec := range secs {
		k := notifyKey{apex, sec.Addr}
		t := n.targets[k]
		if t == nil {
			t = &notifyTarget{}
			n.targets[k] = t
		}
		t.key = keys[sec.Key]
		t.pending = soa
		if !t.running {
			t.running = true
			n.wg.Add(1)
			go n.run(ctx, k, t)
		}
	}
}

func hasSecondary(secs []Secondary, a netip.AddrPort) bool {
	for _, s := range secs {
		if s.Addr == a {
			return true
		}
	}
	return false
}

// wait returns when every sender has stopped (their context ended).
func (n *notifier) wait() { n.wg.Wait() }

// run sends the target's pending SOA until none is pending or ctx ends.
func (n *notifier) run(ctx context.Context, k notifyKey, t *notifyTarget) {
	defer n.wg.Done()
	for {
		n.mu.Lock()
		soa, key := t.pending, t.key
		t.pending = nil
		if soa == nil || ctx.Err() != nil {
			t.running = false
			n.mu.Unlock()
			return
		}
		n.mu.Unlock()
		n.send(ctx, k, key, soa, t)
	}
}

// send sends one NOTIFY of soa to k's secondary until it is answered, the attempts are spent,
// a newer SOA is pending, or ctx ends.
func (n *notifier) send(ctx context.Context, k notifyKey, key TSIGKey, soa *dns.SOA, t *notifyTarget) {
	m := n.x.m
	wait := min(notifyFirstWait, n.x.cfg.NotifyTimeout)
	for attempt := 1; ; attempt++ {
		m.notifySent.WithLabelValues(k.zone).Inc()
		start := time.Now()
		err := n.exchange(k, key, soa, wait)
		if err == nil {
			m.notifyAcked.WithLabelValues(k.zone).Inc()
			m.notifyLatency.Observe(time.Since(start).Seconds())
			return
		}
		m.notifyFailures.WithLabelValues(k.zone).Inc()
		if attempt >= n.x.cfg.NotifyAttempts {
			m.notifyGivenUp.WithLabelValues(k.zone).Inc()
			n.x.s.log.Warn("location: a secondary did not answer NOTIFY; it will see the change at its next refresh",
				"zone", k.zone, "secondary", k.addr, "serial", soa.Serial, "attempts", attempt, "err", err)
			return
		}
		// An answer that came early (an error, a refusal) waits out the rest of the time.
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait - time.Since(start)):
		}
		wait = min(2*wait, n.x.cfg.NotifyTimeout)
		n.mu.Lock()
		newer := t.pending != nil
		n.mu.Unlock()
		if newer {
			return
		}
	}
}

// exchange sends one NOTIFY and waits for its answer, which must be signed with the key and
// say NOERROR.
func (n *notifier) exchange(k notifyKey, key TSIGKey, soa *dns.SOA, wait time.Duration) error {
	msg := new(dns.Msg)
	msg.SetNotify(k.zone)
	msg.Authoritative = true
	msg.Answer = []dns.RR{soa}
	c := &dns.Client{Net: "udp", Timeout: wait}
	if key.Name != "" {
		msg.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
		c.TsigSecret = map[string]string{key.Name: key.Secret}
	}
	r, _, err := c.Exchange(msg, k.addr.String())
	if err != nil {
		return fmt.Errorf("notify %s: %w", k.addr, err)
	}
	if r.Rcode != dns.RcodeSuccess {
		return fmt.Errorf("notify %s: answered %s", k.addr, dns.RcodeToString[r.Rcode])
	}
	return nil
}

// xfrMetrics are the metrics of transfers and NOTIFY.
type xfrMetrics struct {
	transfers      *prometheus.CounterVec
	refused        *prometheus.CounterVec
	active         prometheus.Gauge
	serial         *prometheus.GaugeVec
	notifySent     *prometheus.CounterVec
	notifyAcked    *prometheus.CounterVec
	notifyFailures *prometheus.CounterVec
	notifyGivenUp  *prometheus.CounterVec
	notifyLatency  prometheus.Histogram
}

// newXfrMetrics creates the metrics and registers them on reg; nil registers none.
func newXfrMetrics(reg prometheus.Registerer) (*xfrMetrics, error) {
	m := &xfrMetrics{
		transfers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_location_transfers_total",
			Help: "Zone transfers served, by zone, type (axfr; ixfr with the changes; ixfr_current, the SOA alone; ixfr_axfr, the whole zone for a serial no longer held) and result (ok, aborted).",
		}, []string{"zone", "type", "result"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_location_transfers_refused_total",
			Help: "Zone transfer requests and TSIG-signed queries refused, by reason (not_offered, network, no_key, bad_key, bad_signature, busy, rate, malformed).",
		}, []string{"reason"}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_location_transfers_active",
			Help: "Zone transfers being served.",
		}),
		serial: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_location_zone_serial",
			Help: "The SOA serial of each zone this location transfers out: it rises with every change of the zone as this location answers it.",
		}, []string{"zone"}),
		notifySent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_location_notify_sent_total",
			Help: "NOTIFY messages sent to secondaries, retries included, by zone.",
		}, []string{"zone"}),
		notifyAcked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_location_notify_acked_total",
			Help: "NOTIFY messages a secondary answered NOERROR with a valid signature, by zone.",
		}, []string{"zone"}),
		notifyFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_location_notify_failures_total",
			Help: "NOTIFY messages that got no valid answer in time (each is retried), by zone.",
		}, []string{"zone"}),
		notifyGivenUp: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_location_notify_given_up_total",
			Help: "Changes a secondary was not told of after every retry, by zone: it sees them at its next refresh.",
		}, []string{"zone"}),
		notifyLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_location_notify_duration_seconds",
			Help:    "Time from sending a NOTIFY to its answer.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 8),
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.transfers, m.refused, m.active, m.serial, m.notifySent, m.notifyAcked, m.notifyFailures, m.notifyGivenUp, m.notifyLatency} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
