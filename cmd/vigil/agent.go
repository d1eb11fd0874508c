package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-dns/vigil/agent"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/internal/httpguard"
	"github.com/vigil-dns/vigil/internal/sdnotify"
	"github.com/vigil-dns/vigil/internal/tlsconf"
	"github.com/vigil-dns/vigil/location"
)

// agentFlags is the configuration of `vigil agent`.
type agentFlags struct {
	roles, id, region, dataDir                 string
	raftAddr, apiAddr, apiURL                  string
	raftLogStore                               string
	bootstrap                                  bool
	bootstrapID, raftAdvertise                 string
	bootstrapCheckWait                         time.Duration
	join                                       string
	gossipBind, gossipAdvertise, gossipKeyFile string
	insecureGossip                             bool
	dnssecSecretFile                           string
	dnssecSignBudget                           int
	insecureDNSSECFromGossip                   bool
	voters                                     string
	tokenFile, readTokenFile                   string
	openReads                                  bool
	notifyLocations                            string
	notifyInterval                             time.Duration
	dnsAddr, nameServers, httpAddr             string
	httpAdvertise                              string
	nsBudget, rrlRate, rrlSlip                 int
	allowLoopback                              bool
	probeAllow, probeCA                        string
	tlsCert, tlsKey, tlsCA                     string
	tlsRequireClientCert                       bool
	tlsRecheck                                 time.Duration
	raftSecretFile                             string
	insecureRaftPlaintext                      bool
	logLevel                                   string
	memoryLimit                                string
	http                                       httpguard.Limits
	gossipLimits                               gossip.InboundLimits
	dnsTCP                                     agent.DNSTCPLimits
	dnsAnswerCache, dnsUDPSockets              int
	verify                                     verifyFlags
	configFile                                 string
	tsigKeysFile                               string
}

// agentFlagGroups sorts the agent's flags into groups for its help.
func agentFlagGroups() flagGroups {
	groups := []struct {
		name  string
		flags []string
	}{
		{"roles & identity", []string{"config", "roles", "id", "region", "data-dir", "log-level", "memory-limit"}},
		{"control plane", []string{"raft-addr", "raft-advertise", "raft-log-store", "api-addr", "api-url", "raft-secret-file", "insecure-raft-plaintext",
			"bootstrap", "bootstrap-id", "bootstrap-check-wait", "control", "token-file", "read-token-file", "open-reads", "notify-interval", "notify-locations"}},
		{"gossip", []string{"join", "gossip-bind", "gossip-advertise", "gossip-key-file", "insecure-gossip", "gossip-max-streams",
			"gossip-max-streams-per-source", "gossip-max-stream-bytes", "gossip-max-buffered-bytes", "gossip-stream-timeout"}},
		{"DNS (location)", []string{"dns", "ns", "ns-budget", "rrl", "rrl-slip", "dns-tcp-max-conns", "dns-tcp-max-conns-per-client",
			"dns-tcp-idle-timeout", "dns-tcp-lifetime", "dns-answer-cache", "dns-udp-sockets", "dnssec-secret-file", "insecure-dnssec-secret-from-gossip-key", "tsig-keys-file",
			"dnssec-sign-budget"}},
		{"HTTP and its limits", []string{"http", "http-advertise", "http-header-timeout", "http-body-timeout", "http-idle-timeout",
			"http-max-conns", "http-max-conns-per-source"}},
		{"TLS", []string{"tls-cert", "tls-key", "tls-ca", "tls-require-client-cert", "tls-recheck"}},
		{"checker", []string{"allow-loopback-probes", "probe-allow", "probe-ca"}},
		{"answer verification (checker)", []string{"verify-interval", "verify-http-port", "verify-dns-port"}},
	}
	g := flagGroups{of: map[string]string{}}
	for _, grp := range groups {
		g.order = append(g.order, grp.name)
		for _, f := range grp.flags {
			g.of[f] = grp.name
		}
	}
	return g
}

// runAgent runs the roles of one node: control (a raft voter and its HTTP API, with /metrics
// beside it), checker and location (the data plane, with its own HTTP listener), in any
// combination.
func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f agentFlags
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs)
	if code, stop := parseFlags(ctx, fs, args, stdout, stderr); stop {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vigil agent: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var origin agentFileOrigin
	if f.configFile != "" {
		set := map[string]bool{}
		fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
		var err error
		if origin, err = loadAgentFile(fs, f.configFile, set); err != nil {
			fmt.Fprintf(stderr, "vigil agent: %v\n", err)
			return 2
		}
	}
	cfg, log, err := agentConfig(f, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "vigil agent: %s\n", origin.explain(err.Error()))
		return 2
	}
	if err := setMemoryLimit(f.memoryLimit, log); err != nil {
		fmt.Fprintf(stderr, "vigil agent: %s\n", origin.explain(err.Error()))
		return 2
	}
	n, err := agent.New(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "vigil agent: %s\n", origin.explain(err.Error()))
		return 1
	}
	if n.HTTPAddr() != "" {
		if err := n.MountStatus(nil); err != nil {
			n.Close()
			fmt.Fprintf(stderr, "vigil agent: %v\n", err)
			return 1
		}
	}
	v, err := newAgentVerifier(n, cfg.Roles, f.verify)
	if err == nil && v != nil && n.HTTPAddr() != "" {
		err = n.Handle("GET /v1/verification", v)
	}
	if err != nil {
		n.Close()
		fmt.Fprintf(stderr, "vigil agent: %s\n", origin.explain(err.Error()))
		return 2
	}
	if v != nil {
		defer background(ctx, func(ctx context.Context) { _ = v.Run(ctx) })()
	}
	printAgentBanner(stdout, n, cfg.DataDir)
	defer ignoreHangup(ctx, log)()
	// Under systemd (Type=notify), READY=1 when /readyz would say ready, STOPPING=1 at the end.
	if notifier := sdnotify.New(os.Getenv("NOTIFY_SOCKET")); notifier != nil {
		defer background(ctx, func(ctx context.Context) {
			notifier.Watch(ctx, func() (bool, string) {
				rd := n.Ready()
				return rd.Ready, "not ready: " + strings.Join(rd.Reasons, "; ")
			}, 250*time.Millisecond, func(err error) { log.Warn("vigil agent: telling systemd", "err", err) })
		})()
	}
	if err := n.Run(ctx); err != nil {
		log.Error("vigil agent: stopped", "err", err)
		fmt.Fprintf(stderr, "vigil agent: %v\n", err)
		return 1
	}
	return 0
}

// ignoreHangup keeps SIGHUP from ending the agent until stop is called. Go's default handling
// would end the process, and systemd counts an exit by SIGHUP as clean, so an operator's
// `kill -HUP` (the reload habit of Consul and Prometheus) would leave the node down for good.
// Certificates and token files reload on their own; the warning says that the agent file and
// flags need a restart.
func ignoreHangup(ctx context.Context, log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	done := background(ctx, func(ctx context.Context) {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				log.Warn("vigil agent: SIGHUP ignored: certificates and token files reload by themselves; restart the agent to apply a changed agent file or flags")
			}
		}
	})
	return func() {
		done()
		signal.Stop(hup)
	}
}

// setMemoryLimit sets the runtime's soft memory limit that -memory-limit, GOMEMLIMIT or the
// cgroup's memory.max gives (memoryLimit), and logs it and where it came from.
func setMemoryLimit(flagValue string, log *slog.Logger) error {
	limit, from, err := memoryLimit(flagValue, os.Getenv("GOMEMLIMIT"), cgroupMemoryMax)
	if err != nil {
		return fmt.Errorf("-memory-limit: %w", err)
	}
	if limit > 0 {
		debug.SetMemoryLimit(limit)
		log.Info("memory limit", "bytes", limit, "from", from)
	}
	return nil
}

// background runs fn in a goroutine with a context that ends with ctx or at stop, and returns
// stop, which ends that context and waits for fn to return.
func background(ctx context.Context, fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// printAgentBanner writes the line that says what the agent runs and where it listens.
func printAgentBanner(stdout io.Writer, n *agent.Node, dataDir string) {
	self := n.Self()
	fmt.Fprintf(stdout, "vigil agent: node %s (%s)", self.ID, strings.Join(self.Roles, "+"))
	if self.Region != "" {
		fmt.Fprintf(stdout, " in %s", self.Region)
	}
	fmt.Fprintf(stdout, ": data %s", dataDir)
	if a := n.ControlAPIAddr(); a != "" {
		fmt.Fprintf(stdout, ", control API %s", self.ControlAPI)
	}
	if a := n.GossipAddr(); a != "" {
		fmt.Fprintf(stdout, ", gossip %s", a)
	}
	if a := n.DNSAddr(); a != "" {
		fmt.Fprintf(stdout, ", DNS %s", a)
	}
	if a := n.HTTPAddr(); a != "" {
		fmt.Fprintf(stdout, ", HTTP %s", a)
	}
	fmt.Fprintln(stdout)
}

// register defines the flags of `vigil agent` on fs, bound to f.
func (f *agentFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.configFile, "config", "", "YAML file of these settings, one field a flag (docs/agent-config.md), e.g. /etc/vigil/agent.yaml; flags given here override it, and its relative paths are taken from its directory")
	fs.StringVar(&f.roles, "roles", "control", "comma-separated roles to run: control, checker, location")
	fs.StringVar(&f.id, "id", "", "this node's id: gossip name and raft ID (default: the host name)")
	fs.StringVar(&f.region, "region", "", "this node's region (required for checker and location)")
	fs.StringVar(&f.dataDir, "data-dir", "vigil-data", "directory of the node's state: raft log and snapshots (control/), configuration copy (config.json)")
	fs.StringVar(&f.raftAddr, "raft-addr", "127.0.0.1:7000", "control: address of the raft transport (listen and advertise)")
	fs.StringVar(&f.raftLogStore, "raft-log-store", "", "control: raft log store of a new data directory: \"boltdb\" (raft-boltdb, raft.db: two syncs per append; the default) or \"wal\" (hashicorp/raft-wal v0.4.0, wal/: one sync per append, opt-in: a voter restarted after raft deleted a suffix of its log cannot start, see docs/operator-guide.md); unset, a directory that holds one keeps it; set to the other, the voter refuses to start")
	fs.StringVar(&f.apiAddr, "api-addr", "127.0.0.1:7100", "control: address of the HTTP API")
	fs.StringVar(&f.apiURL, "api-url", "", "control: URL other voters reach this API at (default from -api-addr)")
	fs.StringVar(&f.raftSecretFile, "raft-secret-file", "", "control, without -tls-*: file of the cluster secret (base64 of 32 random bytes) that raft authenticates voters with, the same on every voter; default <data-dir>/control/raft-secret, which -bootstrap generates when it is missing (copy it to the other voters)")
	fs.BoolVar(&f.insecureRaftPlaintext, "insecure-raft-plaintext", false, "control: run raft over plain TCP without authentication, so that anyone who reaches -raft-addr can rewrite the cluster's state (development only)")
	fs.BoolVar(&f.bootstrap, "bootstrap", false, "control: start a new cluster with this voter as its first member")
	fs.StringVar(&f.bootstrapID, "bootstrap-id", "", "control: -bootstrap on the voter whose -id is this, -join (its http(s) URLs) on the others: one command line for every voter, as a Kubernetes StatefulSet gives its pods")
	fs.DurationVar(&f.bootstrapCheckWait, "bootstrap-check-wait", 5*time.Second, "control, with -bootstrap-id: how long the voter that would bootstrap with an empty data directory first asks the voters of -join whether a cluster exists (it joins one that does, instead of starting a second); 0 skips the check")
	fs.StringVar(&f.raftAdvertise, "raft-advertise", "", "control: host:port other voters dial for raft (default -raft-addr); a DNS name is kept and resolved at each dial, so a voter whose address changes across restarts (a Kubernetes pod) stays reachable; needs -raft-secret-file or -tls-*")
	fs.StringVar(&f.join, "join", "", "comma-separated peers to join: gossip members (host:port) and, for the control role, voters' API URLs (http:// or https://)")
	fs.StringVar(&f.gossipBind, "gossip-bind", "127.0.0.1:7946", "gossip: address to listen on (UDP and TCP)")
	fs.StringVar(&f.gossipAdvertise, "gossip-advertise", "", "gossip: address other nodes dial (default the bind address)")
	fs.StringVar(&f.gossipKeyFile, "gossip-key-file", "", "gossip: file of base64 encryption keys, one per line, the primary first")
	fs.BoolVar(&f.insecureGossip, "insecure-gossip", false, "gossip: run unencrypted (development only)")
	f.registerDNSSEC(fs)
	f.registerTransfers(fs)
	fs.StringVar(&f.voters, "control", "", "comma-separated API URLs of control voters the data plane follows (default: this node's own voter)")
	fs.StringVar(&f.tokenFile, "token-file", "", "file of bearer tokens, one per line: a plain token may write (control role; the first one joins voters and reads the configuration for the data plane); a line \"name scope sha256:<hex>\" (vigil token create) is a named token with a scope, stored hashed; a voter reloads the file within seconds of a change (a file that does not parse is refused and the tokens in use stay)")
	fs.StringVar(&f.readTokenFile, "read-token-file", "", "file of bearer tokens allowed to read, one per line; the data plane reads with the first; a voter reloads the file when it changes")
	fs.BoolVar(&f.openReads, "open-reads", false, "control: let anyone read without a token")
	fs.DurationVar(&f.notifyInterval, "notify-interval", time.Second, "control: how often the leader reads the locations' digests (about 100 bytes a check each) and decides notifications")
	fs.StringVar(&f.notifyLocations, "notify-locations", "", "control: comma-separated base URLs of the locations' status APIs whose verdicts decide notifications, e.g. http://10.0.1.3:7701")
	fs.StringVar(&f.dnsAddr, "dns", "127.0.0.1:5353", "location: DNS listen address (UDP and TCP)")
	fs.StringVar(&f.nameServers, "ns", "", "location: virtual name servers this location hosts, as index=host:port, comma-separated")
	fs.IntVar(&f.nsBudget, "ns-budget", location.DefaultNameServerBudget, "location: queries a second each virtual name server answers before it drops (-1: unlimited)")
	fs.IntVar(&f.rrlRate, "rrl", 0, "location: response rate limit, responses a second per client /24 (IPv4) or /56 (IPv6); 0 turns it off")
	fs.IntVar(&f.rrlSlip, "rrl-slip", 2, "location: answer every n-th rate-limited query with an empty truncated response (the client retries over TCP); -1 drops them all")
	fs.StringVar(&f.httpAdvertise, "http-advertise", "", "data plane: host:port at which other nodes reach this node's status API, carried in its gossip metadata for the network view (default the -http address; with an unspecified host, the gossip address's host)")
	fs.StringVar(&f.httpAddr, "http", "", "data plane: HTTP listen address of the status API and page, /metrics, /healthz, /readyz (default 127.0.0.1:7701, the default -addr of vigil status; \"off\" for none)")
	fs.BoolVar(&f.allowLoopback, "allow-loopback-probes", false, "checker: allow probing loopback addresses (development and tests only)")
	fs.StringVar(&f.probeAllow, "probe-allow", "", "checker: comma-separated reserved prefixes that may be probed, e.g. 10.1.0.0/16")
	fs.StringVar(&f.probeCA, "probe-ca", "", "checker: PEM file of CA certificates that TLS probes (https, grpc with tls) trust besides the system's roots, for checks without a tls_ca of their own")
	f.registerTLS(fs)
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.memoryLimit, "memory-limit", "", "soft memory limit of the Go runtime, as GOMEMLIMIT (e.g. 2GiB): the collector works harder as the heap nears it instead of letting it grow to twice what is live; \"off\" for none; default: GOMEMLIMIT if set, else 90% of the cgroup's memory.max if one is set, else none")
	fs.IntVar(&f.dnsTCP.MaxConns, "dns-tcp-max-conns", location.DefaultMaxTCPConns, "location: DNS over TCP connections served at once, per listener")
	fs.IntVar(&f.dnsTCP.MaxConnsPerClient, "dns-tcp-max-conns-per-client", location.DefaultMaxTCPConnsPerClient, "location: DNS over TCP connections one client network (a /24 for IPv4, a /56 for IPv6; the name says client for compatibility) may hold at once, per listener; below -dns-tcp-max-conns")
	fs.DurationVar(&f.dnsTCP.IdleTimeout, "dns-tcp-idle-timeout", location.DefaultTCPIdleTimeout, "location: a DNS over TCP connection that asks nothing for this long is closed")
	fs.DurationVar(&f.dnsTCP.Lifetime, "dns-tcp-lifetime", location.DefaultTCPConnLifetime, "location: a DNS over TCP connection is closed this long after it was accepted, however busy")
	fs.IntVar(&f.dnsAnswerCache, "dns-answer-cache", location.DefaultAnswerCache, "location: UDP answers kept in wire form, so that a question asked again is answered by a copy patched with the query's ID and case (see docs/dns.md); 0 is the default too; negative turns the cache off, and every query takes the full path")
	fs.IntVar(&f.dnsUDPSockets, "dns-udp-sockets", 0, "location: UDP sockets of each DNS listener, bound to its port with SO_REUSEPORT so that the kernel spreads queries over them and each core reads its own; 0 (default): one per core (GOMAXPROCS) where SO_REUSEPORT exists, else 1; negative is refused")
	fs.DurationVar(&f.http.HeaderTimeout, "http-header-timeout", httpguard.DefaultHeaderTimeout, "HTTP listeners (control API, status port): time a client has to send a request's header")
	fs.DurationVar(&f.http.BodyTimeout, "http-body-timeout", httpguard.DefaultBodyTimeout, "HTTP listeners: time a client has to send a request's body, from the end of its header")
	fs.DurationVar(&f.http.IdleTimeout, "http-idle-timeout", httpguard.DefaultIdleTimeout, "HTTP listeners: time a kept-alive connection may wait for its next request")
	fs.IntVar(&f.http.MaxConns, "http-max-conns", httpguard.DefaultMaxConns, "HTTP listeners: connections held open at once; more are closed as they are accepted")
	fs.IntVar(&f.http.MaxConnsPerSource, "http-max-conns-per-source", httpguard.DefaultMaxConnsPerSource, "HTTP listeners: connections one source network (a /24 for IPv4, a /56 for IPv6) holds open at once; below -http-max-conns")
	fs.IntVar(&f.gossipLimits.MaxStreams, "gossip-max-streams", gossip.DefaultMaxInboundStreams, "gossip: inbound streams (push/pull, reliable messages) open at once")
	fs.IntVar(&f.gossipLimits.MaxStreamsPerSource, "gossip-max-streams-per-source", gossip.DefaultMaxInboundStreamsPerSource, "gossip: inbound streams open at once from one source network (a /24 for IPv4, a /56 for IPv6; raise it when many nodes share one /24); below -gossip-max-streams")
	fs.IntVar(&f.gossipLimits.MaxStreamBytes, "gossip-max-stream-bytes", gossip.DefaultMaxStreamBytes, "gossip: largest inbound stream message (push/pull state), refused before it is read")
	fs.IntVar(&f.gossipLimits.MaxBufferedBytes, "gossip-max-buffered-bytes", gossip.DefaultMaxBufferedBytes, "gossip: bytes of inbound stream messages buffered before they are authenticated, over all streams (one source network, /24 or /56, may hold half)")
	fs.DurationVar(&f.gossipLimits.StreamReadTimeout, "gossip-stream-timeout", gossip.DefaultStreamReadTimeout, "gossip: time an inbound stream has to deliver its first message")
	fs.DurationVar(&f.verify.interval, "verify-interval", 0, "checker: answer verification, one record set with health checks asked of every location per interval (0: off); GET /v1/verification and vigil_answer_* metrics")
	fs.StringVar(&f.verify.httpPort, "verify-http-port", "7701", "checker: port of the locations' status API, at the host of their gossip address, for locations that do not advertise theirs (builds before -http-advertise)")
	fs.StringVar(&f.verify.dnsPort, "verify-dns-port", "5353", "checker: port of the locations' DNS, at the host of their gossip address")
}

// agentJoin sorts -join's addresses: a voter's API URL joins the control plane (or, on the
// voter that -bootstrap-id names, is asked whether a cluster runs already), any other
// address is a gossip seed.
func agentJoin(cfg *agent.Config, f agentFlags, bootstrap bool) {
	for _, j := range splitList(f.join) {
		if strings.HasPrefix(j, "http://") || strings.HasPrefix(j, "https://") {
			if !bootstrap || f.bootstrapID == "" { // with -bootstrap-id, the voter that starts the cluster joins none
				cfg.Control.Join = append(cfg.Control.Join, j)
			} else if f.bootstrapCheckWait > 0 { // ... unless one of them already knows a cluster
				cfg.Control.BootstrapCheck = append(cfg.Control.BootstrapCheck, j)
			}
		} else {
			cfg.Gossip.Join = append(cfg.Gossip.Join, j)
		}
	}
	cfg.Control.BootstrapCheckWait = f.bootstrapCheckWait
}

// agentConfig turns the flags into a node configuration and the process's logger.
func agentConfig(f agentFlags, stderr io.Writer) (agent.Config, *slog.Logger, error) {
	cfg := agent.DefaultConfig()
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return cfg, nil, fmt.Errorf("-log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	roles, err := agent.ParseRoles(f.roles)
	if err != nil {
		return cfg, nil, fmt.Errorf("-roles: %w", err)
	}
	if f.id == "" {
		h, err := os.Hostname()
		if err != nil {
			return cfg, nil, fmt.Errorf("-id: %w", err)
		}
		f.id = h
	}
	if f.bootstrap && f.bootstrapID != "" {
		return cfg, nil, errors.New("-bootstrap and -bootstrap-id: give one (-bootstrap-id decides by -id)")
	}
	bootstrap := f.bootstrap || (f.bootstrapID != "" && f.bootstrapID == f.id)
	lines, err := readTokens(f.tokenFile)
	if err != nil {
		return cfg, nil, err
	}
	writeTokens, named, err := splitTokens(lines)
	if err != nil {
		return cfg, nil, fmt.Errorf("-token-file: %w", err)
	}
	readTokenList, err := readTokens(f.readTokenFile)
	if err != nil {
		return cfg, nil, err
	}
	client, serverTLS, store, err := tlsSetup(f, roles, log)
	if err != nil {
		return cfg, nil, err
	}
	cfg.ID, cfg.Region, cfg.Roles, cfg.DataDir, cfg.Version = f.id, f.region, roles, f.dataDir, version
	cfg.Logger, cfg.WatcherClient, cfg.TLS = log, client, store
	cfg.Control = agent.ControlConfig{
		RaftAddr: f.raftAddr, APIAddr: f.apiAddr, APIURL: f.apiURL, Bootstrap: bootstrap, RaftAdvertise: f.raftAdvertise,
		WriteTokens: writeTokens, ReadTokens: readTokenList, OpenReads: f.openReads,
		ServerTLS: serverTLS, Client: client, RaftLogLevel: max(level, slog.LevelInfo), RequireClientCert: f.tlsRequireClientCert,
		LogStore:       f.raftLogStore,
		RaftSecretFile: f.raftSecretFile, InsecureRaftPlaintext: f.insecureRaftPlaintext,
		NotifyLocations: splitList(f.notifyLocations), NotifyInterval: f.notifyInterval, Tokens: named,
		// The voter reloads the token files when they change, without a restart.
		TokenFile: f.tokenFile, ReadTokenFile: f.readTokenFile,
	}
	agentJoin(&cfg, f, bootstrap)
	cfg.Gossip.Bind, cfg.Gossip.Advertise = f.gossipBind, f.gossipAdvertise
	cfg.Gossip.KeyringFile, cfg.Gossip.Insecure = f.gossipKeyFile, f.insecureGossip
	cfg.Gossip.Inbound = f.gossipLimits
	if err := agentDNSSEC(&cfg, f); err != nil {
		return cfg, nil, err
	}
	if err := agentTransfers(&cfg, f); err != nil {
		return cfg, nil, err
	}
	cfg.Voters = splitList(f.voters)
	switch {
	case len(readTokenList) > 0:
		cfg.Token = readTokenList[0]
	case len(writeTokens) > 0:
		cfg.Token = writeTokens[0]
	}
	if err := agentDataPlane(&cfg, f, roles); err != nil {
		return cfg, nil, err
	}
	if err := agentProbe(&cfg, f); err != nil {
		return cfg, nil, err
	}
	return cfg, log, nil
}

// agentDataPlane sets cfg's DNS, name servers, rate limits and HTTP listener from the flags.
func agentDataPlane(cfg *agent.Config, f agentFlags, roles agent.Roles) error {
	cfg.DNSAddr = f.dnsAddr
	if f.nameServers != "" {
		cfg.NameServers = map[int]string{}
		for _, item := range splitList(f.nameServers) {
			idx, addr, ok := strings.Cut(item, "=")
			i, err := strconv.Atoi(idx)
			if !ok || err != nil {
				return fmt.Errorf("-ns: %q is not index=host:port", item)
			}
			cfg.NameServers[i] = addr
		}
	}
	if f.nsBudget < -1 {
		return fmt.Errorf("-ns-budget: %d: want a positive rate, or -1 for unlimited", f.nsBudget)
	}
	cfg.NameServerBudget = f.nsBudget
	if f.rrlRate < 0 || f.rrlSlip < -1 {
		return fmt.Errorf("-rrl %d -rrl-slip %d: want a rate >= 0 (0: off) and a slip >= 1, or -1 to drop every limited query", f.rrlRate, f.rrlSlip)
	}
	cfg.RRL = location.RRLConfig{ResponsesPerSecond: f.rrlRate, Slip: f.rrlSlip}
	switch {
	case f.httpAddr != "":
		cfg.HTTPAddr = f.httpAddr
	case roles == agent.RoleControl:
		cfg.HTTPAddr = "off" // the API listener serves /metrics
	}
	cfg.HTTPAdvertise = f.httpAdvertise
	cfg.HTTPLimits = f.http
	cfg.DNSTCP = f.dnsTCP
	if f.dnsUDPSockets < 0 {
		return fmt.Errorf("-dns-udp-sockets %d: want a count, or 0 for one per core", f.dnsUDPSockets)
	}
	cfg.AnswerCache, cfg.UDPSockets = f.dnsAnswerCache, f.dnsUDPSockets
	return nil
}

// agentProbe sets cfg's probe policy from the flags: loopback, allowed prefixes, extra CAs.
func agentProbe(cfg *agent.Config, f agentFlags) error {
	cfg.Probe.AllowLoopback = f.allowLoopback
	for _, p := range splitList(f.probeAllow) {
		prefix, err := netip.ParsePrefix(p)
		if err != nil {
			return fmt.Errorf("-probe-allow: %w", err)
		}
		cfg.Probe.Allow = append(cfg.Probe.Allow, prefix)
	}
	if f.probeCA != "" {
		pool, err := probeRoots(f.probeCA)
		if err != nil {
			return fmt.Errorf("-probe-ca: %w", err)
		}
		cfg.Probe.RootCAs = pool
	}
	return nil
}

// probeRoots returns the system's roots with the CA certificates of the PEM file path added.
func probeRoots(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool() // no system roots here: the file's alone
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no certificate in %s", path)
	}
	return pool, nil
}

// splitList splits a comma-separated flag, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// readTokens reads one token per line; blank lines and lines starting with # are skipped.
func readTokens(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("tokens: %w", err)
	}
	var out []string
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return out, nil
}

// registerTLS adds the TLS flags, the same for every role.
func (f *agentFlags) registerTLS(fs *flag.FlagSet) {
	fs.StringVar(&f.tlsCert, "tls-cert", "", "this node's certificate (PEM); with -tls-key and -tls-ca: mutual TLS on raft, the control API and following the control plane, files re-read when they change (vigil tls init makes them); with -tls-key alone: the API over TLS only, which the control role accepts only beside -raft-secret-file")
	fs.StringVar(&f.tlsKey, "tls-key", "", "key file of -tls-cert")
	fs.StringVar(&f.tlsCA, "tls-ca", "", "CA file (PEM) that peers' certificates chain to; alone: the CA that verifies voters' APIs (forwarding, joining, following)")
	fs.BoolVar(&f.tlsRequireClientCert, "tls-require-client-cert", false, "control, with mutual TLS: refuse an API client without a certificate of the CA (tokens then add to it)")
	fs.DurationVar(&f.tlsRecheck, "tls-recheck", tlsconf.DefaultRecheck, "with mutual TLS: how often the certificate, key and CA files are looked at for a change")
}

// tlsSetup returns, with -tls-cert, -tls-key and -tls-ca, the node's certificate store
// (mutual TLS on every link: the node then makes its own clients and server config);
// otherwise the client for other voters' APIs and, with -tls-cert, the server's TLS. Part
// of the three is an error for the control role unless raft's credentials are chosen
// otherwise (-raft-secret-file): an operator who meant mutual TLS would get raft without it.
func tlsSetup(f agentFlags, roles agent.Roles, log *slog.Logger) (*http.Client, *tls.Config, *tlsconf.Store, error) {
	if err := checkTLSFlags(f, roles); err != nil {
		return nil, nil, nil, err
	}
	if f.tlsCert != "" && f.tlsKey != "" && f.tlsCA != "" {
		store, err := tlsconf.Load(tlsconf.Files{Cert: f.tlsCert, Key: f.tlsKey, CA: f.tlsCA},
			tlsconf.Options{Recheck: f.tlsRecheck, Logger: log})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("-tls-cert/-tls-key/-tls-ca: %w", err)
		}
		return nil, nil, store, nil
	}
	client, serverTLS, err := legacyTLS(f)
	return client, serverTLS, nil, err
}

// checkTLSFlags refuses a combination of -tls-* flags that does not mean what it seems to.
func checkTLSFlags(f agentFlags, roles agent.Roles) error {
	if (f.tlsCert == "") != (f.tlsKey == "") {
		return errors.New("-tls-cert and -tls-key go together: give both (the certificate and its key) or neither")
	}
	full := f.tlsCert != "" && f.tlsCA != ""
	some := f.tlsCert != "" || f.tlsCA != ""
	if !roles.Has(agent.RoleControl) || full || !some || f.raftSecretFile != "" || f.insecureRaftPlaintext {
		return nil
	}
	if f.tlsCA == "" {
		return errors.New("-tls-cert and -tls-key without -tls-ca: raft would not use them (mutual TLS on raft needs the CA " +
			"that the voters' certificates chain to). Add -tls-ca CA.pem for mutual TLS on raft and the API; or, to serve " +
			"only the API with this certificate, give raft a cluster secret with -raft-secret-file FILE")
	}
	return errors.New("-tls-ca without -tls-cert and -tls-key: raft would not use it. Add -tls-cert and -tls-key (a " +
		"certificate of that CA with the control role) for mutual TLS on raft and the API; or, to use -tls-ca only to " +
		"verify other voters' HTTPS APIs, give raft a cluster secret with -raft-secret-file FILE")
}

// legacyTLS is TLS without a CA of the cluster: the API served with a certificate, and a CA
// that verifies the voters' APIs.
func legacyTLS(f agentFlags) (*http.Client, *tls.Config, error) {
	client := &http.Client{}
	if f.tlsCA != "" {
		pem, err := os.ReadFile(f.tlsCA)
		if err != nil {
			return nil, nil, fmt.Errorf("-tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("-tls-ca: no certificate in %s", f.tlsCA)
		}
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	}
	if f.tlsCert == "" {
		return client, nil, nil
	}
	cert, err := tls.LoadX509KeyPair(f.tlsCert, filepath.Clean(f.tlsKey))
	if err != nil {
		return nil, nil, fmt.Errorf("-tls-cert/-tls-key: %w", err)
	}
	return client, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
