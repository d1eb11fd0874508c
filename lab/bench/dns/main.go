// Command dnsbench runs Vigil, NSD and Knot side by side on one zone, driving each with dnsperf
// through the same query mixes on loopback. It prints Markdown tables per round: at saturation,
// queries a second, queries per server CPU-second and p99 latency; at fixed offered rates
// (dnsperf -Q), p99 latency and the queries lost. Rounds are interleaved (one run of each
// server per mix or rate before the next) so that a change in the machine's load hits every
// server alike. Start it with lab/bench/dns/run.sh, which builds vigil from the tree;
// lab/bench/dns/README.md says what it measures and how.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/miekg/dns"
)

// apex is the zone every server serves.
const apex = "bench.vigil.test."

// clockTicks is the unit of utime and stime in /proc/PID/stat (USER_HZ, 100 on Linux).
const clockTicks = 100

// options are the command's flags.
type options struct {
	rounds          int
	duration        time.Duration
	vigil           string // a binary, or name=binary pairs, comma-separated
	names           int
	servers         []string
	mixes           []string
	rates           []int  // offered rates of the fixed-rate runs, queries a second
	rateMix         string // the mix the fixed-rate runs ask
	latency         bool
	clients         int
	outstanding     int
	rateOutstanding int
	workers         int
	keep            bool
}

// vigilBinary is one vigil binary to run, under its server name.
type vigilBinary struct{ name, path string }

// vigils parses -vigil: one binary, served as "vigil", or name=binary pairs, served as
// "vigil-NAME", each its own agent.
func (o options) vigils() ([]vigilBinary, error) {
	if o.vigil == "" {
		return nil, errors.New("no vigil binary: give -vigil (lab/bench/dns/run.sh builds one)")
	}
	var out []vigilBinary
	for _, v := range strings.Split(o.vigil, ",") {
		name, path, named := strings.Cut(v, "=")
		switch {
		case !named:
			if strings.Contains(o.vigil, ",") {
				return nil, fmt.Errorf("-vigil %q: name each of several binaries (name=path)", o.vigil)
			}
			out = append(out, vigilBinary{"vigil", v})
		case name == "" || path == "" || strings.ContainsAny(name, " |"):
			return nil, fmt.Errorf("-vigil: %q is not name=path", v)
		default:
			out = append(out, vigilBinary{"vigil-" + name, path})
		}
	}
	return out, nil
}

func main() {
	var o options
	var servers, mixes, rates string
	fs := flag.NewFlagSet("dnsbench", flag.ContinueOnError)
	fs.IntVar(&o.rounds, "rounds", 3, "rounds: each runs every mix against every server once")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "length of one dnsperf run")
	fs.StringVar(&o.vigil, "vigil", "", "vigil binary to run (run.sh builds one from the tree); several as name=path,name=path, each served as vigil-NAME")
	fs.IntVar(&o.names, "names", 10000, "names of the many-names mix (and records of the zone)")
	fs.StringVar(&servers, "servers", "vigil,nsd,knot", "servers to run, comma-separated")
	fs.StringVar(&mixes, "mixes", "hot,names,flip,nxdomain", "query mixes run at saturation, comma-separated; empty for none")
	fs.StringVar(&rates, "rates", "10000,25000,50000,75000", "offered rates (queries a second, dnsperf -Q) of the fixed-rate runs, comma-separated; empty for none")
	fs.StringVar(&o.rateMix, "rate-mix", "names", "the mix the fixed-rate runs ask")
	fs.IntVar(&o.rateOutstanding, "rate-outstanding", 1000, "dnsperf queries outstanding (-q) in the fixed-rate runs: high, so that the offered rate and not the cap on outstanding queries sets the pace")
	fs.BoolVar(&o.latency, "latency", true, "have dnsperf print every query's latency (-v) for the p99; costs dnsperf CPU time, alike for every server")
	fs.IntVar(&o.clients, "clients", 10, "dnsperf clients (-c)")
	fs.IntVar(&o.outstanding, "outstanding", 100, "dnsperf queries outstanding (-q)")
	fs.IntVar(&o.workers, "workers", runtime.NumCPU(), "NSD server-count, Knot udp-workers and Vigil's GOMAXPROCS")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory (configurations, zone, logs)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	o.servers, o.mixes = list(servers), list(mixes)
	for _, r := range list(rates) {
		n, err := strconv.Atoi(r)
		if err != nil || n <= 0 {
			fmt.Fprintf(os.Stderr, "dnsbench: -rates: %q is not a positive number of queries a second\n", r)
			os.Exit(2)
		}
		o.rates = append(o.rates, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, o, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dnsbench:", err)
		os.Exit(1)
	}
	fmt.Print(table(res, o))
}

// list splits a comma-separated flag, empty for none.
func list(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// result is one dnsperf run against one server.
type result struct {
	round   int
	mix     string
	server  string
	offered int // queries a second offered (dnsperf -Q); 0 at saturation
	qps     float64
	sent    int
	done    int
	runtime float64 // dnsperf's run time, seconds
	cpu     float64 // server CPU seconds over the run
	p50     time.Duration
	p99     time.Duration
	p999    time.Duration
	load    string // load average at the start of the run
	drops   int    // datagrams the kernel dropped at the server's UDP sockets over the run, -1 unknown
	flips   int    // verdict flips made during the run (flip mix, Vigil)
	flipped int    // of which a query saw the new answer
	seen    []time.Duration
}

// sentRate is the queries dnsperf sent a second.
func (r result) sentRate() float64 {
	if r.runtime == 0 {
		return 0
	}
	return float64(r.sent) / r.runtime
}

// perCPU is the queries answered per server CPU-second.
func (r result) perCPU() float64 {
	if r.cpu == 0 {
		return 0
	}
	return float64(r.done) / r.cpu
}

// server is one running DNS server.
type server struct {
	name string
	addr string
	pids func() []int // the processes whose CPU time counts
	flip func(ctx context.Context, unhealthy bool) error
}

// run starts the servers, runs the rounds and returns every run's result.
func run(ctx context.Context, o options, log io.Writer) ([]result, error) {
	if o.rounds < 1 || o.duration <= 0 || o.names < 1 {
		return nil, errors.New("-rounds, -duration and -names must be positive")
	}
	if len(o.mixes) == 0 && len(o.rates) == 0 {
		return nil, errors.New("no mixes and no rates: nothing to run")
	}
	dnsperf, err := exec.LookPath("dnsperf")
	if err != nil {
		return nil, fmt.Errorf("dnsperf not found (Debian package dnsperf): %w", err)
	}
	dir, err := os.MkdirTemp("", "dnsbench-")
	if err != nil {
		return nil, fmt.Errorf("work directory: %w", err)
	}
	if o.keep {
		fmt.Fprintln(log, "work directory:", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	files, err := writeQueries(dir, o.names)
	if err != nil {
		return nil, err
	}
	asked := slices.Clone(o.mixes)
	if len(o.rates) > 0 {
		asked = append(asked, o.rateMix)
	}
	for _, mix := range asked {
		if _, ok := files[mix]; !ok {
			return nil, fmt.Errorf("unknown mix %q: hot, names, flip or nxdomain", mix)
		}
	}
	running, err := startServers(ctx, &wg, o, dir, log)
	if err != nil {
		return nil, err
	}
	return runRounds(ctx, o, dnsperf, dir, running, files, log)
}

// startServers starts the servers of o.servers, every Vigil binary first, then NSD and Knot
// serving the zone the first Vigil serves, and waits until each answers the last name.
func startServers(ctx context.Context, wg *sync.WaitGroup, o options, dir string, log io.Writer) ([]*server, error) {
	var running []*server
	var vigil *server
	for _, name := range o.servers {
		if name != "vigil" {
			continue
		}
		bins, err := o.vigils()
		if err != nil {
			return nil, err
		}
		for _, b := range bins {
			s, err := startVigil(ctx, wg, o, b, dir, log)
			if err != nil {
				return nil, err
			}
			if vigil == nil {
				vigil = s
			}
			running = append(running, s)
		}
	}
	// NSD and Knot serve what Vigil serves: its apex records and the records in force.
	zone, err := zoneFile(vigil, o.names)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "zone.db"), []byte(zone), 0o644); err != nil {
		return nil, fmt.Errorf("zone file: %w", err)
	}
	for _, name := range o.servers {
		var s *server
		switch name {
		case "vigil":
			continue
		case "nsd":
			s, err = startNSD(ctx, wg, o, dir)
		case "knot":
			s, err = startKnot(ctx, wg, o, dir)
		default:
			err = fmt.Errorf("unknown server %q: vigil, nsd or knot", name)
		}
		if err != nil {
			return nil, err
		}
		running = append(running, s)
	}
	for _, s := range running {
		if err := waitAnswer(ctx, s, fmt.Sprintf("n%d.%s", o.names-1, apex)); err != nil {
			return nil, err
		}
	}
	return running, nil
}

// runRounds runs o.rounds rounds against the running servers: in each, every mix at
// saturation, then every offered rate; each against every server before the next.
func runRounds(ctx context.Context, o options, dnsperf, dir string, running []*server, files map[string]string, log io.Writer) ([]result, error) {
	type step struct {
		mix  string
		rate int
	}
	var steps []step
	for _, mix := range o.mixes {
		steps = append(steps, step{mix: mix})
	}
	for _, rate := range o.rates {
		steps = append(steps, step{mix: o.rateMix, rate: rate})
	}
	var out []result
	for round := 1; round <= o.rounds; round++ {
		for _, st := range steps {
			// The order turns each round, so that no server always runs first.
			for i := range running {
				s := running[(i+round-1)%len(running)]
				r, err := runOne(ctx, o, dnsperf, dir, s, files[st.mix], st.mix == "flip", st.rate)
				if err != nil {
					return nil, fmt.Errorf("round %d, %s, %s: %w", round, st.mix, s.name, err)
				}
				r.round, r.mix, r.server = round, st.mix, s.name
				what := st.mix
				if st.rate > 0 {
					what = fmt.Sprintf("%s@%d", st.mix, st.rate)
				}
				fmt.Fprintf(log, "round %d %-14s %-14s %8.0f qps %8.0f q/CPU-s p99 %v lost %d socket drops %d load %s\n", round, what, s.name, r.qps, r.perCPU(), r.p99, r.sent-r.done, r.drops, r.load)
				out = append(out, r)
			}
		}
	}
	return out, nil
}

// writeQueries writes dnsperf's query files, one per mix, and returns their paths.
func writeQueries(dir string, names int) (map[string]string, error) {
	texts := map[string]*strings.Builder{}
	for _, m := range []string{"hot", "names", "flip", "nxdomain"} {
		texts[m] = &strings.Builder{}
	}
	fmt.Fprintf(texts["hot"], "www.%s A\n", apex)
	for i := range names {
		fmt.Fprintf(texts["names"], "n%d.%s A\n", i, apex)
	}
	fmt.Fprintf(texts["flip"], "flip.%s A\n", apex)
	// Names that do not exist, none asked twice within a run of about a second at 100,000
	// queries a second; seeded, so that every run asks the same.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		fmt.Fprintf(texts["nxdomain"], "x%016x.%s A\n", rng.Uint64(), apex)
	}
	files := map[string]string{}
	for m, b := range texts {
		p := filepath.Join(dir, m+".queries")
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			return nil, fmt.Errorf("query file: %w", err)
		}
		files[m] = p
	}
	return files, nil
}

// freePort returns a loopback port free for UDP and TCP a moment ago.
func freePort() (int, error) {
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port, nil
		}
	}
	return 0, errors.New("no free loopback port for UDP and TCP")
}

// start runs cmd until ctx ends (then SIGTERM), its output to logPath, and returns its pid.
func start(ctx context.Context, wg *sync.WaitGroup, cmd *exec.Cmd, logPath string) (int, <-chan struct{}, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return 0, nil, fmt.Errorf("log file: %w", err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return 0, nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = cmd.Wait()
		f.Close()
		close(exited)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
			}
		case <-exited:
		}
	}()
	return cmd.Process.Pid, exited, nil
}

const token = "dnsbench-token"

// startVigil runs one `vigil agent` with every role, applies the benchmark's document and
// returns it once it answers the zone.
func startVigil(ctx context.Context, wg *sync.WaitGroup, o options, bin vigilBinary, dir string, log io.Writer) (*server, error) {
	target, err := checkTarget(ctx, wg)
	if err != nil {
		return nil, err
	}
	vdir := filepath.Join(dir, bin.name)
	logPath := filepath.Join(dir, bin.name+".log")
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(token+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	var ports [4]int
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	dnsAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	api := fmt.Sprintf("127.0.0.1:%d", ports[1])
	cmd := exec.CommandContext(context.WithoutCancel(ctx), bin.path, "agent", "-roles", "control,checker,location",
		"-id", bin.name, "-region", "bench", "-data-dir", vdir, "-bootstrap", "-token-file", tokens,
		"-api-addr", api, "-raft-addr", fmt.Sprintf("127.0.0.1:%d", ports[2]),
		"-gossip-bind", fmt.Sprintf("127.0.0.1:%d", ports[3]), "-insecure-gossip",
		"-dns", dnsAddr, "-http", "off", "-log-level", "error", "-allow-loopback-probes")
	// Workers = cores: the Go runtime runs the DNS server's goroutines on GOMAXPROCS threads.
	cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", o.workers))
	pid, exited, err := start(ctx, wg, cmd, logPath)
	if err != nil {
		return nil, err
	}
	doc, err := json.Marshal(document(target.Addr().(*net.TCPAddr).Port, o.names))
	if err != nil {
		return nil, err
	}
	call := apiCaller(ctx, api)
	if err := putDocument(ctx, bin.name, call, doc, exited, logPath); err != nil {
		return nil, err
	}
	fmt.Fprintf(log, "%s: vigil agent (pid %d, %s) on %s took the document\n", bin.name, pid, bin.path, dnsAddr)
	s := &server{name: bin.name, addr: dnsAddr, pids: func() []int { return []int{pid} }}
	s.flip = func(ctx context.Context, unhealthy bool) error {
		kind := "healthy"
		if unhealthy {
			kind = "unhealthy"
		}
		body := fmt.Sprintf(`{"kind":%q,"check":"flip","reason":"dnsbench flip","for":"1h"}`, kind)
		return call("POST", "/v1/overrides", []byte(body))
	}
	// The flip name answers its primary once the first probe of its check is in.
	if err := waitFor(ctx, s, "flip."+apex, primary(1)); err != nil {
		return nil, err
	}
	return s, nil
}

// checkTarget listens where the checks probe: it stays up until ctx ends, so every check
// is healthy and the flip name changes only by the overrides the flip mix writes.
func checkTarget(ctx context.Context, wg *sync.WaitGroup) (net.Listener, error) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("check target: %w", err)
	}
	wg.Add(2)
	go func() { defer wg.Done(); <-ctx.Done(); target.Close() }()
	go func() {
		defer wg.Done()
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return target, nil
}

// apiCaller returns a function that sends a request with a JSON body to the control API at
// api with the benchmark's token; an answer other than 2xx is an error that holds it.
func apiCaller(ctx context.Context, api string) func(method, path string, body []byte) error {
	return func(method, path string, body []byte) error {
		req, err := http.NewRequestWithContext(ctx, method, "http://"+api+path, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: HTTP %d: %s", method, path, resp.StatusCode, b)
		}
		return nil
	}
}

// putDocument writes the benchmark's document doc through call, again every 200 ms until
// the agent named name takes it, refuses it (HTTP 4xx), exits (its log at logPath says
// why) or 60 s have passed.
func putDocument(ctx context.Context, name string, call func(method, path string, body []byte) error, doc []byte, exited <-chan struct{}, logPath string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := call("PUT", "/v1/document", doc)
		if err == nil {
			return nil
		}
		if strings.Contains(err.Error(), "HTTP 4") {
			return fmt.Errorf("%s refuses the benchmark's document: %w", name, err)
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("%s: vigil agent exited: %s", name, b)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s took no document within 60 s: %w", name, err)
		}
	}
}

// primary and secondary are the addresses of the record in force and its failover, by index:
// the hot name is index 0 and the flip name index 1, name n<i> index i+2.
func primary(i int) string   { return fmt.Sprintf("10.%d.%d.%d", 1+i>>16, i>>8&255, i&255) }
func secondary(i int) string { return fmt.Sprintf("10.%d.%d.%d", 128+i>>16, i>>8&255, i&255) }

// document is Vigil's configuration: every name a health-aware failover record set whose
// primary is checked against port.
func document(port, names int) map[string]any {
	tcp := func(id string) map[string]any {
		return map[string]any{"id": id, "protocol": "tcp", "interval": "1s", "timeout": "500ms",
			"allow_fewer_regions": true, "target": map[string]any{"host": "127.0.0.1", "port": port}}
	}
	failover := func(name string, i int, check string) map[string]any {
		return map[string]any{"name": name, "type": "A", "policy": "failover", "records": []any{
			map[string]any{"value": primary(i), "health_check": check, "role": "primary"},
			map[string]any{"value": secondary(i), "health_check": "up", "role": "secondary"},
		}}
	}
	sets := []any{failover("www", 0, "up"), failover("flip", 1, "flip")}
	for i := range names {
		sets = append(sets, failover(fmt.Sprintf("n%d", i), i+2, "up"))
	}
	return map[string]any{
		"regions": []string{"bench"},
		"checks":  []any{tcp("up"), tcp("flip")},
		"zones":   []any{map[string]any{"name": strings.TrimSuffix(apex, "."), "ttl": 300, "record_sets": sets}},
	}
}

// zoneFile returns the zone as NSD and Knot serve it: Vigil's apex SOA and NS (and the
// addresses of in-zone name servers) as Vigil answers them, and each name's primary record,
// the one in force. Without Vigil it writes an SOA and NS of its own.
func zoneFile(vigil *server, names int) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "$ORIGIN %s\n", apex)
	if vigil == nil {
		fmt.Fprintf(&b, "@ 300 IN SOA ns1 hostmaster 1 3600 600 86400 300\n@ 300 IN NS ns1\nns1 300 IN A 127.0.0.1\n")
	} else {
		for _, t := range []uint16{dns.TypeSOA, dns.TypeNS} {
			r, err := ask(vigil.addr, apex, t)
			if err != nil {
				return "", err
			}
			if len(r.Answer) == 0 {
				return "", fmt.Errorf("vigil answers no %s at the apex", dns.TypeToString[t])
			}
			for _, rr := range r.Answer {
				fmt.Fprintln(&b, rr.String())
				if ns, ok := rr.(*dns.NS); ok && dns.IsSubDomain(apex, ns.Ns) {
					g, err := ask(vigil.addr, ns.Ns, dns.TypeA)
					if err != nil {
						return "", err
					}
					for _, a := range g.Answer {
						fmt.Fprintln(&b, a.String())
					}
				}
			}
		}
	}
	fmt.Fprintf(&b, "www 300 IN A %s\nflip 300 IN A %s\n", primary(0), primary(1))
	for i := range names {
		fmt.Fprintf(&b, "n%d 300 IN A %s\n", i, primary(i+2))
	}
	return b.String(), nil
}

// ask sends one query over UDP.
func ask(addr, name string, t uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, t)
	r, _, err := (&dns.Client{Timeout: time.Second}).Exchange(m, addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s at %s: %w", name, dns.TypeToString[t], addr, err)
	}
	return r, nil
}

// answerIs reports whether r answers exactly the address want.
func answerIs(r *dns.Msg, want string) bool {
	if r == nil || len(r.Answer) != 1 {
		return false
	}
	a, ok := r.Answer[0].(*dns.A)
	return ok && a.A.String() == want
}

// waitFor waits up to 60 s until s answers name with the address want.
func waitFor(ctx context.Context, s *server, name, want string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		r, err := ask(s.addr, name, dns.TypeA)
		if err == nil && answerIs(r, want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer %s with %s within 60 s (last: %v %v)", s.name, name, want, r, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitAnswer waits until s answers name with its primary address.
func waitAnswer(ctx context.Context, s *server, name string) error {
	i, err := strconv.Atoi(strings.TrimPrefix(strings.Split(name, ".")[0], "n"))
	if err != nil {
		return err
	}
	return waitFor(ctx, s, name, primary(i+2))
}

// startNSD runs NSD with o.workers server processes (each its own socket: reuseport), and
// without the response rate limiting Debian's build turns on (200 answers a second per
// client network), which Vigil and Knot do not do either.
func startNSD(ctx context.Context, wg *sync.WaitGroup, o options, dir string) (*server, error) {
	bin, err := tool("nsd")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	ndir := filepath.Join(dir, "nsd")
	if err := os.MkdirAll(ndir, 0o755); err != nil {
		return nil, err
	}
	conf := fmt.Sprintf(`server:
  ip-address: 127.0.0.1@%d
  server-count: %d
  reuseport: yes
  rrl-ratelimit: 0
  rrl-whitelist-ratelimit: 0
  username: ""
  chroot: ""
  zonesdir: %q
  zonelistfile: %q
  database: ""
  pidfile: %q
  xfrdfile: %q
  xfrdir: %q
  logfile: %q
  verbosity: 0
remote-control:
  control-enable: no
zone:
  name: %q
  zonefile: %q
`, port, o.workers, ndir, filepath.Join(ndir, "zone.list"), filepath.Join(ndir, "nsd.pid"),
		filepath.Join(ndir, "xfrd.state"), ndir, filepath.Join(ndir, "nsd.log"), apex, filepath.Join(dir, "zone.db"))
	path := filepath.Join(ndir, "nsd.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	pid, _, err := start(ctx, wg, exec.Command(bin, "-d", "-c", path), filepath.Join(ndir, "out.log"))
	if err != nil {
		return nil, err
	}
	// NSD forks its server processes and a transfer daemon: all of them count.
	return &server{name: "nsd", addr: fmt.Sprintf("127.0.0.1:%d", port), pids: func() []int { return tree(pid) }}, nil
}

// startKnot runs knotd with o.workers UDP workers.
func startKnot(ctx context.Context, wg *sync.WaitGroup, o options, dir string) (*server, error) {
	bin, err := tool("knotd")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	kdir := filepath.Join(dir, "knot")
	if err := os.MkdirAll(kdir, 0o755); err != nil {
		return nil, err
	}
	user := ""
	if os.Getuid() == 0 {
		user = "    user: root\n"
	}
	conf := fmt.Sprintf(`server:
    rundir: %q
    listen: 127.0.0.1@%d
    udp-workers: %d
    tcp-workers: 1
    background-workers: 1
%sdatabase:
    storage: %q
log:
  - target: stderr
    any: warning
template:
  - id: default
    storage: %q
    zonefile-sync: -1
    zonefile-load: whole
    journal-content: none
zone:
  - domain: %s
    file: %q
`, kdir, port, o.workers, user, kdir, kdir, apex, filepath.Join(dir, "zone.db"))
	path := filepath.Join(kdir, "knot.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	pid, _, err := start(ctx, wg, exec.Command(bin, "-c", path), filepath.Join(kdir, "out.log"))
	if err != nil {
		return nil, err
	}
	return &server{name: "knot", addr: fmt.Sprintf("127.0.0.1:%d", port), pids: func() []int { return []int{pid} }}, nil
}

// tool finds a Debian daemon on PATH or in /usr/sbin.
func tool(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := "/usr/sbin/" + name
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s not found (Debian package %s)", name, map[string]string{"nsd": "nsd", "knotd": "knot"}[name])
}

// tree returns pid and its descendants.
func tree(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, err := statFields(p); err == nil {
			parent[p], _ = strconv.Atoi(f[1])
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		for p, pp := range parent {
			if pp == out[i] {
				out = append(out, p)
			}
		}
	}
	return out
}

// statFields returns the fields of /proc/PID/stat after the command name: state first.
func statFields(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	return strings.Fields(string(b[i+1:])), nil
}

// cpuSeconds returns the user and system CPU time of the processes, in seconds.
func cpuSeconds(pids []int) float64 {
	var ticks int64
	for _, p := range pids {
		f, err := statFields(p)
		if err != nil || len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return float64(ticks) / clockTicks
}

// loadAverage returns the 1-minute load average.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(b))[0]
}

// runOne runs dnsperf once against s with the query file, flipping the flip name's verdict
// every second when flip is set and s can; at saturation when rate is 0, else offering rate
// queries a second.
func runOne(ctx context.Context, o options, dnsperf, dir string, s *server, file string, flip bool, rate int) (result, error) {
	args := dnsperfArgs(o, s.addr, file, rate)
	_, port, _ := net.SplitHostPort(s.addr)
	// The output goes to a file read after the run, so that reading it takes no CPU time
	// while dnsperf runs.
	outPath := filepath.Join(dir, "dnsperf.out")
	out, err := os.Create(outPath)
	if err != nil {
		return result{}, err
	}
	defer out.Close()
	var stderr strings.Builder
	cmd := exec.CommandContext(ctx, dnsperf, args...)
	cmd.Stdout, cmd.Stderr = out, &stderr
	r := result{load: loadAverage(), offered: rate}
	pids := s.pids()
	dropsBefore, dropsErr := udpDrops(port)
	before := cpuSeconds(pids)
	if err := cmd.Start(); err != nil {
		return r, fmt.Errorf("dnsperf: %w", err)
	}
	flipCtx, stopFlip := context.WithCancel(ctx)
	var flips sync.WaitGroup
	if flip && s.flip != nil {
		flips.Add(1)
		go func() {
			defer flips.Done()
			r.flips, r.flipped, r.seen = flipEverySecond(flipCtx, s)
		}()
	}
	err = cmd.Wait()
	stopFlip()
	flips.Wait()
	r.cpu = cpuSeconds(pids) - before
	r.drops = -1
	if dropsAfter, err := udpDrops(port); err == nil && dropsErr == nil {
		r.drops = dropsAfter - dropsBefore
	}
	if err != nil {
		return r, fmt.Errorf("dnsperf: %w: %s", err, stderr.String())
	}
	if _, err := out.Seek(0, 0); err != nil {
		return r, err
	}
	if err := readDNSPerf(out, &r); err != nil {
		return r, fmt.Errorf("%w: %s", err, stderr.String())
	}
	return r, nil
}

// dnsperfArgs returns dnsperf's arguments for a run of o against the server at addr with
// the queries of file: at saturation, or at rate queries a second when rate > 0.
func dnsperfArgs(o options, addr, file string, rate int) []string {
	host, port, _ := net.SplitHostPort(addr)
	outstanding := o.outstanding
	if rate > 0 {
		outstanding = o.rateOutstanding
	}
	args := []string{"-s", host, "-p", port, "-d", file, "-c", strconv.Itoa(o.clients),
		"-q", strconv.Itoa(outstanding), "-l", strconv.FormatFloat(o.duration.Seconds(), 'f', -1, 64), "-t", "2"}
	if rate > 0 {
		args = append(args, "-Q", strconv.Itoa(rate))
	}
	// The fixed-rate runs always print every latency: their p99 is what they are for.
	if o.latency || rate > 0 {
		args = append(args, "-v")
	}
	return args
}

// readDNSPerf reads dnsperf's output into r: its figures and, with -v, every answered
// query's latency, of which it keeps the p50, p99 and p99.9.
func readDNSPerf(out io.Reader, r *result) error {
	var lat []time.Duration
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		f := strings.Fields(line)
		switch {
		case len(f) == 5 && f[0] == ">":
			if v, err := strconv.ParseFloat(f[4], 64); err == nil {
				lat = append(lat, time.Duration(v*float64(time.Second)))
			}
		case strings.HasPrefix(line, "Queries per second:"):
			r.qps, _ = strconv.ParseFloat(f[3], 64)
		case strings.HasPrefix(line, "Queries sent:"):
			r.sent, _ = strconv.Atoi(f[2])
		case strings.HasPrefix(line, "Queries completed:"):
			r.done, _ = strconv.Atoi(f[2])
		case strings.HasPrefix(line, "Run time (s):"):
			r.runtime, _ = strconv.ParseFloat(f[3], 64)
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if r.sent == 0 {
		return errors.New("dnsperf printed no figures")
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		r.p50, r.p99, r.p999 = quantile(lat, 0.5), quantile(lat, 0.99), quantile(lat, 0.999)
	}
	return nil
}

// udpDrops sums the datagrams the kernel dropped, for want of room in their receive
// buffers, at the UDP sockets bound to port (the drops column of /proc/net/udp and udp6):
// the queries a server lost before it could read them.
func udpDrops(port string) (int, error) {
	p, err := strconv.Atoi(port)
	if err != nil {
		return 0, err
	}
	want := fmt.Sprintf(":%04X", p)
	total := 0
	for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			return 0, err
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 13 || !strings.HasSuffix(fields[1], want) {
				continue
			}
			n, err := strconv.Atoi(fields[len(fields)-1])
			if err != nil {
				return 0, fmt.Errorf("%s: %q: %w", f, line, err)
			}
			total += n
		}
	}
	return total, nil
}

// quantile returns the q-quantile of sorted latencies: the least latency that at least a
// fraction q of them do not exceed.
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(len(sorted)-1, i))]
}

// flipEverySecond flips the flip name's verdict every second until ctx ends, and after each
// flip asks until the answer changes (for up to 5 s, and then waits for the next whole
// second): it returns the flips made, those seen answered, and how long each took to be seen
// from the write's acknowledgement.
func flipEverySecond(ctx context.Context, s *server) (flips, seen int, took []time.Duration) {
	down := false
	defer func() {
		if down {
			_ = s.flip(context.WithoutCancel(ctx), false)
		}
	}()
	next := time.Now()
	for {
		next = next.Add(time.Second)
		if d := time.Until(next); d > 0 {
			select {
			case <-ctx.Done():
				return flips, seen, took
			case <-time.After(d):
			}
		} else {
			next = time.Now()
		}
		if ctx.Err() != nil {
			return flips, seen, took
		}
		down = !down
		if err := s.flip(ctx, down); err != nil {
			continue
		}
		flips++
		want := primary(1)
		if down {
			want = secondary(1)
		}
		acked := time.Now()
		for time.Since(acked) < 5*time.Second && ctx.Err() == nil {
			if r, err := ask(s.addr, "flip."+apex, dns.TypeA); err == nil && answerIs(r, want) {
				seen++
				took = append(took, time.Since(acked))
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
