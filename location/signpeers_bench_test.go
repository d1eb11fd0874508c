package location

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/dnssec"
	"github.com/vigil-dns/vigil/location/nsdtest"

	"github.com/vigil-dns/vigil/internal/testproc"
)

// benchNames is the number of address names of the zone the signing benchmarks serve.
const benchNames = 100

// benchZone returns the zone the signing benchmarks serve, as Vigil's configuration and as a
// zone file (for NSD and PowerDNS): apex (SOA, NS), ns1, and h000 to h099 with an A record
// each.
func benchZone(apex string, denial string) (config.Zone, string) {
	z := config.DefaultZone()
	z.Name = apex
	z.TTL = 60
	z.SOA.Minimum = 120
	z.NameServers = []string{"ns1." + apex}
	z.DNSSEC = &config.DNSSEC{Enabled: true, Denial: denial}
	var text strings.Builder
	fmt.Fprintf(&text, "$ORIGIN %s\n$TTL 60\n@ IN SOA ns1.%s hostmaster.%s 1 3600 600 86400 120\n@ IN NS ns1.%s\nns1 IN A 192.0.2.53\n",
		apex, apex, apex, apex)
	z.RecordSets = append(z.RecordSets, config.RecordSet{Name: "ns1", Type: config.TypeA, Records: []config.Record{{Value: "192.0.2.53"}}})
	for i := range benchNames {
		v := fmt.Sprintf("198.51.100.%d", 1+i)
		z.RecordSets = append(z.RecordSets, config.RecordSet{Name: fmt.Sprintf("h%03d", i), Type: config.TypeA, Records: []config.Record{{Value: v}}})
		fmt.Fprintf(&text, "h%03d IN A %s\n", i, v)
	}
	return z, text.String()
}

// benchVigil starts a location serving zone z signed by a combined key, with the default
// signing budget (measured from the CPU), and returns it with its registry.
func benchVigil(b *testing.B, z config.Zone) (*Server, *prometheus.Registry) {
	reg := prometheus.NewRegistry()
	s := startServer(b, Config{Registerer: reg})
	s.SetSnapshot(mustSnapshot(b, []config.Zone{z}, nil))
	sealer, err := dnssec.NewSealer([]byte("location-test-seal-secret-000000"))
	if err != nil {
		b.Fatal(err)
	}
	zk, err := dnssec.InitialKeys(z.Name, dnssec.SchemeCombined, sealer, time.Now().Unix())
	if err != nil {
		b.Fatal(err)
	}
	sg, err := dnssec.NewSigner(zk, sealer, dnssec.SignerConfig{})
	if err != nil {
		b.Fatal(err)
	}
	s.SetSigners(map[string]*dnssec.Signer{z.Name: sg})
	return s, reg
}

// signDropped returns the queries reg's location dropped for its signing budget.
func signDropped(b *testing.B, reg *prometheus.Registry) float64 {
	fams, err := reg.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var n float64
	for _, f := range fams {
		if f.GetName() != "vigil_location_queries_dropped_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "reason" && l.GetValue() == "sign_budget" {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// childCPU returns the CPU time (user and system, nanoseconds) of the processes whose name
// starts with comm that descend from this one: an external server the benchmark started,
// with its children (NSD forks "nsd: main", "nsd: server 1", ...) and threads.
func childCPU(b *testing.B, comm string) int64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	type proc struct {
		ppid  int
		comm  string
		ticks int64
	}
	procs := map[int]proc{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(raw)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		procs[pid] = proc{ppid: ppid, comm: s[open+1 : end], ticks: ut + st}
	}
	self := os.Getpid()
	descends := func(pid int) bool {
		for range 64 {
			p, ok := procs[pid]
			if !ok {
				return false
			}
			if p.ppid == self {
				return true
			}
			pid = p.ppid
		}
		return false
	}
	var ticks int64
	for pid, p := range procs {
		if strings.HasPrefix(p.comm, comm) && descends(pid) {
			ticks += p.ticks
		}
	}
	return ticks * int64(time.Second) / 100 // USER_HZ is 100 on Linux
}

// startPDNS runs PowerDNS Authoritative (Debian pdns-server, bind backend) on a free
// loopback port serving zones (apex → zone file text), each signed live by pdnsutil
// secure-zone with a key of algorithm 13, and with NSEC3 narrow for the apexes in narrow (a
// denial signed for each name, as compact denial is), NSEC otherwise. It stops when the
// benchmark ends; the benchmark is skipped when PowerDNS is not installed.
func startPDNS(b *testing.B, zones map[string]string, narrow map[string]bool) string {
	bin, err := exec.LookPath("pdns_server")
	if err != nil {
		b.Skip("PowerDNS is not installed (Debian: apt-get install pdns-server pdns-backend-bind)")
	}
	util, err := exec.LookPath("pdnsutil")
	if err != nil {
		b.Skip("pdnsutil is not installed (Debian pdns-server)")
	}
	dir := b.TempDir()
	var named strings.Builder
	for apex, text := range zones {
		file := filepath.Join(dir, strings.TrimSuffix(apex, ".")+".zone")
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(&named, "zone %q { type master; file %q; };\n", strings.TrimSuffix(apex, "."), file)
	}
	if err := os.WriteFile(filepath.Join(dir, "named.conf"), []byte(named.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	port := nsdtest.FreePort(b)
	conf := fmt.Sprintf("launch=bind\nbind-config=%s\nbind-dnssec-db=%s\nlocal-address=127.0.0.1\nlocal-port=%d\nsetuid=\nsetgid=\nsocket-dir=%s\nguardian=no\ndaemon=no\nreceiver-threads=2\nloglevel=3\n",
		filepath.Join(dir, "named.conf"), filepath.Join(dir, "dnssec.db"), port, dir)
	if err := os.WriteFile(filepath.Join(dir, "pdns.conf"), []byte(conf), 0o644); err != nil {
		b.Fatal(err)
	}
	run := func(args ...string) {
		out, err := exec.Command(util, append([]string{"--config-dir=" + dir}, args...)...).CombinedOutput()
		if err != nil {
			b.Fatalf("pdnsutil %v: %v\n%s", args, err, out)
		}
	}
	run("create-bind-db", filepath.Join(dir, "dnssec.db"))
	for apex := range zones {
		run("secure-zone", apex)
		if narrow[apex] {
			run("set-nsec3", apex, "1 0 0 -", "narrow")
		}
	}
	out, _ := testproc.Start(b, exec.Command(bin, "--config-dir="+dir))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c := &dns.Client{Timeout: 200 * time.Millisecond}
	for apex := range zones {
		m := new(dns.Msg)
		m.SetQuestion(apex, dns.TypeSOA)
		for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
			if r, _, err := c.Exchange(m, addr); err == nil && r.Rcode == dns.RcodeSuccess {
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatalf("PowerDNS did not answer the SOA of %s within 10s: %s", apex, out.String())
			}
		}
	}
	return addr
}

// signZoneLDNS signs the zone file text of apex with ldns-signzone (a key of algorithm 13
// made by ldns-keygen, NSEC), as a zone is signed ahead of time to be served by NSD, and
// returns the signed text. The benchmark is skipped when ldnsutils is not installed.
func signZoneLDNS(b *testing.B, apex, text string) string {
	for _, tool := range []string{"ldns-keygen", "ldns-signzone"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Skipf("%s is not installed (Debian ldnsutils)", tool)
		}
	}
	dir := b.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keygen := exec.CommandContext(ctx, "ldns-keygen", "-a", "ECDSAP256SHA256", "-k", apex)
	keygen.Dir = dir
	base, err := keygen.Output()
	if err != nil {
		b.Fatalf("ldns-keygen: %v", err)
	}
	zoneFile := filepath.Join(dir, "zone")
	if err := os.WriteFile(zoneFile, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	sign := exec.CommandContext(ctx, "ldns-signzone", "-o", apex, zoneFile, strings.TrimSpace(string(base)))
	sign.Dir = dir
	if out, err := sign.CombinedOutput(); err != nil {
		b.Fatalf("ldns-signzone: %v\n%s", err, out)
	}
	signed, err := os.ReadFile(zoneFile + ".signed")
	if err != nil {
		b.Fatal(err)
	}
	return string(signed)
}

// ednsArgs are dnsperf's arguments for queries with EDNS, and the DO bit when do: the
// unsigned cases send EDNS too, so that signed and unsigned differ by the DO bit alone.
func ednsArgs(do bool) string {
	if do {
		return "-D"
	}
	return "-e"
}

// perCPU is queries answered per CPU-second of ns nanoseconds.
func perCPU(n int, ns int64) float64 { return float64(n) / (float64(max(ns, 1)) / 1e9) }

// benchRounds returns VIGIL_DNSPERF_SECONDS (default 10) and VIGIL_DNSPERF_ROUNDS (default 3).
func benchRounds() (seconds, rounds int) {
	seconds, rounds = 10, 3
	if v, err := strconv.Atoi(os.Getenv("VIGIL_DNSPERF_SECONDS")); err == nil && v > 0 {
		seconds = v
	}
	if v, err := strconv.Atoi(os.Getenv("VIGIL_DNSPERF_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	return seconds, rounds
}

// BenchmarkSignedPeers runs dnsperf (10 clients, 100 queries outstanding) against Vigil and
// against the peers that do the same job on the same machine in the same run, and logs
// each server's queries a second and queries per server CPU-second (its own process, read
// from the kernel; dnsperf's excluded), VIGIL_DNSPERF_ROUNDS rounds (default 3) of
// VIGIL_DNSPERF_SECONDS (default 10) a case. Every query has EDNS (dnsperf -e); the signed
// cases set the DO bit (-D), so that signed and unsigned differ by that bit alone:
//
//   - new-names: 200,000 random names that do not exist in a zone of 102 names, without DO
//     and with it: Vigil with compact denial (an NSEC black lie signed for each name) and
//     with denial nsec (the zone's NSEC chain, signatures from the cache); PowerDNS 4
//     (bind backend, live signing, algorithm 13) with NSEC3 narrow (a denial signed for
//     each name) and with NSEC. Vigil's queries dropped for its signing budget are counted.
//   - fixed-names: the zone's 100 address names, without DO and with it: Vigil (signatures
//     from the cache) and NSD serving the zone signed ahead of time by ldns-signzone.
//
// Run it alone: go test -run '^$' -bench SignedPeers -benchtime 1x ./location/
func BenchmarkSignedPeers(b *testing.B) {
	seconds, rounds := benchRounds()
	const apex, chainApex = "example.test.", "chain.test."
	compactZone, text := benchZone(apex, config.DenialCompact)
	chainZone, chainText := benchZone(chainApex, config.DenialNSEC)

	b.Run("new-names", func(b *testing.B) {
		random := func(apex string) []string {
			qs := make([]string, 200_000)
			for i := range qs {
				qs[i] = fmt.Sprintf("r%016x.%s A", rand.Uint64(), apex)
			}
			return qs
		}
		qs, chainQs := random(apex), random(chainApex)
		compact, compactReg := benchVigil(b, compactZone)
		chain, chainReg := benchVigil(b, chainZone)
		b.Logf("signing budget: %.0f new signatures a second", compact.budget.Rate())
		pdns := startPDNS(b, map[string]string{apex: text, chainApex: chainText}, map[string]bool{apex: true})
		for range b.N {
			for r := range rounds {
				type result struct {
					qps, perCPU, dropped float64
				}
				vigil := func(s *Server, reg *prometheus.Registry, queries []string, do bool) result {
					c0, d0 := processCPU(b), signDropped(b, reg)
					res := runDNSPerfArgs(b, s.Addr().String(), queries, seconds, false, 0, ednsArgs(do))
					return result{res.qps, perCPU(res.completed, processCPU(b)-c0), signDropped(b, reg) - d0}
				}
				peer := func(addr string, queries []string, do bool) result {
					c0 := childCPU(b, "pdns_server")
					res := runDNSPerfArgs(b, addr, queries, seconds, false, 0, ednsArgs(do))
					return result{res.qps, perCPU(res.completed, childCPU(b, "pdns_server")-c0), 0}
				}
				vu := vigil(compact, compactReg, qs, false)
				vc := vigil(compact, compactReg, qs, true)
				vn := vigil(chain, chainReg, chainQs, true)
				pu := peer(pdns, qs, false)
				pn3 := peer(pdns, qs, true)
				pn := peer(pdns, chainQs, true)
				b.Logf("round %d new names, qps (per server CPU-second): Vigil unsigned %.0f (%.0f); compact %.0f (%.0f) %.1f%% of unsigned, %.0f dropped; nsec chain %.0f (%.0f) %.1f%%, %.0f dropped | PowerDNS unsigned %.0f (%.0f); NSEC3 narrow %.0f (%.0f) %.1f%%; NSEC %.0f (%.0f) %.1f%%",
					r+1, vu.qps, vu.perCPU, vc.qps, vc.perCPU, 100*vc.qps/vu.qps, vc.dropped, vn.qps, vn.perCPU, 100*vn.qps/vu.qps, vn.dropped,
					pu.qps, pu.perCPU, pn3.qps, pn3.perCPU, 100*pn3.qps/pu.qps, pn.qps, pn.perCPU, 100*pn.qps/pu.qps)
			}
		}
	})

	b.Run("fixed-names", func(b *testing.B) {
		var qs []string
		for i := range benchNames {
			qs = append(qs, fmt.Sprintf("h%03d.%s A", i, apex))
		}
		vigil, _ := benchVigil(b, compactZone)
		nsd := nsdtest.Start(b, map[string]string{apex: signZoneLDNS(b, apex, text)})
		for range b.N {
			for r := range rounds {
				run := func(addr string, do bool, cpu func() int64) (float64, float64) {
					c0 := cpu()
					res := runDNSPerfArgs(b, addr, qs, seconds, false, 0, ednsArgs(do))
					return res.qps, perCPU(res.completed, cpu()-c0)
				}
				self := func() int64 { return processCPU(b) }
				nsdCPU := func() int64 { return childCPU(b, "nsd") }
				vu, vuc := run(vigil.Addr().String(), false, self)
				vs, vsc := run(vigil.Addr().String(), true, self)
				nu, nuc := run(nsd.String(), false, nsdCPU)
				ns, nsc := run(nsd.String(), true, nsdCPU)
				b.Logf("round %d fixed names, qps (per server CPU-second): Vigil unsigned %.0f (%.0f), signed %.0f (%.0f): %.1f%% (%.1f%% per CPU-second) | NSD unsigned %.0f (%.0f), pre-signed %.0f (%.0f): %.1f%% (%.1f%%)",
					r+1, vu, vuc, vs, vsc, 100*vs/vu, 100*vsc/vuc, nu, nuc, ns, nsc, 100*ns/nu, 100*nsc/nuc)
			}
		}
	})
}
