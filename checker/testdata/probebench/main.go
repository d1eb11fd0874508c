// Command probebench measures HTTP probes per CPU-second of a real `vigil agent` checker
// process, side by side in the same run with Prometheus' blackbox_exporter probing the same
// targets at the same rate, driven by a scrape loop like Prometheus'.
//
// For each round and each vigil binary named, it starts a control voter, a checker and a
// location (vigil agent -roles control, checker, location) on loopback, applies a document of
// -checks HTTP checks at -interval over the target server's ports, waits until the checker
// probes them all, and then counts, over -window: the checker's probes (its
// vigil_checker_probes_total) and the checker process's CPU time (utime+stime from
// /proc/<pid>/stat); and the same for blackbox_exporter (probe_success of every scrape, the
// exporter process's CPU), at -bbe-checks targets. The target server is a separate process (this command run as
// `probebench serve`): net/http servers on -ports loopback ports answering "ok".
//
// checker/testdata/bench-probes.sh builds everything and runs it.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// checkerEnv is added to the checker's environment (profiling builds read it).
var checkerEnv = flag.String("checker-env", "", "comma-separated VAR=VALUE added to the checker process's environment")

func main() {
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		serve(os.Args[2:])
		return
	}
	vigils := flag.String("vigil", "", "comma-separated NAME=PATH of vigil binaries to run in turn; PATH@YAML adds the line YAML to every check (e.g. new=/tmp/vigil@keep_alive: true)")
	bbe := flag.String("bbe", "", "path of blackbox_exporter (none: vigil alone)")
	checks := flag.Int("checks", 3000, "HTTP checks")
	bbeChecks := flag.Int("bbe-checks", 300, "targets blackbox_exporter is scraped for at -interval (-1: -checks); at about 800 probes per CPU-second it cannot keep 3,000 a second on a small machine, and scrapes that outlive the interval are cancelled and count nothing")
	interval := flag.Duration("interval", time.Second, "interval of every check and of the scrape loop")
	ports := flag.Int("ports", 64, "ports of the target server the checks spread over")
	rounds := flag.Int("rounds", 3, "rounds; each runs every vigil binary in turn")
	warm := flag.Duration("warm", 10*time.Second, "time between the checker probing every check and the window")
	window := flag.Duration("window", 20*time.Second, "time counted")
	dir := flag.String("dir", "", "working directory (default a temporary one, removed at the end)")
	flag.Parse()
	if *vigils == "" {
		fmt.Fprintln(os.Stderr, "probebench: -vigil is required")
		os.Exit(2)
	}
	if *bbeChecks < 0 {
		*bbeChecks = *checks
	}
	if err := run(*vigils, *bbe, *checks, *bbeChecks, *interval, *ports, *rounds, *warm, *window, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "probebench:", err)
		os.Exit(1)
	}
}

type spec struct{ name, path, extra string }

func parseSpecs(s string) []spec {
	var out []spec
	for _, f := range strings.Split(s, ",") {
		name, path, ok := strings.Cut(f, "=")
		if !ok {
			name, path = filepath.Base(f), f
		}
		path, extra, _ := strings.Cut(path, "@")
		out = append(out, spec{name, path, extra})
	}
	return out
}

// printChecks says what each binary's checks add to the document, and so how their probes
// connect, beside blackbox_exporter's.
func printChecks(specs []spec) {
	for _, s := range specs {
		extra := "nothing added: each probe on a fresh connection, the default"
		if s.extra != "" {
			extra = "every check with `" + s.extra + "`"
		}
		fmt.Printf("vigil %s (%s): %s\n", s.name, s.path, extra)
	}
	fmt.Println("blackbox_exporter: each probe on a fresh connection (its http prober keeps none)")
}

// procs are the processes started, stopped at the end whatever happens.
type procs struct {
	mu   sync.Mutex
	list []*exec.Cmd
}

func (p *procs) start(dir, name string, bin string, args ...string) (*exec.Cmd, error) {
	cmd := exec.Command(bin, args...)
	if name == "checker" && *checkerEnv != "" {
		cmd.Env = append(os.Environ(), strings.Split(*checkerEnv, ",")...)
	}
	log, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.list = append(p.list, cmd)
	p.mu.Unlock()
	return cmd, nil
}

func (p *procs) stop(cmds ...*exec.Cmd) {
	for _, c := range cmds {
		_ = c.Process.Signal(syscall.SIGTERM)
	}
	for _, c := range cmds {
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = c.Process.Kill()
			<-done
		}
		p.mu.Lock()
		p.list = slices.DeleteFunc(p.list, func(x *exec.Cmd) bool { return x == c })
		p.mu.Unlock()
	}
}

func (p *procs) stopAll() {
	p.mu.Lock()
	l := slices.Clone(p.list)
	p.mu.Unlock()
	p.stop(l...)
}

func run(vigils, bbe string, checks, bbeChecks int, interval time.Duration, nports, rounds int, warm, window time.Duration, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "probebench.")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	var ps procs
	defer ps.stopAll()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	target, err := ps.start(dir, "targets", self, "serve", "-ports", strconv.Itoa(nports), "-out", filepath.Join(dir, "ports"))
	if err != nil {
		return err
	}
	var addrs []string
	for i := 0; ; i++ {
		b, err := os.ReadFile(filepath.Join(dir, "ports"))
		if err == nil && bytes.HasSuffix(b, []byte("\n")) {
			addrs = strings.Fields(string(b))
			break
		}
		if i > 100 {
			return errors.New("target server did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Printf("machine: %d cores; load before: %s; %d checks at %s over %d target ports; blackbox_exporter scraped for %d targets at %s; window %s after %s warm\n",
		numCPU(), loadavg(), checks, interval, len(addrs), bbeChecks, interval, window, warm)
	printChecks(parseSpecs(vigils))

	var drv *driver
	var bbeCmd *exec.Cmd
	if bbe != "" {
		listen := freeAddr()
		cfg := filepath.Join(dir, "blackbox.yml")
		timeout := min(interval*9/10, 5*time.Second)
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`modules:
  http_ok:
    prober: http
    timeout: %s
    http:
      preferred_ip_protocol: ip4
      fail_if_body_not_matches_regexp: ["ok"]
`, timeout)), 0o644); err != nil {
			return err
		}
		bbeCmd, err = ps.start(dir, "blackbox", bbe, "--config.file="+cfg, "--web.listen-address="+listen, "--log.level=warn")
		if err != nil {
			return err
		}
		if err := waitHTTP("http://"+listen+"/metrics", 200, 10*time.Second); err != nil {
			return fmt.Errorf("blackbox_exporter: %w", err)
		}
		drv = newDriver("http://"+listen+"/probe?module=http_ok&target=", targets(addrs, bbeChecks), interval)
		go drv.run()
		defer drv.stop()
	}

	type row struct {
		name                  string
		round                 int
		probes, healthy       float64
		cpu                   time.Duration
		bbeProbes, bbeSuccess int64
		bbeCPU, targetCPU     time.Duration
		load                  string
	}
	var rows []row
	for r := 1; r <= rounds; r++ {
		for _, s := range parseSpecs(vigils) {
			res, err := runVigil(&ps, dir, s, addrs, checks, interval, warm, window, func() func() (int64, int64, time.Duration, time.Duration) {
				t0 := cpuOf(target.Process.Pid)
				var b0 time.Duration
				var p0, s0 int64
				if drv != nil {
					b0 = cpuOf(bbeCmd.Process.Pid)
					p0, s0 = drv.count()
				}
				return func() (int64, int64, time.Duration, time.Duration) {
					tc := cpuOf(target.Process.Pid) - t0
					if drv == nil {
						return 0, 0, 0, tc
					}
					p1, s1 := drv.count()
					return p1 - p0, s1 - s0, cpuOf(bbeCmd.Process.Pid) - b0, tc
				}
			})
			if err != nil {
				return fmt.Errorf("%s round %d: %w", s.name, r, err)
			}
			rw := row{name: s.name, round: r, probes: res.probes, healthy: res.healthy, cpu: res.cpu,
				bbeProbes: res.bbeProbes, bbeSuccess: res.bbeSuccess, bbeCPU: res.bbeCPU, targetCPU: res.targetCPU, load: loadavg()}
			rows = append(rows, rw)
			line := fmt.Sprintf("round %d %-12s vigil checker: %6.0f probes (%.0f healthy, %.0f skipped; mean lag %s, mean probe %s) in %s, CPU %6.2fs: %6.0f probes per CPU-second (%.0f µs a probe)",
				r, s.name, rw.probes, rw.healthy, res.skipped, res.lag.Round(time.Microsecond), res.duration.Round(time.Microsecond), window, rw.cpu.Seconds(), rw.probes/rw.cpu.Seconds(), rw.cpu.Seconds()*1e6/rw.probes)
			if drv != nil {
				line += fmt.Sprintf("; blackbox_exporter: %d probes (%d success), CPU %.2fs: %.0f probes per CPU-second",
					rw.bbeProbes, rw.bbeSuccess, rw.bbeCPU.Seconds(), float64(rw.bbeProbes)/rw.bbeCPU.Seconds())
			}
			line += fmt.Sprintf("; targets' CPU %.2fs; load %s", rw.targetCPU.Seconds(), rw.load)
			fmt.Println(line)
		}
	}
	fmt.Println()
	fmt.Println("| vigil binary | rounds | vigil checker probes per CPU-second | blackbox_exporter probes per CPU-second (same windows) |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, s := range parseSpecs(vigils) {
		var v, b []string
		n := 0
		for _, rw := range rows {
			if rw.name != s.name {
				continue
			}
			n++
			v = append(v, fmt.Sprintf("%.0f", rw.probes/rw.cpu.Seconds()))
			if drv != nil {
				b = append(b, fmt.Sprintf("%.0f", float64(rw.bbeProbes)/rw.bbeCPU.Seconds()))
			}
		}
		fmt.Printf("| %s | %d | %s | %s |\n", s.name, n, strings.Join(v, " / "), strings.Join(b, " / "))
	}
	fmt.Printf("load after: %s\n", loadavg())
	return nil
}

type result struct {
	probes, healthy       float64
	skipped               float64
	lag, duration         time.Duration // means over the window
	cpu                   time.Duration
	bbeProbes, bbeSuccess int64
	bbeCPU, targetCPU     time.Duration
}

// runVigil runs one measurement of the vigil binary s: control, checker and location started
// afresh, the document applied, the window counted, all stopped.
func runVigil(ps *procs, dir string, s spec, addrs []string, checks int, interval, warm, window time.Duration,
	peers func() func() (int64, int64, time.Duration, time.Duration)) (result, error) {
	d, err := os.MkdirTemp(dir, s.name+".")
	if err != nil {
		return result{}, err
	}
	tokens := filepath.Join(d, "tokens")
	if err := os.WriteFile(tokens, []byte("probebench-token\n"), 0o600); err != nil {
		return result{}, err
	}
	api, checkerHTTP := freeAddr(), freeAddr()
	gossipChecker := freeAddr()
	common := []string{"-token-file", tokens, "-insecure-gossip", "-log-level", "warn"}
	control, err := ps.start(d, "control", s.path, append([]string{"agent", "-roles", "control", "-id", "c1",
		"-data-dir", filepath.Join(d, "c1"), "-raft-addr", freeAddr(), "-api-addr", api, "-bootstrap",
		"-insecure-raft-plaintext", "-open-reads", "-gossip-bind", freeAddr(), "-http", "off"}, common...)...)
	if err != nil {
		return result{}, err
	}
	defer ps.stop(control)
	if err := waitHTTP("http://"+api+"/v1/cluster", 200, 30*time.Second); err != nil {
		return result{}, fmt.Errorf("control: %w", err)
	}
	doc := filepath.Join(d, "checks.yaml")
	if err := os.WriteFile(doc, document(addrs, checks, interval, s.extra), 0o644); err != nil {
		return result{}, err
	}
	apply := exec.Command(s.path, "apply", "-f", doc, "-server", "http://"+api, "-timeout", "120s")
	apply.Env = append(os.Environ(), "VIGIL_TOKEN=probebench-token")
	if out, err := apply.CombinedOutput(); err != nil {
		return result{}, fmt.Errorf("apply: %w: %s", err, out)
	}
	checker, err := ps.start(d, "checker", s.path, append([]string{"agent", "-roles", "checker", "-id", "k1", "-region", "r1",
		"-data-dir", filepath.Join(d, "k1"), "-control", "http://" + api, "-gossip-bind", gossipChecker,
		"-http", checkerHTTP, "-allow-loopback-probes"}, common...)...)
	if err != nil {
		return result{}, err
	}
	defer ps.stop(checker)
	location, err := ps.start(d, "location", s.path, append([]string{"agent", "-roles", "location", "-id", "l1", "-region", "r1",
		"-data-dir", filepath.Join(d, "l1"), "-control", "http://" + api, "-gossip-bind", freeAddr(), "-join", gossipChecker,
		"-dns", freeAddr(), "-http", "off"}, common...)...)
	if err != nil {
		return result{}, err
	}
	defer ps.stop(location)
	metricsURL := "http://" + checkerHTTP + "/metrics"
	deadline := time.Now().Add(60 * time.Second)
	for {
		m, _ := scrape(metricsURL)
		if m["vigil_checker_checks_assigned"] >= float64(checks) {
			break
		}
		if time.Now().After(deadline) {
			return result{}, fmt.Errorf("checker: %v checks assigned after 60s (see %s)", m["vigil_checker_checks_assigned"], d)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(warm)
	m0, err := scrape(metricsURL)
	if err != nil {
		return result{}, err
	}
	c0 := cpuOf(checker.Process.Pid)
	end := peers()
	time.Sleep(window)
	bp, bs, bc, tc := end()
	c1 := cpuOf(checker.Process.Pid)
	m1, err := scrape(metricsURL)
	if err != nil {
		return result{}, err
	}
	return result{
		probes:    m1["vigil_checker_probes_total"] - m0["vigil_checker_probes_total"],
		healthy:   m1["vigil_checker_probes_total/healthy"] - m0["vigil_checker_probes_total/healthy"],
		skipped:   m1["vigil_checker_probes_skipped_total"] - m0["vigil_checker_probes_skipped_total"],
		lag:       mean(m0, m1, "vigil_checker_scheduler_lag_seconds"),
		duration:  mean(m0, m1, "vigil_checker_probe_duration_seconds_%s/total"),
		cpu:       c1 - c0,
		bbeProbes: bp, bbeSuccess: bs, bbeCPU: bc, targetCPU: tc,
	}, nil
}

// mean is the mean of a histogram over the window between scrapes m0 and m1; name is the
// histogram's name, or a format with %s for "sum" and "count".
func mean(m0, m1 map[string]float64, name string) time.Duration {
	sum, count := name+"_sum", name+"_count"
	if strings.Contains(name, "%s") {
		sum, count = fmt.Sprintf(name, "sum"), fmt.Sprintf(name, "count")
	}
	n := m1[count] - m0[count]
	if n <= 0 {
		return 0
	}
	return time.Duration((m1[sum] - m0[sum]) / n * float64(time.Second))
}

// document is the configuration: one region, checks i = 0..n-1 probing GET /c/i on the
// target ports in turn, body match "ok".
func document(addrs []string, n int, interval time.Duration, extra string) []byte {
	var b bytes.Buffer
	b.WriteString("regions: [r1]\nchecks:\n")
	for i := range n {
		host, port, _ := net.SplitHostPort(addrs[i%len(addrs)])
		fmt.Fprintf(&b, "  - id: c%d\n    protocol: http\n    target: {host: %s, port: %s}\n    path: /c/%d\n", i, host, port, i)
		fmt.Fprintf(&b, "    interval: %s\n    timeout: %s\n    body_match: ok\n", interval, interval*9/10)
		b.WriteString("    regions: [r1]\n    allow_fewer_regions: true\n    checkers_per_region: 1\n")
		if extra != "" {
			fmt.Fprintf(&b, "    %s\n", extra)
		}
	}
	return b.Bytes()
}

func targets(addrs []string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "http://" + addrs[i%len(addrs)] + "/c/" + strconv.Itoa(i)
	}
	return out
}

// scrape reads a Prometheus text page into sums by metric name; for
// vigil_checker_probes_total it also sums the healthy series under "name/healthy".
func scrape(url string) (map[string]float64, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		name := line[:i]
		labels := ""
		if j := strings.IndexByte(name, '{'); j >= 0 {
			name, labels = name[:j], name[j:]
		}
		out[name] += v
		if name == "vigil_checker_probes_total" && strings.Contains(labels, `result="healthy"`) {
			out[name+"/healthy"] += v
		}
		if strings.HasPrefix(name, "vigil_checker_probe_duration_seconds_") && strings.Contains(labels, `phase="total"`) {
			out[name+"/total"] += v
		}
	}
	return out, sc.Err()
}

// driver scrapes blackbox_exporter for every target once per interval, each target at its
// own phase, one scrape at a time per target (a tick that comes while one is in flight is
// skipped).
type driver struct {
	base     string
	targets  []string
	interval time.Duration
	client   *http.Client
	probes   atomic.Int64
	success  atomic.Int64
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

func newDriver(base string, targets []string, interval time.Duration) *driver {
	ctx, cancel := context.WithCancel(context.Background())
	tr := &http.Transport{MaxIdleConnsPerHost: 1024, MaxIdleConns: 1024}
	return &driver{base: base, targets: targets, interval: interval, client: &http.Client{Transport: tr}, ctx: ctx, cancel: cancel}
}

func (d *driver) run() {
	for i, t := range d.targets {
		phase := d.interval * time.Duration(i) / time.Duration(len(d.targets))
		d.wg.Go(func() {
			select {
			case <-time.After(phase):
			case <-d.ctx.Done():
				return
			}
			tick := time.NewTicker(d.interval)
			defer tick.Stop()
			u := d.base + t
			for {
				d.once(u)
				select {
				case <-tick.C:
				case <-d.ctx.Done():
					return
				}
				// A scrape that outlived its interval has used up the ticks it missed.
				select {
				case <-tick.C:
				default:
				}
			}
		})
	}
}

func (d *driver) once(u string) {
	// Longer than the interval: on a loaded machine the exporter's answer may come late, and
	// a probe it made still counts (its own timeout, the module's, bounds the probe).
	ctx, cancel := context.WithTimeout(d.ctx, 10*d.interval)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := d.client.Do(req)
	if err != nil {
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		return
	}
	d.probes.Add(1)
	if bytes.Contains(body, []byte("\nprobe_success 1\n")) {
		d.success.Add(1)
	}
}

func (d *driver) count() (int64, int64) { return d.probes.Load(), d.success.Load() }

func (d *driver) stop() { d.cancel(); d.wg.Wait() }

// serve runs the target server: -ports net/http servers on 127.0.0.1, every path answered
// 200 "ok"; it writes their addresses to -out, one line.
func serve(args []string) {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	n := fs.Int("ports", 64, "ports")
	out := fs.String("out", "", "file to write the addresses to")
	_ = fs.Parse(args)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", "3")
		_, _ = w.Write([]byte("ok\n"))
	})
	var addrs []string
	for range *n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		addrs = append(addrs, ln.Addr().String())
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
		go func() { _ = srv.Serve(ln) }()
	}
	tmp := *out + ".tmp"
	if err := os.WriteFile(tmp, []byte(strings.Join(addrs, " ")+"\n"), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = os.Rename(tmp, *out)
	select {}
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	// The same port is free for UDP too in practice (gossip and DNS bind both).
	return ln.Addr().String()
}

func waitHTTP(url string, code int, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == code {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer %d within %s (last error %v)", url, code, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cpuOf is the user plus system CPU time of process pid so far.
func cpuOf(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// Fields after the command: state is 0, utime is 11, stime 12.
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const hz = 100 // USER_HZ: clock ticks per second on Linux
	return time.Duration(u+st) * time.Second / hz
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return bytes.Count(b, []byte("\nprocessor\t")) + 1
}
