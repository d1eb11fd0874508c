package location

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/internal/netkey"
)

// Transfers out: a location hands the zones SetTransfers names to secondary name servers (NSD,
// Knot, BIND, a managed provider) as it answers them now. It serves AXFR (RFC 5936) and IXFR
// (RFC 1995) over TCP to the allowed networks, each request signed with a TSIG key (RFC 8945)
// of the zone's secondaries, and sends NOTIFY (RFC 1996) to the secondaries on every change.
// A loop (run) builds each zone's image (xfr_image.go) whenever the snapshot, the verdicts or
// the signers change, and when the image differs from the last one, gives the zone a new
// serial (serial.go), keeps the differences for IXFR, and notifies (notify.go).

// Defaults of TransferConfig.
const (
	// DefaultMaxTransfers is the number of transfers served at once.
	DefaultMaxTransfers = 8
	// DefaultMaxTransfersPerClient is the number of transfers one client network (a /24 or a
	// /56) is served at once.
	DefaultMaxTransfersPerClient = 2
	// DefaultTransferTimeout is the longest a transfer is served.
	DefaultTransferTimeout = time.Minute
	// DefaultMaxTransferBytes is the most bytes one transfer sends.
	DefaultMaxTransferBytes = 256 << 20
	// DefaultWholeTransferRate is the whole-zone transfers (AXFR, and IXFR answered with the
	// whole zone) served a second, with as many saved up.
	DefaultWholeTransferRate = 20
	// DefaultTransferHistory is the number of changes of each zone kept for IXFR.
	DefaultTransferHistory = 64
	// DefaultNotifyAttempts is the number of times a NOTIFY is sent before it is given up.
	DefaultNotifyAttempts = 6
	// DefaultNotifyTimeout is the longest a NOTIFY waits for its answer.
	DefaultNotifyTimeout = time.Second
)

// TransferConfig bounds the zone transfers and NOTIFY of a location.
type TransferConfig struct {
	// DataDir is the directory where the zones' serials persist, so that they never go back
	// across a restart; empty keeps them in memory (a restart starts them from the clock).
	DataDir string
	// MaxTransfers bounds the transfers served at once; one more is REFUSED. Default
	// DefaultMaxTransfers.
	MaxTransfers int
	// MaxTransfersPerClient bounds the transfers of one client network at once. Default
	// DefaultMaxTransfersPerClient.
	MaxTransfersPerClient int
	// Timeout ends a transfer that takes longer. Default DefaultTransferTimeout.
	Timeout time.Duration
	// MaxBytes ends a transfer that would send more. Default DefaultMaxTransferBytes.
	MaxBytes int64
	// WholeRate bounds the whole-zone transfers (AXFR, and IXFR answered with the whole
	// zone) served a second, beyond which they are REFUSED: they cost the zone's size each,
	// where IXFR costs the changes. Default DefaultWholeTransferRate; negative is unbounded.
	WholeRate int
	// History is the number of changes of each zone kept to answer IXFR; a request for an
	// older serial gets the whole zone. Default DefaultTransferHistory.
	History int
	// NotifyAttempts is the number of times a NOTIFY is sent, each waiting twice as long as
	// the one before for its answer (from 250 ms up to NotifyTimeout), before it is given up.
	// Default DefaultNotifyAttempts.
	NotifyAttempts int
	// NotifyTimeout is the longest a NOTIFY waits for its answer. Default
	// DefaultNotifyTimeout.
	NotifyTimeout time.Duration
}

// ZoneTransfer is what SetTransfers says about one zone.
type ZoneTransfer struct {
	// Allow holds the networks that may transfer the zone.
	Allow []netip.Prefix
	// Secondaries are told of every change by NOTIFY; their keys are the keys that may
	// transfer the zone.
	Secondaries []Secondary
}

// Secondary is one secondary name server of a zone.
type Secondary struct {
	// Addr is where NOTIFY goes.
	Addr netip.AddrPort
	// Key names the TSIG key of the secondary.
	Key string
}

// TSIGKey is a TSIG key (RFC 8945).
type TSIGKey struct {
	// Name is the key's name, a domain name ("vigil-xfr.").
	Name string
	// Algorithm is hmac-sha256, hmac-sha384 or hmac-sha512 (with or without the final dot);
	// empty means hmac-sha256.
	Algorithm string
	// Secret is the key, in base64.
	Secret string
}

// tsigAlgorithms are the TSIG algorithms accepted: HMAC-SHA256 and stronger.
var tsigAlgorithms = map[string]string{
	"hmac-sha256": dns.HmacSHA256, "hmac-sha384": dns.HmacSHA384, "hmac-sha512": dns.HmacSHA512,
}

// xfrSettings are the transfer settings in force, replaced whole by SetTransfers.
type xfrSettings struct {
	zones map[string]*ZoneTransfer // by apex
	keys  map[string]TSIGKey       // by lower-case absolute name; Algorithm canonical
}

// xfr is a server's transfers: settings, each zone's current version, the bounds of the
// transfers being served, the notifier and the metrics.
type xfr struct {
	s        *Server
	cfg      TransferConfig
	settings atomic.Pointer[xfrSettings]
	// versions holds each transferred zone's current version, by apex: replaced whole by the
	// loop, read by transfers.
	versions atomic.Pointer[map[string]*zoneVersion]
	kick     chan struct{}
	serials  *serialStore
	notifier *notifier
	m        *xfrMetrics

	// whole is the budget of whole-zone transfers; nil when unbounded.
	whole *budget

	mu        sync.Mutex
	active    int
	perClient map[netkey.Key]int
}

// zoneVersion is one version of a transferred zone: its serial, SOA, image and the changes
// that led to it. A version is never changed once made.
type zoneVersion struct {
	serial  uint32
	soa     *servedSOA
	soaSigs []dns.RR // the SOA's signatures in a signed zone
	rrs     []dns.RR
	keys    map[string]dns.RR // rrs by their text, for the differences
	texts   map[dns.RR]string // the text of each of rrs, so that the next version prints only new records
	// zone is the compiled zone the version was built from, and names its names in
	// canonical order.
	zone  *zone
	names []string
	// history holds the changes up to this version, oldest first.
	history []*zoneDelta
}

// zoneDelta is one change of a zone, as IXFR sends it.
type zoneDelta struct {
	from, to         *dns.SOA
	fromSigs, toSigs []dns.RR
	deleted, added   []dns.RR
}

// newXfr returns the transfers of s, with cfg's defaults applied.
func newXfr(s *Server, cfg TransferConfig, reg prometheus.Registerer) (*xfr, error) {
	if cfg.MaxTransfers <= 0 {
		cfg.MaxTransfers = DefaultMaxTransfers
	}
	if cfg.MaxTransfersPerClient <= 0 {
		cfg.MaxTransfersPerClient = DefaultMaxTransfersPerClient
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTransferTimeout
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxTransferBytes
	}
	if cfg.WholeRate == 0 {
		cfg.WholeRate = DefaultWholeTransferRate
	}
	if cfg.History <= 0 {
		cfg.History = DefaultTransferHistory
	}
	if cfg.NotifyAttempts <= 0 {
		cfg.NotifyAttempts = DefaultNotifyAttempts
	}
	if cfg.NotifyTimeout <= 0 {
		cfg.NotifyTimeout = DefaultNotifyTimeout
	}
	serials, err := loadSerials(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	m, err := newXfrMetrics(reg)
	if err != nil {
		return nil, err
	}
	x := &xfr{s: s, cfg: cfg, kick: make(chan struct{}, 1), serials: serials, m: m, perClient: map[netkey.Key]int{}}
	if x.whole = newBudget(cfg.WholeRate); x.whole != nil {
		x.whole.burst, x.whole.tokens = float64(cfg.WholeRate), float64(cfg.WholeRate)
	}
	x.notifier = newNotifier(x)
	x.settings.Store(&xfrSettings{zones: map[string]*ZoneTransfer{}, keys: map[string]TSIGKey{}})
	x.versions.Store(&map[string]*zoneVersion{})
	return x, nil
}

// SetTransfers installs the zones this location transfers out, by apex (any case, with or
// without the final dot), and the TSIG keys their secondaries use. A zone absent is not
// transferred (REFUSED) and its SOA serial is the configuration's again. The error lists
// every key that cannot be used (an algorithm weaker than HMAC-SHA256, a secret that is not
// base64) and every secondary whose key is missing; the settings are then not changed.
func (s *Server) SetTransfers(zones map[string]ZoneTransfer, keys []TSIGKey) error {
	st := &xfrSettings{zones: make(map[string]*ZoneTransfer, len(zones))}
	var errs []string
	st.keys, errs = checkKeys(keys)
	for apex, zt := range zones {
		c := ZoneTransfer{Allow: append([]netip.Prefix(nil), zt.Allow...)}
		for _, sec := range zt.Secondaries {
			sec.Key = canonical(sec.Key)
			if _, ok := st.keys[sec.Key]; !ok {
				errs = append(errs, fmt.Sprintf("zone %s: secondary %s: no TSIG key %s on this location", canonical(apex), sec.Addr, sec.Key))
			}
			c.Secondaries = append(c.Secondaries, sec)
		}
		st.zones[canonical(apex)] = &c
	}
	if len(errs) > 0 {
		return fmt.Errorf("location: transfers: %s", strings.Join(errs, "; "))
	}
	s.xfr.settings.Store(st)
	s.xfr.poke()
	return nil
}

// CheckTSIGKeys returns an error that lists every key of keys SetTransfers would refuse: a
// name that is not a domain name, an algorithm weaker than HMAC-SHA256, a secret that is not
// base64 of 16 bytes or more (config.TSIGKeyProblem), a name given twice.
func CheckTSIGKeys(keys []TSIGKey) error {
	if _, errs := checkKeys(keys); len(errs) > 0 {
		return fmt.Errorf("location: tsig keys: %s", strings.Join(errs, "; "))
	}
	return nil
}

// checkKeys returns keys by canonical name with canonical algorithm names, and the problems
// of those it leaves out.
func checkKeys(keys []TSIGKey) (map[string]TSIGKey, []string) {
	out := make(map[string]TSIGKey, len(keys))
	var errs []string
	for _, k := range keys {
		name := canonical(k.Name)
		if why := config.TSIGKeyProblem(k.Name, k.Algorithm, k.Secret); why != "" {
			errs = append(errs, why)
			continue
		}
		if out[name].Name != "" {
			errs = append(errs, fmt.Sprintf("key %s: given twice", name))
			continue
		}
		canon := tsigAlgorithms[config.TSIGAlgorithm(k.Algorithm)]
		out[name] = TSIGKey{Name: name, Algorithm: canon, Secret: k.Secret}
	}
	return out, errs
}

// Serial returns the serial of zone apex as this location answers it now, and whether the
// zone is hosted.
func (s *Server) Serial(apex string) (uint32, bool) {
	z := s.snap.Load().zones[canonical(apex)]
	if z == nil {
		return 0, false
	}
	return z.servedSOA().Serial, true
}

// poke tells the loop that what it transfers may have changed; it never blocks.
func (x *xfr) poke() {
	select {
	case x.kick <- struct{}{}:
	default:
	}
}

// adopt gives the zones of snap that are transferred the SOA of their current version, before
// snap is installed: a zone compiled again answers the serial it had until the loop sees
// whether it changed. The caller holds s.mu.
func (x *xfr) adopt(snap *Snapshot) {
	for apex, v := range *x.versions.Load() {
		if z := snap.zones[apex]; z != nil && z.served.Load() == nil {
			z.served.Store(newServedSOA(z, v.serial))
		}
	}
}

// resignEvery is how often the loop builds the signed zones again although nothing else
// changed, so that their signatures are renewed (they are valid for a week, renewed after
// half of it).
const resignEvery = 10 * time.Minute

// run builds the transferred zones' versions whenever poked, until ctx ends.
func (x *xfr) run(ctx context.Context) {
	t := time.NewTicker(resignEvery)
	defer t.Stop()
	x.update(ctx)
	for {
		select {
		case <-ctx.Done():
			x.notifier.wait()
			return
		case <-x.kick:
		case <-t.C:
		}
		x.update(ctx)
	}
}

// update builds the image of every transferred zone and makes a new version of each that
// changed, then serves its serial and notifies its secondaries. The versions are installed
// before any zone answers its new serial or notifies it: a secondary that hears of a serial
// and asks for it must be served that version, not be told by the last one that it is
// current (it would then wait for its next refresh).
func (x *xfr) update(ctx context.Context) {
	st := x.settings.Load()
	snap, v := x.s.snap.Load(), x.s.verdicts.Load()
	now := x.s.now()
	old := *x.versions.Load()
	next := make(map[string]*zoneVersion, len(st.zones))
	type built struct {
		apex    string
		z       *zone
		zt      *ZoneTransfer
		changed bool
	}
	var done []built
	for apex, zt := range st.zones {
		z := snap.zones[apex]
		if z == nil {
			continue
		}
		prev := old[apex]
		ver, changed, err := x.version(z, prev, v, now)
		if err != nil {
			x.s.log.Error("location: cannot build a zone to transfer; the secondaries keep the last version", "zone", apex, "err", err)
			if prev != nil {
				next[apex] = prev
			}
			continue
		}
		next[apex] = ver
		done = append(done, built{apex, z, zt, changed})
	}
	x.versions.Store(&next)
	for _, b := range done {
		apex, ver := b.apex, next[b.apex]
		if b.z.served.Load() == nil || b.z.served.Load().soa.Serial != ver.serial {
			b.z.served.Store(ver.soa)
			b.z.gen.Add(1)
		}
		x.m.serial.WithLabelValues(apex).Set(float64(ver.serial))
		if b.changed {
			x.notifier.notify(ctx, apex, ver.soa.soa, b.zt.Secondaries, st.keys)
		}
	}
	for apex, ver := range old {
		if next[apex] == nil {
			x.m.serial.DeleteLabelValues(apex)
			if z := snap.zones[apex]; z != nil && z == ver.zone {
				z.served.Store(nil)
				z.gen.Add(1)
			}
		}
	}
}

// version returns the version of zone z under verdicts v at now: prev when nothing a transfer
// carries changed (changed false), else a new one with a new serial.
func (x *xfr) version(z *zone, prev *zoneVersion, v *verdicts, now time.Time) (_ *zoneVersion, changed bool, err error) {
	sg := x.s.signerOf(z.name)
	var names []string
	if prev != nil && prev.zone == z {
		names = prev.names
	} else {
		names = canonicalNames(z)
	}
	rrs, err := x.s.buildImage(z, names, v, sg, now)
	if err != nil {
		return nil, false, err
	}
	keys := make(map[string]dns.RR, len(rrs))
	texts := make(map[dns.RR]string, len(rrs))
	for _, rr := range rrs {
		text, ok := "", false
		if prev != nil {
			text, ok = prev.texts[rr]
		}
		if !ok {
			text = rr.String()
		}
		keys[text], texts[rr] = rr, text
	}
	soaSame := prev != nil && prev.zone.soa.String() == z.soa.String()
	if prev != nil && soaSame && maps.EqualFunc(prev.keys, keys, func(dns.RR, dns.RR) bool { return true }) {
		if prev.zone != z {
			c := *prev
			c.zone, c.names, c.texts = z, names, texts
			return &c, false, nil
		}
		return prev, false, nil
	}
	serial, err := x.serials.next(z.name, now)
	if err != nil {
		x.s.log.Error("location: the zone's serial is not kept on disk; after a restart it may repeat", "zone", z.name, "err", err)
	}
	ver := &zoneVersion{serial: serial, soa: newServedSOA(z, serial), rrs: rrs, keys: keys, texts: texts, zone: z, names: names}
	if sg != nil {
		if ver.soaSigs, err = sg.AppendSignatures(nil, []dns.RR{ver.soa.soa}, now, nil); err != nil {
			return nil, false, err
		}
	}
	if prev != nil {
		d := &zoneDelta{from: prev.soa.soa, to: ver.soa.soa, fromSigs: prev.soaSigs, toSigs: ver.soaSigs}
		for k, rr := range prev.keys {
			if _, ok := keys[k]; !ok {
				d.deleted = append(d.deleted, rr)
			}
		}
		for k, rr := range keys {
			if _, ok := prev.keys[k]; !ok {
				d.added = append(d.added, rr)
			}
		}
		ver.history = x.trim(append(prev.history[:len(prev.history):len(prev.history)], d), len(rrs))
	}
	x.s.log.Debug("location: zone changed", "zone", z.name, "serial", serial)
	return ver, true, nil
}

// trim drops the oldest changes beyond the configured history, and beyond as many records as
// twice the zone's (size) plus 1,000, so that the history costs at most a few zones.
func (x *xfr) trim(h []*zoneDelta, size int) []*zoneDelta {
	if len(h) > x.cfg.History {
		h = h[len(h)-x.cfg.History:]
	}
	total, limit := 0, 2*size+1000
	for i := len(h) - 1; i >= 0; i-- {
		total += len(h[i].deleted) + len(h[i].added)
		if total > limit {
			return h[i+1:]
		}
	}
	return h
}
