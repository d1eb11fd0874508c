package agent

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/checker"
	"github.com/vigil-dns/vigil/config"
	"github.com/vigil-dns/vigil/control"
	"github.com/vigil-dns/vigil/gossip"
	"github.com/vigil-dns/vigil/internal/httpguard"
	"github.com/vigil-dns/vigil/internal/tlsconf"
	"github.com/vigil-dns/vigil/location"
)

// Roles is the set of roles a node runs; it is gossip's role set, carried in the node's
// gossip metadata.
type Roles = gossip.Roles

// The roles a node may run, in any combination.
const (
	RoleControl  = gossip.RoleControl
	RoleChecker  = gossip.RoleChecker
	RoleLocation = gossip.RoleLocation
)

// ParseRoles reads a comma-separated list of roles, e.g. "control,checker,location".
func ParseRoles(s string) (Roles, error) {
	var r Roles
	for _, name := range strings.Split(s, ",") {
		switch strings.TrimSpace(name) {
		case "control":
			r |= RoleControl
		case "checker":
			r |= RoleChecker
		case "location":
			r |= RoleLocation
		case "":
		default:
			return 0, fmt.Errorf("node: unknown role %q (roles are control, checker and location)", strings.TrimSpace(name))
		}
	}
	if r == 0 {
		return 0, errors.New("node: no role given (roles are control, checker and location)")
	}
	return r, nil
}

// Config configures one node. Start from DefaultConfig; the zero value of an optional field
// means its default, listed with the field.
type Config struct {
	// ID names the node: its gossip name and, with the control role, its raft ID. Required.
	ID string
	// Region is the node's region, one of the configuration's regions. Required for the
	// checker and location roles.
	Region string
	// Roles are the roles the node runs; at least one.
	Roles Roles
	// DataDir holds the node's state: the disk copy of the configuration (config.json) and,
	// with the control role, the raft log and snapshots (control/). Required.
	DataDir string
	// Version is the software version the node reports.
	Version string

	// Gossip configures the data-plane pool (checker and location roles).
	Gossip GossipConfig
	// Control configures the control role.
	Control ControlConfig

	// Voters are the base URLs of control voters' APIs that the data plane's Watcher follows.
	// With the control role and no voters, the node follows its own voter.
	Voters []string
	// Token is the bearer token the Watcher reads with, unless reads are open.
	Token string
	// WatcherClient makes the Watcher's requests (e.g. with a TLS config); default a plain
	// client, or with TLS one that presents the node's certificate.
	WatcherClient *http.Client
	// TLS, when set, is the node's certificate and CA for mutual TLS on every internal link:
	// raft, the control API (served over TLS, a client certificate standing in for a
	// token), and the API clients of the control role and of the Watcher. Its expiry is
	// exported (vigil_tls_certificate_expiry_timestamp_seconds).
	TLS *tlsconf.Store
	// Static, when set, is the configuration the node runs, instead of following the control
	// plane (tests, `vigil dev`, a node without a control plane).
	Static *config.Document
	// DNSSECSecret seals the DNSSEC private keys of signed zones in the control plane: a
	// voter seals the keys it generates with it, a location opens them to sign. Every voter
	// and location must hold the same one (16 bytes or more), and no other node: a
	// checker-only node refuses it. Without it (and without
	// InsecureDNSSECSecretFromGossipKey) a voter refuses to enable signing and a location
	// serves signed zones unsigned, degraded (see dnssec.go).
	DNSSECSecret []byte
	// DNSSECOlderSecrets are previous DNSSEC secrets of a location: they open keys sealed
	// before the secret changed (until a rollover replaces them), and never seal.
	DNSSECOlderSecrets [][]byte
	// InsecureDNSSECSecretFromGossipKey seals with the first gossip key when DNSSECSecret is
	// not set, as builds before the secret had its own flag did: every checker holds that
	// key and reads the sealed keys, so it can sign for every zone. Migration only; warned
	// at start.
	InsecureDNSSECSecretFromGossipKey bool
	// DNSSECSignBudget is the new DNSSEC signatures a second a location makes across its
	// signed zones, shared fairly between them (dnssec.Budget); a query whose answer needs
	// one more is dropped and counted. 0 means dnssec.DefaultCPUFraction of GOMAXPROCS cores
	// at the signing cost the location measures when it starts.
	DNSSECSignBudget float64

	// TSIGKeys are the TSIG keys of the secondaries this location transfers zones to
	// (config.Transfers), from a file: out of the configuration, so that no read of it shows
	// them. The location adds the keys the control plane holds sealed, which it opens with
	// DNSSECSecret; a name in both is this list's.
	TSIGKeys []location.TSIGKey

	// DNSAddr is the location's main DNS listener, UDP and TCP on the same port. Default
	// "127.0.0.1:5353"; port 0 picks a free port.
	DNSAddr string
	// NameServers maps the virtual name servers this location hosts to their listen
	// addresses.
	NameServers map[int]string
	// NameServerBudget is the queries a second each virtual name server answers, beyond
	// which it drops queries. Default location.DefaultNameServerBudget; negative means
	// unlimited.
	NameServerBudget int
	// RRL is the location's response rate limiting per client network (/24 or /56), on every
	// listener; off unless ResponsesPerSecond is set.
	RRL location.RRLConfig
	// DNSTCP bounds the location's DNS over TCP on every listener; zero fields mean
	// location's defaults.
	DNSTCP DNSTCPLimits
	// AnswerCache is the number of UDP answers the location keeps in wire form
	// (location.Config.AnswerCache). 0 means location.DefaultAnswerCache; negative turns the
	// cache off, and every query takes the full path.
	AnswerCache int
	// UDPSockets is the number of SO_REUSEPORT UDP sockets of each of the location's
	// listeners (location.Config.UDPSockets). 0 means one per core (GOMAXPROCS) where
	// SO_REUSEPORT exists, else 1.
	UDPSockets int
	// HTTPAddr is the node's HTTP listener: /metrics, /healthz, /readyz and mounted handlers.
	// Default "127.0.0.1:7701" (where `vigil status` looks first); port 0 picks a free port; "off" serves none.
	HTTPAddr string
	// HTTPAdvertise, when set, is the host:port at which other nodes reach the HTTP listener
	// (the network view asks the other locations there). Default: the listener's address, or
	// the host of the gossip address and the listener's port when it listens on every address.
	HTTPAdvertise string
	// HTTPLimits are the time and size limits of the node's HTTP listeners (this one and the
	// control role's API); zero fields mean httpguard's defaults.
	HTTPLimits httpguard.Limits

	// Probe configures the checker's probes.
	Probe ProbeConfig
	// HistoryBytes bounds a location's history log on disk (DataDir/history.log and its
	// previous file together). Default 16 MiB; at least 64 KiB.
	HistoryBytes int64
	// EvalInterval is how often the node looks whether a checker's handoffs are over.
	// Default 500ms; 50ms to 10s. (A location's verdicts follow the reports as they arrive,
	// not this interval.)
	EvalInterval time.Duration

	// Transport replaces gossip's real network, e.g. with a regions.Transport.
	Transport memberlist.Transport
	// Dialer replaces the checker's probe dialer, e.g. with a regions.Dialer.
	Dialer checker.Dialer
	// Logger receives the node's logs. Default slog.Default().
	Logger *slog.Logger
	// Registerer receives every metric of the node. Default a fresh registry, which is then
	// also the Gatherer.
	Registerer prometheus.Registerer
	// Gatherer is what /metrics serves. Default the Registerer, when it is a Gatherer too.
	Gatherer prometheus.Gatherer
}

// DNSTCPLimits bound a location's DNS over TCP, per listener (location.Config's fields).
type DNSTCPLimits struct {
	// MaxConns bounds the connections served at once. Default location.DefaultMaxTCPConns.
	MaxConns int
	// MaxConnsPerClient bounds the connections of one client network, a /24 for IPv4 and a
	// /56 for IPv6 (the addresses of one network share it). Default
	// location.DefaultMaxTCPConnsPerClient; below MaxConns.
	MaxConnsPerClient int
	// IdleTimeout closes a connection that sends no query for this long. Default
	// location.DefaultTCPIdleTimeout.
	IdleTimeout time.Duration
	// Lifetime closes a connection this long after it was accepted. Default
	// location.DefaultTCPConnLifetime.
	Lifetime time.Duration
}

// GossipConfig configures the node's membership of the data-plane pool.
type GossipConfig struct {
	// Bind is where the real transport listens, host:port. Default "127.0.0.1:7946"; port 0
	// picks a free port. Unused with Config.Transport.
	Bind string
	// Advertise, when set, is the host:port other nodes dial.
	Advertise string
	// Join are addresses (host:port) of pool members to join at start and to rejoin.
	Join []string
	// Keys is the keyring: the first key encrypts, every key decrypts; 16, 24 or 32 bytes.
	Keys [][]byte
	// KeyringFile is a file of base64 keys, one per line, the primary first; read by New and
	// added after Keys.
	KeyringFile string
	// Insecure runs the pool unencrypted: development only, and never with keys.
	Insecure bool
	// Profile is memberlist's timing. Default gossip.ProfileLAN.
	Profile gossip.Profile
	// HeartbeatInterval and RejoinInterval override gossip's defaults (2s, 15s).
	HeartbeatInterval, RejoinInterval time.Duration
	// Inbound bounds the inbound streams read before they are authenticated; zero fields
	// mean gossip's defaults.
	Inbound gossip.InboundLimits
}

// ControlConfig configures the control role: a raft voter and its HTTP API.
type ControlConfig struct {
	// RaftAddr is the raft transport's address (listen and advertise). Default
	// "127.0.0.1:7000".
	RaftAddr string
	// RaftAdvertise is the raft address other voters dial when it differs from RaftAddr: a
	// DNS name stays a name (control.ServerConfig.RaftAdvertise). Empty: RaftAddr.
	RaftAdvertise string
	// APIAddr is the API's listen address. Default "127.0.0.1:7100".
	APIAddr string
	// APIURL is the URL other voters reach the API at. Default from the address the API
	// listens on.
	APIURL string
	// Bootstrap starts a new cluster with this voter as its first member.
	Bootstrap bool
	// Join are API URLs of voters of the cluster to join.
	Join []string
	// BootstrapCheck are API URLs of the other voters that a voter about to bootstrap with
	// an empty data directory asks first (GET /v1/cluster) whether a cluster exists: when
	// one answers with a leader or a configuration, the voter joins that cluster instead of
	// starting a second one. Its own APIURL is skipped. Only with Bootstrap.
	BootstrapCheck []string
	// BootstrapCheckWait bounds how long the voter asks: it bootstraps when every voter of
	// BootstrapCheck answered that it has no cluster, or when the time has passed without
	// an answer that one exists. 0 skips the check.
	BootstrapCheckWait time.Duration
	// WriteTokens may write and read; at least one is required unless Config.TLS is set
	// (then certificates with the operator role write; voters join with the first token
	// when there is one). ReadTokens may only read.
	WriteTokens, ReadTokens []string
	// Tokens are named tokens with scopes, stored hashed (control.Token; `vigil token`).
	Tokens []control.Token
	// TokenFile and ReadTokenFile, when set, are the files WriteTokens and Tokens, and
	// ReadTokens, were read from (control.LoadTokenFiles): the voter reloads them when they
	// change, without a restart (control.WatchTokenFiles), every TokenRecheck (default 2s).
	TokenFile, ReadTokenFile string
	TokenRecheck             time.Duration
	// OpenReads lets anyone read without a token.
	OpenReads bool
	// ServerTLS, when set, serves the API over TLS. Default with Config.TLS: the node's
	// certificate, verifying a client certificate when one is given.
	ServerTLS *tls.Config
	// RequireClientCert (with Config.TLS) refuses an API client without a certificate of
	// the CA, before any token is looked at.
	RequireClientCert bool
	// Client reaches other voters (forwarding, joining). Default a plain client.
	Client *http.Client
	// RaftSecret is the cluster secret (tlsconf.SecretSize bytes, the same on every voter)
	// that raft authenticates voters with when Config.TLS is not set. Empty: read from
	// RaftSecretFile, else from the data directory's control/raft-secret, else generated
	// there by a voter that bootstraps; a voter that joins without one does not start.
	RaftSecret []byte
	// RaftSecretFile is a file holding the cluster secret (base64; tlsconf.ReadSecretFile).
	RaftSecretFile string
	// InsecureRaftPlaintext runs raft over plain TCP without authentication: anyone who
	// reaches the raft port can rewrite the state. Development only; warned at start;
	// exclusive with Config.TLS and a secret.
	InsecureRaftPlaintext bool
	// Timing overrides raft's timeouts (tests use short ones).
	Timing control.Timing
	// RaftLogLevel is the least level of raft's logs passed on. Default Info.
	RaftLogLevel slog.Level
	// LogStore is the raft log store a new data directory gets: control.LogStoreBolt
	// (default) or control.LogStoreWAL; empty, a directory that holds one keeps it, and
	// named, a directory that holds the other is refused.
	LogStore string
	// NotifyLocations are the base URLs of the locations' status APIs whose verdicts the
	// leader reads to decide notifications (package notify); none: no alert fires (events
	// already in the outbox are still delivered).
	NotifyLocations []string
	// NotifyClient sends notifications and reads the locations' digests; default a client
	// without proxy.
	NotifyClient *http.Client
	// NotifyInterval is how often the leader reads the digests and decides; default 1s.
	NotifyInterval time.Duration
}

// ProbeConfig is the checker's probe safety and capacity.
type ProbeConfig struct {
	// Allow lists reserved prefixes the checker may probe anyway (a private network it
	// watches).
	Allow []netip.Prefix
	// AllowLoopback permits probing 127.0.0.0/8 and ::1: dev mode and tests only.
	AllowLoopback bool
	// RootCAs verifies TLS targets of checks without a CA bundle of their own (tls_ca);
	// nil means the system's roots (checker.ProberOptions.RootCAs).
	RootCAs *x509.CertPool
	// Concurrency bounds the probes in flight. Default checker.DefaultConcurrency.
	Concurrency int
	// Canaries are checks of targets that should always answer: probed, never reported,
	// they tell the checker whether it reaches anything at all (its self-health).
	Canaries []config.Check
	// OnResult, when set, receives every probe result of an assigned check, with its lag
	// (checker.Options.OnResult): simulations measure schedules with it. Keep it quick.
	OnResult func(checkID string, r checker.Result)
}

// DefaultConfig returns a configuration with every default filled in: a location and
// checker on loopback, no identity, region or data directory yet.
func DefaultConfig() Config {
	return Config{
		Roles:        RoleChecker | RoleLocation,
		DNSAddr:      "127.0.0.1:5353",
		HTTPAddr:     "127.0.0.1:7701",
		EvalInterval: 500 * time.Millisecond,
		Gossip:       GossipConfig{Bind: "127.0.0.1:7946"},
		Control:      ControlConfig{RaftAddr: "127.0.0.1:7000", APIAddr: "127.0.0.1:7100"},
	}
}

// The bounds of Config.EvalInterval.
const (
	minEvalInterval = 50 * time.Millisecond
	maxEvalInterval = 10 * time.Second
)

// setDefaults fills the optional fields left zero.
func (c *Config) setDefaults() {
	d := DefaultConfig()
	if c.DNSAddr == "" {
		c.DNSAddr = d.DNSAddr
	}
	if c.HTTPAddr == "" {
		c.HTTPAddr = d.HTTPAddr
	}
	if c.EvalInterval == 0 {
		c.EvalInterval = d.EvalInterval
	}
	if c.Gossip.Bind == "" {
		c.Gossip.Bind = d.Gossip.Bind
	}
	if c.Control.RaftAddr == "" {
		c.Control.RaftAddr = d.Control.RaftAddr
	}
	if c.Control.APIAddr == "" {
		c.Control.APIAddr = d.Control.APIAddr
	}
}

// Validate reports every problem of the configuration, defaults applied first, one per line.
func (c Config) Validate() error {
	c.setDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("node: "+format, args...)) }
	if c.ID == "" {
		bad("id is required")
	} else if len(c.ID) > gossip.MaxIDLen {
		bad("id is longer than %d bytes", gossip.MaxIDLen)
	}
	if err := c.HTTPLimits.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("node: http: %w", err))
	}
	dataPlane := c.Roles.Has(RoleChecker) || c.Roles.Has(RoleLocation)
	c.validateNode(bad, dataPlane)
	if dataPlane {
		c.validateDataPlane(bad)
	}
	c.validateRoles(bad)
	c.validateDNSSEC(bad)
	if c.Registerer == nil && c.Gatherer != nil {
		bad("a gatherer without its registerer")
	}
	return errors.Join(errs...)
}

// validateNode reports the problems of the settings every node has: region, roles, data
// directory, eval interval and HTTP addresses.
func (c Config) validateNode(bad func(string, ...any), dataPlane bool) {
	if c.Region == "" && dataPlane {
		bad("region is required for the checker and location roles")
	}
	if c.Roles == 0 {
		bad("at least one role is required (control, checker, location)")
	} else if c.Roles&^(RoleControl|RoleChecker|RoleLocation) != 0 {
		bad("unknown role bits %d", c.Roles)
	}
	if c.DataDir == "" {
		bad("data directory is required (it keeps the disk copy of the configuration)")
	}
	if c.EvalInterval < minEvalInterval || c.EvalInterval > maxEvalInterval {
		bad("eval interval %s is outside %s to %s", c.EvalInterval, minEvalInterval, maxEvalInterval)
	}
	if c.HTTPAddr != "off" {
		checkAddr(bad, "http address", c.HTTPAddr)
	}
	if c.HTTPAdvertise != "" {
		checkAddr(bad, "http advertise address", c.HTTPAdvertise)
	}
}

// validateDataPlane reports the problems of the gossip settings and of the control voters
// that a checker or location follows.
func (c Config) validateDataPlane(bad func(string, ...any)) {
	g := c.Gossip
	switch {
	case g.Insecure && (len(g.Keys) > 0 || g.KeyringFile != ""):
		bad("gossip: insecure and encryption keys are exclusive")
	case !g.Insecure && len(g.Keys) == 0 && g.KeyringFile == "":
		bad("gossip: an encryption key (keys or keyring file) is required, or the explicit insecure flag")
	}
	for i, k := range g.Keys {
		if l := len(k); l != 16 && l != 24 && l != 32 {
			bad("gossip: key %d is %d bytes; keys are 16, 24 or 32 bytes", i, l)
		}
	}
	if c.Transport == nil {
		checkAddr(bad, "gossip bind address", g.Bind)
	}
	all, per := g.Inbound.MaxStreams, g.Inbound.MaxStreamsPerSource
	if all == 0 {
		all = gossip.DefaultMaxInboundStreams
	}
	if per == 0 {
		per = gossip.DefaultMaxInboundStreamsPerSource
	}
	if all > 1 && per >= all {
		bad("gossip: %d inbound streams per source network of %d in all: one network (/24 IPv4, /56 IPv6) could take them all; lower -gossip-max-streams-per-source below -gossip-max-streams", per, all)
	}
	if g.Advertise != "" {
		checkAddr(bad, "gossip advertise address", g.Advertise)
	}
	for _, j := range g.Join {
		if _, _, err := net.SplitHostPort(j); err != nil {
			bad("gossip: join address %q is not host:port", j)
		}
	}
	if c.Static == nil && len(c.Voters) == 0 && !c.Roles.Has(RoleControl) {
		bad("the data plane needs control voters to follow (or a static configuration)")
	}
	for _, v := range c.Voters {
		if !strings.HasPrefix(v, "http://") && !strings.HasPrefix(v, "https://") {
			bad("voter %q is not an http:// or https:// URL", v)
		}
	}
}

// validateRoles reports the problems of the settings of the location, checker and control
// roles.
func (c Config) validateRoles(bad func(string, ...any)) {
	if c.Roles.Has(RoleLocation) {
		checkAddr(bad, "dns address", c.DNSAddr)
		all, per := c.DNSTCP.MaxConns, c.DNSTCP.MaxConnsPerClient
		if all <= 0 {
			all = location.DefaultMaxTCPConns
		}
		if per <= 0 {
			per = location.DefaultMaxTCPConnsPerClient
		}
		if all > 1 && per >= all {
			bad("dns tcp: %d connections per client network of %d in all: one network (/24 IPv4, /56 IPv6) could take them all; lower -dns-tcp-max-conns-per-client below -dns-tcp-max-conns", per, all)
		}
		if c.UDPSockets < 0 {
			bad("dns udp sockets %d: want a count, or 0 for one per core", c.UDPSockets)
		}
		for i, a := range c.NameServers {
			if i < 0 {
				bad("name server %d: index is negative", i)
			}
			checkAddr(bad, fmt.Sprintf("name server %d address", i), a)
		}
	} else if len(c.NameServers) > 0 {
		bad("name servers are set but the node has no location role")
	}
	if c.Roles.Has(RoleChecker) {
		if c.Probe.Concurrency < 0 {
			bad("probe concurrency %d is negative", c.Probe.Concurrency)
		}
	}
	if c.Roles.Has(RoleControl) {
		cc := c.Control
		if c.Static != nil {
			bad("a static configuration and the control role are exclusive")
		}
		if len(cc.WriteTokens) == 0 && c.TLS == nil {
			bad("control: at least one write token is required: no token, no write")
		}
		if len(cc.BootstrapCheck) > 0 && !cc.Bootstrap {
			bad("control: a bootstrap check without bootstrap: only a voter that bootstraps asks first")
		}
		if cc.BootstrapCheckWait < 0 {
			bad("control: the bootstrap check's wait is negative")
		}
		if cc.Bootstrap && len(cc.Join) > 0 {
			bad("control: bootstrap and join are exclusive")
		}
		secret := len(cc.RaftSecret) > 0 || cc.RaftSecretFile != ""
		switch {
		case cc.InsecureRaftPlaintext && (secret || c.TLS != nil):
			bad("control: insecure plain raft and raft credentials (a cluster secret or TLS) are exclusive: drop -insecure-raft-plaintext")
		case secret && c.TLS != nil:
			bad("control: raft authenticates with TLS certificates or with a cluster secret, not both: drop -raft-secret-file or the -tls-* flags")
		case len(cc.RaftSecret) > 0 && cc.RaftSecretFile != "":
			bad("control: a raft secret and a raft secret file are exclusive")
		case len(cc.RaftSecret) > 0 && len(cc.RaftSecret) != tlsconf.SecretSize:
			bad("control: the raft secret has %d bytes, want %d", len(cc.RaftSecret), tlsconf.SecretSize)
		}
		checkAddr(bad, "control raft address", cc.RaftAddr)
		checkAddr(bad, "control api address", cc.APIAddr)
	}
}

// checkAddr reports an address that is not host:port with a numeric port.
func checkAddr(bad func(string, ...any), what, addr string) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		bad("%s %q is not host:port", what, addr)
		return
	}
	if _, err := netip.ParseAddrPort("0.0.0.0:" + port); err != nil {
		bad("%s %q has a bad port", what, addr)
	}
}

// readKeyring reads base64 keys, one per line; blank lines and # comments are skipped.
func readKeyring(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("node: keyring: %w", err)
	}
	var keys [][]byte
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := gossip.ParseKey(line)
		if err != nil {
			return nil, fmt.Errorf("node: keyring %s line %d: %w", path, i+1, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("node: keyring %s holds no key", path)
	}
	return keys, nil
}
