package location

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/location/delvtest"
	"github.com/vigil-dns/vigil/location/unboundtest"
)

// The validator differential: a generated corpus of zones (every policy with every no_healthy
// choice, aliases, CNAMEs, wildcards, secure and insecure delegations, a signed and an
// unsigned child hosted beside their signed parent, a set at the size limit, long CAA, TXT
// of many strings, SRV with the target ".") served by one location over real sockets, asked
// by two validators written apart from Vigil and from each other, Debian's unbound and
// BIND's delv, for every name and type, over UDP and over TCP, through eight phases:
//
//	before        every record healthy
//	failover      the primary of each failover set (half of each other set's records) down
//	no-healthy    every record down: each set answers as its no_healthy says
//	recovered     every record healthy again
//	zsk-published the parent's new ZSK published, the old one signing (pre-publication)
//	zsk-signing   the new ZSK signing, the old one still published (TTLs of 1s, real time)
//	csk-rollover  the child's CSK rolled (double signature; the parent serves both DS)
//	after         the CSK rollover finished (forced) and the old DS gone; the old ZSK removed
//
// Between the phases of verdicts the resolvers' caches expire; through the rollovers they
// do not.
//
// The parent proves denials one way (compact denial, NSEC black lies, or its NSEC chain,
// config.DenialNSEC), by the seed, and the signed child the other way.
//
// Every answer must validate (unbound's AD bit, delv's "fully validated") or, in the
// unsigned child, be provably insecure (no AD; delv's "unsigned answer"), and unbound and
// delv must agree on it (an answer, a denial, insecure). A SERVFAIL or a bogus answer fails
// the test with the name, type, phase and the validator's reason.
//
// By default unbound is asked the whole corpus in every phase and delv a sample of it (delv
// is one process a question); VIGIL_VALDIFF_FULL=1 asks delv everything too (about 15
// minutes on a loaded 2-core machine: give go test -timeout 30m), and
// VIGIL_VALDIFF_SEED=<n> replays a corpus (the seed is printed).
func TestValidatorDifferential(t *testing.T) {
	if unboundtest.Binary() == "" {
		t.Skip("unbound is not installed (apt-get install -y unbound): the validator differential needs it")
	}
	if delvtest.Binary() == "" {
		t.Skip("delv is not installed (apt-get install -y bind9-dnsutils): the validator differential needs it")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("VIGIL_VALDIFF_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("VIGIL_VALDIFF_SEED=%q: want a decimal number", s)
		}
		seed = n
	}
	full := os.Getenv("VIGIL_VALDIFF_FULL") != ""
	t.Logf("validator differential: seed %d (replay with VIGIL_VALDIFF_SEED=%d), full %v", seed, seed, full)

	sealer, err := dnssec.NewSealer([]byte("validator-differential-secret-00"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	parentKeys, err := dnssec.InitialKeys(vdParent, dnssec.SchemeSplit, sealer, now)
	if err != nil {
		t.Fatal(err)
	}
	childKeys, err := dnssec.InitialKeys(vdChild, dnssec.SchemeCombined, sealer, now)
	if err != nil {
		t.Fatal(err)
	}
	dsValue := func(k dnssec.Key) string {
		return strings.Join(strings.Fields(k.DS(vdChild, 1).String())[4:], " ")
	}
	// The parent proves denials by compact denial (black lies) or its NSEC chain, by the
	// seed, and the signed child the other way: both modes in every run, each with the
	// larger zone every other run. VIGIL_VALDIFF_DENIAL=compact|nsec sets the parent's.
	parentDenial := config.DenialCompact
	if seed%2 == 1 {
		parentDenial = config.DenialNSEC
	}
	if d := os.Getenv("VIGIL_VALDIFF_DENIAL"); d != "" {
		if d != config.DenialCompact && d != config.DenialNSEC {
			t.Fatalf("VIGIL_VALDIFF_DENIAL=%q: want %s or %s", d, config.DenialCompact, config.DenialNSEC)
		}
		parentDenial = d
	}
	c := newVDCorpus(seed, dsValue(childKeys.Keys[0]), parentDenial)
	t.Logf("denial: parent %s, signed child %s", c.parentDenial, c.childDenial)
	doc := &config.Document{Regions: []string{"r1", "r2"}}
	for _, z := range c.zones(c.childDS...) {
		if err := doc.ValidateZone(&z, func(string) bool { return true }); err != nil {
			t.Fatalf("the configuration refuses the generated zone %s (seed %d): %v", z.Name, seed, err)
		}
	}

	s := startServer(t, Config{})
	s.SetSnapshot(mustSnapshot(t, c.zones(c.childDS...), nil))
	install := func(pk, ck *dnssec.ZoneKeys) {
		t.Helper()
		signers := map[string]*dnssec.Signer{}
		for apex, zk := range map[string]*dnssec.ZoneKeys{vdParent: pk, vdChild: ck} {
			sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{DNSKEYTTL: 1})
			if err != nil {
				t.Fatal(err)
			}
			signers[apex] = sg
		}
		s.SetSigners(signers)
	}
	install(parentKeys, childKeys)

	anchor := parentKeys.Keys[0].DS(vdParent, 3600).String()
	addr := s.Addr().String()
	// The hosted children are stub zones of unbound too: their name server, ns1 of the
	// parent, is 127.0.0.1 on port 53, where nothing listens; the location answers for them.
	host, port, _ := strings.Cut(addr, ":")
	opts := []string{"ede: yes"}
	for _, z := range []string{vdChild, vdPlain} {
		opts = append(opts, "stub-zone:", fmt.Sprintf("name: %q", z), fmt.Sprintf("stub-addr: %s@%s", host, port), "server:")
	}
	v := &vdRun{
		t:      t,
		corpus: c,
		udp:    unboundtest.Start(t, vdParent, addr, anchor, opts...),
		tcp:    unboundtest.Start(t, vdParent, addr, anchor, append(opts, "tcp-upstream: yes")...),
		delv:   delvtest.New(t, vdParent, addr, anchor),
		sample: rand.New(rand.NewPCG(seed, 7)),
		full:   full,
		counts: map[string]map[string]int{},
		kinds:  map[string]map[string]int{},
		causes: map[string]int{},
		said:   map[string]vdSaid{},
	}
	qs := c.questions()
	t.Logf("corpus: %d names, %d record sets in 3 zones, %d health-aware sets, %d questions a phase",
		len(c.names), len(c.parent.RecordSets)+len(c.child.RecordSets)+len(c.plain.RecordSets)+1, len(c.policies), len(qs))
	start := time.Now()

	settle := 2100 * time.Millisecond // unbound keeps a TTL of one second up to two
	v.pass("before", qs, 0)

	var down []VerdictChange
	for _, p := range c.policies {
		for _, id := range p.primary {
			down = append(down, VerdictChange{Check: id, Healthy: false})
		}
	}
	s.PatchVerdicts(down)
	v.pass("failover", qs, settle)

	var all, up []VerdictChange
	for _, id := range c.checks() {
		all = append(all, VerdictChange{Check: id, Healthy: false})
		up = append(up, VerdictChange{Check: id, Healthy: true})
	}
	s.PatchVerdicts(all)
	v.allDown = true
	v.pass("no-healthy", qs, settle)
	v.allDown = false
	s.PatchVerdicts(up)
	v.pass("recovered", qs, settle)

	// The ZSK rollover, in real time: the new ZSK is published at once and signs from 2s on
	// (DNSKEY TTL and margin), the old one removed 2s later; one pass in each stage, with
	// nothing waited for the caches (a rollover must not need it).
	tm := dnssec.Timing{DNSKEYTTL: 1, MaxTTL: 1, Margin: 1}
	zskStart := time.Unix(time.Now().Unix(), 0) // the keys' times are whole seconds
	oldZSK := parentKeys.Keys[1].Tag
	rolled, err := dnssec.Rollover(parentKeys, dnssec.RoleZSK, sealer, zskStart.Unix(), tm)
	if err != nil {
		t.Fatal(err)
	}
	parentKeys = rolled
	newZSK := parentKeys.Keys[len(parentKeys.Keys)-1].Tag
	install(parentKeys, childKeys)
	vdSignedBy(t, s, oldZSK, "the ZSK rollover's first stage")
	v.pass("zsk-published", qs, 0)
	if wait := time.Until(zskStart.Add(2*time.Second + 100*time.Millisecond)); wait > 0 {
		time.Sleep(wait)
	}
	vdSignedBy(t, s, newZSK, "the ZSK rollover's second stage")
	v.pass("zsk-signing", qs, 0)

	// The CSK rollover of the hosted child: both keys sign, and the parent serves both DS.
	both, err := dnssec.Rollover(childKeys, dnssec.RoleCSK, sealer, time.Now().Unix(), tm)
	if err != nil {
		t.Fatal(err)
	}
	childKeys = both
	install(parentKeys, childKeys)
	s.SetSnapshot(mustSnapshot(t, c.zones(dsValue(both.Keys[0]), dsValue(both.Keys[1])), nil))
	v.pass("csk-rollover", qs, 0)

	// Finished: forced (the TTLs of one second have passed, but the control plane's clock
	// would say otherwise to the second), the parent serving the new DS alone, and the old
	// ZSK removed by now.
	done, err := dnssec.FinishRollover(childKeys, dnssec.RoleCSK, time.Now().Unix(), tm, true)
	if err != nil {
		t.Fatal(err)
	}
	childKeys = done
	s.SetSnapshot(mustSnapshot(t, c.zones(dsValue(done.Keys[1])), nil))
	install(parentKeys, childKeys)
	if wait := time.Until(zskStart.Add(5 * time.Second)); wait > 0 {
		time.Sleep(wait)
	}
	vdSignedBy(t, s, newZSK, "after the rollovers")
	v.pass("after", qs, settle)

	v.report(time.Since(start))
}

// vdRun is one run of the differential: the validators, the counts, the failures.
type vdRun struct {
	t        *testing.T
	corpus   *vdCorpus
	udp, tcp *unboundtest.Resolver
	delv     *delvtest.Validator
	sample   *rand.Rand
	full     bool
	// allDown says every record is unhealthy: the answers' content is checked against each
	// set's no_healthy.
	allDown bool

	mu sync.Mutex
	// counts[phase/resolver][outcome] and kinds[kind][outcome].
	counts   map[string]map[string]int
	kinds    map[string]map[string]int
	failures []string
	// said is the first validator's outcome of each question, by phase, transport and question.
	said map[string]vdSaid
	// causes counts the failures by kind of name, validator and the gist of the reason.
	causes   map[string]int
	asked    int
	compared int
}

// vdSaid is what one validator said of a question.
type vdSaid struct{ program, outcome string }

// vdCause returns the gist of a validator's reason: the last cause unbound names ("no
// signatures", "signatures from unknown keys", ...) or delv's "resolution failed" line.
func vdCause(reason string) string {
	if i := strings.LastIndex(reason, ">: "); i >= 0 {
		reason = reason[i+3:]
	} else if i := strings.LastIndex(reason, "resolution failed: "); i >= 0 {
		reason = reason[i+len("resolution failed: "):]
	}
	for _, cut := range []string{" from 127.", " while building", "\"", "; "} {
		if i := strings.Index(reason, cut); i > 0 {
			reason = reason[:i]
		}
	}
	if len(reason) > 70 {
		reason = reason[:70]
	}
	return reason
}

// The outcomes of one question.
const (
	vdSecureAnswer = "validated answer"
	vdSecureDenial = "validated denial"
	vdInsecure     = "provably insecure"
	vdFailed       = "FAILED"
)

// delvPerPhase is how many questions of each phase delv is asked, by transport, unless full.
const delvPerPhase = 32

// pass waits settle, then asks every question of qs in phase: of unbound over UDP and over TCP, and of delv (a
// sample, or all when full) over UDP and TCP.
func (v *vdRun) pass(phase string, qs []vdQuestion, settle time.Duration) {
	v.t.Helper()
	time.Sleep(settle) // for the resolvers' caches to expire
	type job struct {
		q        vdQuestion
		resolver string
	}
	var jobs []job
	for _, q := range qs {
		jobs = append(jobs, job{q, "unbound/udp"}, job{q, "unbound/tcp"})
	}
	delvQs := qs
	if !v.full {
		delvQs = v.delvSample(phase, qs)
	}
	for _, q := range delvQs {
		jobs = append(jobs, job{q, "delv/udp"}, job{q, "delv/tcp"})
	}
	v.sample.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })
	ch := make(chan job)
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				outcome, reason := v.ask(j.q, j.resolver)
				v.record(phase, j.resolver, j.q, outcome, reason)
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
}

// delvSample returns delvPerPhase questions of qs: in the phases of verdicts, those of the
// health-aware names first; the rest drawn at random.
func (v *vdRun) delvSample(phase string, qs []vdQuestion) []vdQuestion {
	idx := v.sample.Perm(len(qs))
	var out []vdQuestion
	if phase == "failover" || phase == "no-healthy" {
		for _, i := range idx {
			if q := qs[i]; (q.kind == "policy" || q.kind == "alias") && (q.qtype == dns.TypeA || q.qtype == dns.TypeAAAA) && len(out) < delvPerPhase/2 {
				out = append(out, q)
			}
		}
	}
	for _, i := range idx {
		if len(out) >= delvPerPhase {
			break
		}
		if q := qs[i]; !(q.kind == "policy" || q.kind == "alias") || phase != "failover" && phase != "no-healthy" {
			out = append(out, q)
		}
	}
	return out
}

// ask asks resolver the question and judges the answer: an outcome and, when it failed, why.
func (v *vdRun) ask(q vdQuestion, resolver string) (outcome, reason string) {
	switch resolver {
	case "unbound/udp", "unbound/tcp":
		r := v.udp
		if resolver == "unbound/tcp" {
			r = v.tcp
		}
		resp, err := vdAsk(r.Addr, q.name, q.qtype)
		if err != nil {
			return vdFailed, err.Error()
		}
		return v.judgeUnbound(q, resp)
	default:
		res, err := v.delv.Query(q.name, q.qtype, resolver == "delv/tcp")
		if err != nil {
			return vdFailed, err.Error()
		}
		return judgeDelv(q, res.Output)
	}
}

// vdAsk asks the resolver at addr with the DO and AD bits, over UDP and again over TCP when
// truncated, as a stub resolver does; twice more when it does not answer.
func vdAsk(addr, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	m.AuthenticatedData = true
	m.SetEdns0(4096, true)
	var err error
	for range 3 {
		var resp *dns.Msg
		c := &dns.Client{Timeout: 5 * time.Second, UDPSize: 4096}
		if resp, _, err = c.Exchange(m, addr); err == nil && resp.Truncated {
			tcp := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
			resp, _, err = tcp.Exchange(m, addr)
		}
		if err == nil {
			return resp, nil
		}
	}
	return nil, fmt.Errorf("no answer from unbound: %w", err)
}

// judgeUnbound judges unbound's response to q.
func (v *vdRun) judgeUnbound(q vdQuestion, resp *dns.Msg) (string, string) {
	why := func(what string) string {
		reason := what + ", rcode " + dns.RcodeToString[resp.Rcode]
		if opt := resp.IsEdns0(); opt != nil {
			for _, o := range opt.Option {
				if ede, ok := o.(*dns.EDNS0_EDE); ok {
					reason += fmt.Sprintf(", EDE %d (%s) %q", ede.InfoCode, dns.ExtendedErrorCodeToString[ede.InfoCode], ede.ExtraText)
				}
			}
		}
		return reason
	}
	if resp.Rcode != dns.RcodeSuccess && resp.Rcode != dns.RcodeNameError {
		return vdFailed, why("not answered")
	}
	if q.insecure {
		if resp.AuthenticatedData {
			return vdFailed, why("AD set on an answer from the unsigned child")
		}
		return vdInsecure, ""
	}
	if !resp.AuthenticatedData {
		return vdFailed, why("not validated (no AD)")
	}
	if p := v.contentProblem(q, resp); p != "" {
		return vdFailed, p
	}
	for _, rr := range resp.Answer {
		if rr.Header().Rrtype == q.qtype {
			return vdSecureAnswer, ""
		}
	}
	return vdSecureDenial, ""
}

// contentProblem checks, with every record down, that a health-aware set answers as its
// no_healthy says: all its records, none, or the fallback.
func (v *vdRun) contentProblem(q vdQuestion, resp *dns.Msg) string {
	if !v.allDown {
		return ""
	}
	for _, p := range v.corpus.policies {
		if p.owner != q.name || p.qtype != q.qtype {
			continue
		}
		var got []string
		for _, rr := range resp.Answer {
			switch rr := rr.(type) {
			case *dns.A:
				got = append(got, rr.A.String())
			case *dns.AAAA:
				got = append(got, rr.AAAA.String())
			}
		}
		switch p.noHealthy {
		case config.NoHealthyNoData:
			if len(got) != 0 {
				return fmt.Sprintf("no_healthy nodata answered %v", got)
			}
		case config.NoHealthyFallback:
			if len(got) != 1 || got[0] != p.fallback {
				return fmt.Sprintf("no_healthy fallback answered %v, want %s", got, p.fallback)
			}
		default:
			if len(got) == 0 {
				return "no_healthy all answered nothing"
			}
		}
	}
	return ""
}

// judgeDelv judges delv's output for q.
func judgeDelv(q vdQuestion, out string) (string, string) {
	reason := func(what string) string {
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, ";") {
				lines = append(lines, strings.TrimSpace(l))
			}
		}
		if len(lines) == 0 {
			lines = append(lines, strings.TrimSpace(out))
		}
		return what + ": " + strings.Join(lines, " | ")
	}
	negative := strings.Contains(out, "resolution failed") || strings.Contains(out, "negative response")
	switch {
	case strings.Contains(out, "fully validated") && !q.insecure:
		if negative {
			return vdSecureDenial, ""
		}
		return vdSecureAnswer, ""
	case strings.Contains(out, "unsigned answer") && q.insecure:
		return vdInsecure, ""
	case q.insecure:
		return vdFailed, reason("not proved insecure")
	default:
		return vdFailed, reason("not fully validated")
	}
}

// record counts one outcome and keeps the failures.
func (v *vdRun) record(phase, resolver string, q vdQuestion, outcome, reason string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.asked++
	key := phase + " " + resolver
	if v.counts[key] == nil {
		v.counts[key] = map[string]int{}
	}
	v.counts[key][outcome]++
	if v.kinds[q.kind] == nil {
		v.kinds[q.kind] = map[string]int{}
	}
	v.kinds[q.kind][outcome]++
	// The differential proper: unbound and delv, asked the same question in the same phase
	// over the same transport, must agree on what the answer is.
	if outcome != vdFailed {
		program, transport, _ := strings.Cut(resolver, "/")
		k := phase + " " + transport + " " + q.String()
		if other, ok := v.said[k]; ok && other.program != program {
			v.compared++
		}
		if other, ok := v.said[k]; ok && other.program != program && other.outcome != outcome {
			outcome, reason = vdFailed, fmt.Sprintf("%s says %s, %s says %s", program, outcome, other.program, other.outcome)
		} else if !ok {
			v.said[k] = vdSaid{program, outcome}
		}
	}
	if outcome == vdFailed {
		v.failures = append(v.failures, fmt.Sprintf("%-12s %-11s %-40s %s", phase, resolver, q.String(), reason))
		v.causes[fmt.Sprintf("%-10s %-8s %s", q.kind, strings.SplitN(resolver, "/", 2)[0], vdCause(reason))]++
	}
}

// report logs the counts by phase and resolver and by kind of name, and fails the test with
// every failure.
func (v *vdRun) report(took time.Duration) {
	v.t.Helper()
	outcomes := []string{vdSecureAnswer, vdSecureDenial, vdInsecure, vdFailed}
	var b strings.Builder
	fmt.Fprintf(&b, "validator differential, seed %d: %d answers in %s; unbound and delv compared on %d\n",
		v.corpus.seed, v.asked, took.Round(time.Second), v.compared)
	fmt.Fprintf(&b, "%-26s %8s %8s %8s %8s\n", "phase / validator", "answers", "denials", "insecure", "FAILED")
	line := func(label string, m map[string]int) {
		fmt.Fprintf(&b, "%-26s", label)
		for _, o := range outcomes {
			fmt.Fprintf(&b, " %8d", m[o])
		}
		b.WriteString("\n")
	}
	keys := make([]string, 0, len(v.counts))
	for k := range v.counts {
		keys = append(keys, k)
	}
	order := map[string]int{"before": 0, "failover": 1, "no-healthy": 2, "recovered": 3, "zsk-published": 4, "zsk-signing": 5, "csk-rollover": 6, "after": 7}
	sort.Slice(keys, func(i, j int) bool {
		pi, ri, _ := strings.Cut(keys[i], " ")
		pj, rj, _ := strings.Cut(keys[j], " ")
		if order[pi] != order[pj] {
			return order[pi] < order[pj]
		}
		return ri < rj
	})
	total := map[string]int{}
	for _, k := range keys {
		line(k, v.counts[k])
		for o, n := range v.counts[k] {
			total[o] += n
		}
	}
	line("total", total)
	b.WriteString("by kind of name:\n")
	kinds := make([]string, 0, len(v.kinds))
	for k := range v.kinds {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		line("  "+k, v.kinds[k])
	}
	if len(v.causes) > 0 {
		b.WriteString("failures by kind of name, validator and cause:\n")
		causes := make([]string, 0, len(v.causes))
		for k := range v.causes {
			causes = append(causes, k)
		}
		sort.Strings(causes)
		for _, k := range causes {
			fmt.Fprintf(&b, "  %5d  %s\n", v.causes[k], k)
		}
	}
	v.t.Log(b.String())
	if len(v.failures) == 0 {
		return
	}
	sort.Strings(v.failures)
	// At most three of each phase, validator and kind of name, then the rest up to 80.
	var shown, rest []string
	seen := map[string]int{}
	for _, f := range v.failures {
		k := strings.Join(strings.Fields(f)[:2], " ")
		if seen[k]++; seen[k] <= 3 {
			shown = append(shown, f)
		} else {
			rest = append(rest, f)
		}
	}
	shown = append(shown, rest[:min(len(rest), max(0, 80-len(shown)))]...)
	v.t.Errorf("%d answers neither validated nor provably insecure (seed %d; replay with VIGIL_VALDIFF_SEED=%d):\n%s%s",
		len(v.failures), v.corpus.seed, v.corpus.seed, strings.Join(shown, "\n"),
		map[bool]string{true: fmt.Sprintf("\n... and %d more", len(v.failures)-len(shown)), false: ""}[len(shown) < len(v.failures)])
}

// vdSignedBy fails the test unless the location signs the parent's answers with the key of
// tag: that a rollover's stage is the one the phase says.
func vdSignedBy(t *testing.T, s *Server, tag uint16, when string) {
	t.Helper()
	r := exchange(t, "udp", s.Addr(), doQuery("www."+vdParent, dns.TypeA, 1232))
	var tags []uint16
	for _, rr := range r.Answer {
		if sig, ok := rr.(*dns.RRSIG); ok {
			tags = append(tags, sig.KeyTag)
		}
	}
	if len(tags) != 1 || tags[0] != tag {
		t.Fatalf("%s: www.%s A signed by keys %v, want %d alone", when, vdParent, tags, tag)
	}
}
