package gossip

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
)

// Config configures one node of the pool. The zero value of every optional field means its
// default, listed with the field.
type Config struct {
	// ID names the node in the pool (its memberlist name). Required.
	ID string
	// Region is the node's region. Required.
	Region string
	// Roles are the node's roles; at least one.
	Roles Roles
	// Version is the node's software version, carried in its metadata.
	Version string
	// HTTPAddr, when set, is the host:port at which other nodes reach this node's status
	// API, carried in its metadata (Member.HTTP): how a location finds the others' verdicts
	// for the network view when nodes do not all serve HTTP on one port of their gossip host.
	HTTPAddr string

	// BindAddr and BindPort are where the real network transport listens. Default
	// 127.0.0.1 and 7946; port 0 picks a free port. Unused with Transport.
	BindAddr string
	BindPort int
	// AdvertiseAddr and AdvertisePort, when set, are what other nodes dial.
	AdvertiseAddr string
	AdvertisePort int
	// Transport replaces the real network, e.g. with a regions.Transport.
	Transport memberlist.Transport

	// Keys is the keyring: the first key is the primary (used to encrypt), every key is
	// accepted (used to decrypt). Keys are 16, 24 or 32 bytes (AES-128/192/256). Required
	// unless Insecure.
	Keys [][]byte
	// Insecure runs without encryption: for development only, and refused with Keys.
	Insecure bool

	// Profile is the memberlist timing: ProfileLAN (default), ProfileLocal or ProfileWAN.
	Profile Profile
	// Seeds are addresses (host:port) to join at start and to rejoin while alone.
	Seeds []string

	// HeartbeatInterval is how often a checker advances its heartbeat. Default 2s.
	HeartbeatInterval time.Duration
	// RejoinInterval is how often a node rejoins known peers that are not alive, so that
	// partitions heal by themselves. Default 15s.
	RejoinInterval time.Duration
	// RowTTL is how long a row that stopped changing is kept after its checker left the pool.
	// Default 10m.
	RowTTL time.Duration
	// MaxRows bounds the table: rows of new checkers beyond it are dropped and counted.
	// Default 10,000.
	MaxRows int
	// MaxKnownPeers bounds the peers remembered for rejoining. Default 1,024.
	MaxKnownPeers int
	// ForgetPeersAfter is how long a peer that is not alive is still rejoined. Default 72h.
	ForgetPeersAfter time.Duration

	// Inbound bounds what the node takes from other nodes' streams and packets before it
	// has authenticated them.
	Inbound InboundLimits

	// OnMembership, when set, is called for every membership event, in order. It must not
	// block: it runs inside memberlist's event handling.
	OnMembership func(MemberEvent)
	// OnKeyring, when set, is called with the node's keys (the primary first) after a
	// keyring operation from the pool changed them (keyring.go), e.g. to save them.
	OnKeyring func(keys [][]byte)
	// Registerer receives the node's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// Logger receives the node's logs, memberlist's included. Default slog.Default().
	Logger *slog.Logger
	// Now is the node's clock. Default time.Now.
	Now func() time.Time

	// legacySync makes the node speak wire version 1 only and refuse version 2, as a node
	// that knows only version 1 does: for tests of a mixed-version pool and for measuring the
	// whole-row sync beside the current one. Set by tests in this package only.
	legacySync bool
}

// InboundLimits bound the inbound gossip streams (push/pull, reliable messages) that a node
// reads before it has authenticated them. The zero value of a field means its default.
type InboundLimits struct {
	// MaxStreams bounds the inbound streams open at once; more wait for a slot, as many
	// again at most (a socket each, nothing read), and beyond that are closed at once.
	// Default DefaultMaxInboundStreams.
	MaxStreams int
	// MaxStreamsPerSource bounds the inbound streams open at once from one source network
	// (a /24 for IPv4, a /56 for IPv6, so that one host with many addresses counts once);
	// four times as many more of the network may wait for a slot, each at most two stream
	// read timeouts, and beyond that are closed at once. Default
	// DefaultMaxInboundStreamsPerSource.
	MaxStreamsPerSource int
	// MaxStreamBytes bounds one inbound stream message; a larger one is refused before its
	// body is read. Default DefaultMaxStreamBytes.
	MaxStreamBytes int
	// MaxBufferedBytes bounds the bytes of inbound stream messages buffered before they are
	// authenticated, over all streams; one source network (/24, /56) may hold half. Default
	// DefaultMaxBufferedBytes.
	MaxBufferedBytes int
	// StreamReadTimeout bounds the time an inbound stream takes to deliver its first
	// message. Default DefaultStreamReadTimeout.
	StreamReadTimeout time.Duration
}

// Profile selects memberlist's timing.
type Profile uint8

// The memberlist timings.
const (
	// ProfileLAN is memberlist's DefaultLANConfig: 200 ms gossip, 1 s probes, 30 s push/pull.
	ProfileLAN Profile = iota
	// ProfileLocal is memberlist's DefaultLocalConfig: for one machine, loopback.
	ProfileLocal
	// ProfileWAN is memberlist's DefaultWANConfig.
	ProfileWAN
)

func (c *Config) setDefaults() {
	if c.BindAddr == "" {
		c.BindAddr = "127.0.0.1"
	}
	if c.HeartbeatInterval == 0 {
		c.HeartbeatInterval = 2 * time.Second
	}
	if c.RejoinInterval == 0 {
		c.RejoinInterval = 15 * time.Second
	}
	if c.RowTTL == 0 {
		c.RowTTL = 10 * time.Minute
	}
	if c.MaxRows == 0 {
		c.MaxRows = 10000
	}
	if c.MaxKnownPeers == 0 {
		c.MaxKnownPeers = 1024
	}
	if c.ForgetPeersAfter == 0 {
		c.ForgetPeersAfter = 72 * time.Hour
	}
	in := &c.Inbound
	if in.MaxStreams == 0 {
		in.MaxStreams = DefaultMaxInboundStreams
	}
	if in.MaxStreamsPerSource == 0 {
		in.MaxStreamsPerSource = DefaultMaxInboundStreamsPerSource
	}
	if in.MaxStreamBytes == 0 {
		in.MaxStreamBytes = DefaultMaxStreamBytes
	}
	if in.MaxBufferedBytes == 0 {
		in.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if in.StreamReadTimeout == 0 {
		in.StreamReadTimeout = DefaultStreamReadTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Validate reports every problem of the configuration, with defaults applied first.
func (c Config) Validate() error {
	c.setDefaults()
	return c.validate()
}

// validate reports every problem of a configuration with defaults applied.
func (c *Config) validate() error {
	var errs []error
	if err := validID("node", c.ID); err != nil {
		errs = append(errs, err)
	} else if !validMemberName(c.ID) {
		// Peers refuse such a name (admission.go), and so would this node its own.
		errs = append(errs, fmt.Errorf("gossip: node id %q holds control or formatting characters: use letters, digits and punctuation", c.ID))
	}
	if c.Region == "" || len(c.Region) > maxMetaField {
		errs = append(errs, fmt.Errorf("gossip: region must be 1 to %d bytes", maxMetaField))
	}
	if len(c.Version) > maxMetaField {
		errs = append(errs, fmt.Errorf("gossip: version must be at most %d bytes", maxMetaField))
	}
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil || len(c.HTTPAddr) > maxMetaField {
			errs = append(errs, fmt.Errorf("gossip: HTTP address %q: want host:port of at most %d bytes", c.HTTPAddr, maxMetaField))
		}
	}
	if c.Roles == 0 || c.Roles&^rolesAll != 0 {
		errs = append(errs, fmt.Errorf("gossip: roles %#x: need at least one known role", uint8(c.Roles)))
	}
	switch {
	case c.Insecure && len(c.Keys) > 0:
		errs = append(errs, errors.New("gossip: insecure mode and keys are exclusive"))
	case !c.Insecure && len(c.Keys) == 0:
		errs = append(errs, errors.New("gossip: no encryption key: set keys, or the insecure dev flag"))
	}
	for i, k := range c.Keys {
		if err := checkKey(k); err != nil {
			errs = append(errs, fmt.Errorf("gossip: key %d: %w", i, err))
		}
	}
	if c.Profile > ProfileWAN {
		errs = append(errs, fmt.Errorf("gossip: unknown profile %d", c.Profile))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"heartbeat interval", c.HeartbeatInterval}, {"rejoin interval", c.RejoinInterval}, {"row ttl", c.RowTTL}, {"forget peers after", c.ForgetPeersAfter}} {
		if d.v < 10*time.Millisecond {
			errs = append(errs, fmt.Errorf("gossip: %s %v is below 10ms", d.name, d.v))
		}
	}
	in := c.Inbound
	if in.MaxStreams < 1 || in.MaxStreamsPerSource < 1 {
		errs = append(errs, errors.New("gossip: max inbound streams, in all and per source, must be positive"))
	}
	if in.MaxStreamBytes < 1024 || in.MaxStreamBytes > 20<<20 {
		errs = append(errs, fmt.Errorf("gossip: max stream bytes %d: must be 1 KiB to 20 MiB (memberlist's own limit)", in.MaxStreamBytes))
	}
	if in.MaxBufferedBytes < 2*in.MaxStreamBytes {
		errs = append(errs, fmt.Errorf("gossip: max buffered bytes %d: must be at least twice max stream bytes (%d), since one source may hold half", in.MaxBufferedBytes, in.MaxStreamBytes))
	}
	if in.StreamReadTimeout < 10*time.Millisecond {
		errs = append(errs, fmt.Errorf("gossip: stream read timeout %v is below 10ms", in.StreamReadTimeout))
	}
	if c.MaxRows < 1 || c.MaxKnownPeers < 1 {
		errs = append(errs, errors.New("gossip: max rows and max known peers must be positive"))
	}
	return errors.Join(errs...)
}

// checkKey checks the length of an AES key.
func checkKey(k []byte) error {
	switch len(k) {
	case 16, 24, 32:
		return nil
	}
	return fmt.Errorf("key is %d bytes, not 16, 24 or 32", len(k))
}

// ParseKey decodes a base64 key, as operators write them, and checks its length.
func ParseKey(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("gossip: key is not base64: %w", err)
	}
	if err := checkKey(k); err != nil {
		return nil, fmt.Errorf("gossip: %w", err)
	}
	return k, nil
}

// memberlistConfig builds memberlist's configuration for the node.
func (c *Config) memberlistConfig() *memberlist.Config {
	var mc *memberlist.Config
	switch c.Profile {
	case ProfileLocal:
		mc = memberlist.DefaultLocalConfig()
	case ProfileWAN:
		mc = memberlist.DefaultWANConfig()
	default:
		mc = memberlist.DefaultLANConfig()
	}
	mc.Name = c.ID
	mc.BindAddr = c.BindAddr
	mc.BindPort = c.BindPort
	mc.AdvertiseAddr = c.AdvertiseAddr
	mc.AdvertisePort = c.AdvertisePort
	mc.GossipVerifyIncoming = true
	mc.GossipVerifyOutgoing = true
	// A node declared dead may come back under its name on another address (a restarted
	// container, a node of the sim) at once: memberlist's default refuses the new address
	// until the dead one is forgotten, and a restarted location would hear nobody meanwhile.
	// A live node keeps its name: it refutes any claim that it is dead.
	mc.DeadNodeReclaimTime = deadNodeReclaim
	return mc
}
