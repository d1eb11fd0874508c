package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/vigil-dns/vigil/control/state"
	"github.com/vigil-dns/vigil/internal/tlsconf"
)

// Errors of a write that a caller branches on.
var (
	// ErrNotLeader: this voter is not the leader; the write must go to the leader.
	ErrNotLeader = errors.New("control: this voter is not the leader")
	// ErrNoLeader: no leader is known, as on the minority side of a partition.
	ErrNoLeader = errors.New("control: no leader: this voter cannot reach a majority of voters; nothing was written")
	// ErrUnknownOutcome: leadership was lost before the write was known to commit.
	ErrUnknownOutcome = errors.New("control: leadership lost during the write; it may or may not have been applied")
	// ErrNotReady: the voter is still replaying its log after a restart.
	ErrNotReady = errors.New("control: this voter is still catching up with its raft log")
)

// Timing holds raft's timeouts; a zero field keeps raft's default. Tests use short ones.
type Timing struct {
	Heartbeat   time.Duration
	Election    time.Duration
	LeaderLease time.Duration
	Commit      time.Duration
}

// ServerConfig configures one voter.
type ServerConfig struct {
	// ID is the voter's raft server ID, unique in the cluster.
	ID string
	// DataDir holds raft's log and stable store (raft.db, or wal/: see LogStore) and
	// snapshots/.
	DataDir string
	// LogStore is the kind of log store a new data directory gets: LogStoreBolt (default)
	// or LogStoreWAL (opt-in, walDefects). Empty, a directory that holds one keeps it;
	// named, a directory that holds the other is refused (openLogStore).
	LogStore string
	// RaftAddr is the TCP address the raft transport listens on and advertises,
	// e.g. "127.0.0.1:7000". Ignored when Transport is set.
	RaftAddr string
	// RaftAdvertise, when set, is the address other voters dial instead of RaftAddr
	// (host:port). A DNS name stays a name, resolved at every dial, so that a voter whose IP
	// changes across restarts (a Kubernetes pod) stays reachable at the address the cluster's
	// configuration holds. Needs RaftTLS or RaftSecret.
	RaftAdvertise string
	// Transport replaces the TCP transport (tests partition with raft's InmemTransport).
	Transport raft.Transport
	// RaftTLS, when set, runs the transport over mutual TLS (transport.go): every voter
	// holds a certificate of the CA with the control role, reloaded from its files.
	RaftTLS *tlsconf.Store
	// RaftSecret, when set, runs the transport over mutual TLS with certificates derived
	// from this cluster secret (tlsconf.SecretSize bytes, the same on every voter; see
	// tlsconf.NewSecretStore): a peer without it cannot complete the handshake.
	RaftSecret []byte
	// InsecureRaftPlaintext runs the transport over plain TCP, where anyone who reaches the
	// port can append to the log: development only, logged as a warning at start. Exactly
	// one of RaftTLS, RaftSecret and InsecureRaftPlaintext is required unless Transport is
	// set.
	InsecureRaftPlaintext bool
	// LogEncoding is how the leader encodes commands in the raft log: LogEncodingAuto
	// (default: binary once every voter of the configuration has said over the raft
	// transport's TLS handshake that it reads it, JSON until then and on the plain
	// transport), LogEncodingJSON or LogEncodingBinary (every voter must read it: for tests
	// and for a transport set in Transport).
	LogEncoding string
	// codecs records what each voter dialled reads (set by NewServer).
	codecs *peerCodecs
	// RaftListenerLimits bound the TLS handshakes in progress on the raft port.
	RaftListenerLimits tlsconf.ListenerLimits
	// TLSMetrics counts the raft listener's refused connections and failed handshakes; nil
	// counts none.
	TLSMetrics *tlsconf.Metrics
	// APIURL is the base URL of this voter's HTTP API, recorded in the state for forwarding.
	APIURL string
	// Timing overrides raft's timeouts.
	Timing Timing
	// SnapshotThreshold is how many log entries trigger a snapshot, and how many are kept
	// after one; default 256. Raft's own defaults (8192 and 10240) would keep gigabytes of
	// log when whole documents of thousands of checks are applied; a follower that lags
	// further catches up from the snapshot instead.
	SnapshotThreshold uint64
	// ApplyTimeout bounds one write; default 10s.
	ApplyTimeout time.Duration
	// Allocators makes the name-server allocator of stateful zones; nil means
	// ShardAllocators, the guaranteed allocator of package shard.
	Allocators state.AllocatorFactory
	// Logger receives the voter's and raft's logs; nil discards them.
	Logger *slog.Logger
	// RaftLogLevel is the least level of raft's own logs passed on; default Info.
	RaftLogLevel slog.Level
	// Registerer receives the voter's metrics; nil registers none.
	Registerer prometheus.Registerer

	// walSegmentSize replaces the size of the write-ahead log's files (tests: small files,
	// so that a compacted log is gone from the disk).
	walSegmentSize int
	// DNSSECSecret seals the private keys the voter generates for signed zones (see
	// dnssec.Sealer); every voter and every signing location must hold the same one. Without
	// it the voter generates no keys and refuses rollovers.
	DNSSECSecret []byte
}

// Server is one running voter.
type Server struct {
	cfg   ServerConfig
	log   *slog.Logger
	fsm   *FSM
	raft  *raft.Raft
	store logStore
	trans raft.Transport

	committer committer // writes waiting for their turn to commit (batch.go)
	batchSize prometheus.Histogram
	stages    *prometheus.HistogramVec // vigil_control_write_stage_seconds

	bootLast uint64 // last log index on disk at start: reads wait until it is applied
	existing bool   // the data directory held raft state at start
	ready    atomic.Bool

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewServer opens the voter's data directory and starts raft. A new cluster also needs
// Bootstrap on exactly one voter; the others join through the API.
func NewServer(cfg ServerConfig) (*Server, error) {
	cfg, log, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	n := &Server{cfg: cfg, log: log, fsm: NewFSM(cfg.Allocators, log), batchSize: newBatchSize(), stages: newWriteStages()}
	n.fsm.applied = n.stages.WithLabelValues(stageFSM)
	hlog := newHCLogger(log, cfg.RaftLogLevel)
	if n.store, err = openLogStore(cfg.DataDir, cfg.LogStore, cfg.walSegmentSize, hlog); err != nil {
		return nil, err
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, hlog)
	if err != nil {
		n.store.Close()
		return nil, fmt.Errorf("control: snapshot store: %w", err)
	}
	if n.bootLast, err = n.store.LastIndex(); err != nil {
		n.store.Close()
		return nil, fmt.Errorf("control: read raft log: %w", err)
	}
	if n.existing, err = raft.HasExistingState(n.store, n.store, snaps); err != nil {
		n.store.Close()
		return nil, fmt.Errorf("control: read raft state: %w", err)
	}
	n.trans = cfg.Transport
	cfg.codecs = &peerCodecs{}
	n.cfg.codecs = cfg.codecs
	if n.trans == nil {
		if n.trans, err = newRaftTransport(cfg, hlog, log); err != nil {
			n.store.Close()
			return nil, err
		}
	}
	rc := raftConfig(cfg)
	rc.Logger = hlog
	if n.raft, err = raft.NewRaft(rc, n.fsm, &recentLogs{logStore: n.store, stored: n.stages.WithLabelValues(stageLogStore)}, n.store, snaps, n.trans); err != nil {
		n.closeTransport()
		n.store.Close()
		return nil, fmt.Errorf("control: start raft: %w", err)
	}
	if cfg.Registerer != nil {
		if err := registerNodeMetrics(cfg.Registerer, n); err != nil {
			n.Close()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.wg.Add(3)
	go n.watchLeadership(ctx)
	go n.waitReady(ctx)
	go n.keepZoneKeys(ctx)
	return n, nil
}

// withDefaults checks the voter's id, data directory and log encoding, creates the data
// directory, and returns cfg with the defaults of its apply timeout and allocators set and
// the voter's logger.
func (cfg ServerConfig) withDefaults() (ServerConfig, *slog.Logger, error) {
	if cfg.ID == "" || cfg.DataDir == "" {
		return cfg, nil, errors.New("control: a voter needs an id and a data directory")
	}
	switch cfg.LogEncoding {
	case LogEncodingAuto, LogEncodingJSON, LogEncodingBinary:
	default:
		return cfg, nil, fmt.Errorf("control: log encoding %q: want %q, %q or %q (automatic)", cfg.LogEncoding, LogEncodingJSON, LogEncodingBinary, LogEncodingAuto)
	}
	if cfg.ApplyTimeout == 0 {
		cfg.ApplyTimeout = 10 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("voter", cfg.ID)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return cfg, nil, fmt.Errorf("control: data directory: %w", err)
	}
	if cfg.Allocators == nil {
		cfg.Allocators = state.ShardAllocators
	}
	return cfg, log, nil
}

// raftConfig returns the raft configuration of the voter: its id, pre-vote on,
// the timing cfg sets, and a snapshot every SnapshotThreshold entries (default 256), as many
// kept behind it.
func raftConfig(cfg ServerConfig) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.PreVoteDisabled = false
	if t := cfg.Timing; t != (Timing{}) {
		setIf(&rc.HeartbeatTimeout, t.Heartbeat)
		setIf(&rc.ElectionTimeout, t.Election)
		setIf(&rc.LeaderLeaseTimeout, t.LeaderLease)
		setIf(&rc.CommitTimeout, t.Commit)
	}
	if cfg.SnapshotThreshold == 0 {
		cfg.SnapshotThreshold = 256
	}
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.TrailingLogs = cfg.SnapshotThreshold
	return rc
}

func setIf(dst *time.Duration, v time.Duration) {
	if v > 0 {
		*dst = v
	}
}

// Bootstrap makes this voter the first member of a new cluster. On a voter that already has
// state it does nothing.
func (n *Server) Bootstrap() error {
	cfg := raft.Configuration{Servers: []raft.Server{{
		Suffrage: raft.Voter, ID: raft.ServerID(n.cfg.ID), Address: n.trans.LocalAddr(),
	}}}
	err := n.raft.BootstrapCluster(cfg).Error()
	if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("control: bootstrap: %w", err)
	}
	return nil
}

// HasExistingState reports whether the data directory held raft state when the voter
// started: a restarted voter neither bootstraps nor joins again.
func (n *Server) HasExistingState() bool { return n.existing }

// ID returns the voter's raft ID.
func (n *Server) ID() string { return n.cfg.ID }

// RaftAddr returns the address of the voter's raft transport.
func (n *Server) RaftAddr() string { return string(n.trans.LocalAddr()) }

// State returns the current state of this voter's replica (possibly stale on a follower).
func (n *Server) State() *state.State { return n.fsm.State() }

// Wait blocks until the state's index exceeds index or ctx ends, and returns the state.
func (n *Server) Wait(ctx context.Context, index uint64) *state.State { return n.fsm.Wait(ctx, index) }

// IsLeader reports whether this voter is the leader.
func (n *Server) IsLeader() bool { return n.raft.State() == raft.Leader }

// Ready reports whether the voter has applied every log entry it had on disk at start, so
// its state is at least as new as anything it served before a restart. Until then its API
// refuses reads (503) and a Watcher asks another voter. (A follower whose uncommitted tail
// was discarded by a new leader becomes ready only when the log reaches that index again.)
func (n *Server) Ready() bool { return n.ready.Load() }

// Leader returns the leader's raft ID and API URL, empty when no leader is known.
func (n *Server) Leader() (id, apiURL string) {
	_, lid := n.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	return string(lid), n.fsm.State().Voters[string(lid)]
}

// LastContact returns when this voter last heard from the leader (now, on the leader).
func (n *Server) LastContact() time.Time {
	if n.IsLeader() {
		return time.Now()
	}
	return n.raft.LastContact()
}

// Apply commits a command through raft and returns the index it produced. Only the leader
// can apply: elsewhere it returns ErrNotLeader. The command is validated against the state
// before it reaches the log, and again when it is applied. Commands applied concurrently are
// committed together (see batch.go): they may share an index.
func (n *Server) Apply(cmd *state.Command) (uint64, error) {
	if !n.IsLeader() {
		return 0, ErrNotLeader
	}
	t0 := time.Now()
	cur := n.fsm.State()
	if _, err := state.ApplyCommand(cur, cmd, cur.Index+1); err != nil {
		return 0, err
	}
	t1 := time.Now()
	n.stages.WithLabelValues(stageValidate).Observe(t1.Sub(t0).Seconds())
	var data []byte
	var err error
	if n.binaryLog() {
		data, err = encodeCommandBinary(cmd)
	} else {
		data, err = encodeCommand(cmd)
	}
	if err != nil {
		return 0, err
	}
	n.stages.WithLabelValues(stageEncode).Observe(time.Since(t1).Seconds())
	return n.commit(data)
}

// The encodings of commands in the raft log (ServerConfig.LogEncoding).
const (
	LogEncodingAuto   = ""
	LogEncodingJSON   = "json"
	LogEncodingBinary = "binary"
)

// binaryLog reports whether this leader writes commands in the binary encoding: only when
// every other server of raft's configuration reads it (a voter of the release before reads
// JSON only), as the last TLS handshake with each said.
func (n *Server) binaryLog() bool {
	switch n.cfg.LogEncoding {
	case LogEncodingJSON:
		return false
	case LogEncodingBinary:
		return true
	}
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if s.ID != raft.ServerID(n.cfg.ID) && !n.cfg.codecs.reads(s.Address) {
			return false
		}
	}
	return true
}

// raftWriteError maps raft's errors to the control plane's.
func raftWriteError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return ErrNotLeader
	case errors.Is(err, raft.ErrLeadershipLost), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return ErrUnknownOutcome
	case errors.Is(err, raft.ErrEnqueueTimeout), errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w (%v)", ErrNoLeader, err)
	}
	return fmt.Errorf("control: raft: %w", err)
}

// Barrier returns once every entry committed before it is applied on this voter, the
// leader; with it a read is linearizable.
func (n *Server) Barrier() error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	if err := n.raft.Barrier(n.cfg.ApplyTimeout).Error(); err != nil {
		return raftWriteError(err)
	}
	return nil
}

// AddVoter adds a voter to the cluster and records its API URL. Leader only.
func (n *Server) AddVoter(v state.Voter, raftAddr string) (uint64, error) {
	if !n.IsLeader() {
		return 0, ErrNotLeader
	}
	if v.ID == "" || raftAddr == "" {
		return 0, errors.New("control: a voter needs an id and a raft address")
	}
	f := n.raft.AddVoter(raft.ServerID(v.ID), raft.ServerAddress(raftAddr), 0, n.cfg.ApplyTimeout)
	if err := f.Error(); err != nil {
		return 0, raftWriteError(err)
	}
	return n.Apply(&state.Command{Op: state.OpPutVoter, Voter: &v})
}

// RemoveVoter removes a voter from the cluster and from the state. Leader only.
func (n *Server) RemoveVoter(id string) (uint64, error) {
	if !n.IsLeader() {
		return 0, ErrNotLeader
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return 0, raftWriteError(err)
	}
	found := false
	for _, s := range cf.Configuration().Servers {
		found = found || string(s.ID) == id
	}
	_, recorded := n.fsm.State().Voters[id]
	if !found && !recorded {
		return 0, fmt.Errorf("control: voter %q: %w", id, state.ErrNotFound)
	}
	if found {
		if err := n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ApplyTimeout).Error(); err != nil {
			return 0, raftWriteError(err)
		}
	}
	if !recorded || id == n.cfg.ID {
		return n.fsm.State().Index, nil
	}
	return n.Apply(&state.Command{Op: state.OpDeleteVoter, ID: id})
}

// Servers returns the voters of the raft configuration as ID → raft address.
func (n *Server) Servers() (map[string]string, error) {
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return nil, fmt.Errorf("control: raft configuration: %w", err)
	}
	out := map[string]string{}
	for _, s := range cf.Configuration().Servers {
		out[string(s.ID)] = string(s.Address)
	}
	return out, nil
}

// Snapshot makes raft take a snapshot of the state now and compact its log.
func (n *Server) Snapshot() error {
	if err := n.raft.Snapshot().Error(); err != nil {
		return fmt.Errorf("control: snapshot: %w", err)
	}
	return nil
}

// Stats returns raft's own counters (term, indexes, state) for the status of a voter.
func (n *Server) Stats() map[string]string { return n.raft.Stats() }

// Close stops the voter: raft, its transport and its store.
func (n *Server) Close() error {
	if n.cancel != nil {
		n.cancel()
	}
	err := n.raft.Shutdown().Error()
	n.wg.Wait()
	n.closeTransport()
	if cerr := n.store.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("control: close voter %s: %w", n.cfg.ID, err)
	}
	return nil
}

func (n *Server) closeTransport() {
	if c, ok := n.trans.(raft.WithClose); ok {
		_ = c.Close()
	}
}

// watchLeadership records this voter's API URL in the state whenever it becomes leader and
// the state does not have it yet.
func (n *Server) watchLeadership(ctx context.Context) {
	defer n.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case leader := <-n.raft.LeaderCh():
			if !leader || n.cfg.APIURL == "" {
				continue
			}
			for attempt := 0; attempt < 5 && n.IsLeader(); attempt++ {
				if n.fsm.State().Voters[n.cfg.ID] == n.cfg.APIURL {
					break
				}
				_, err := n.Apply(&state.Command{Op: state.OpPutVoter, Voter: &state.Voter{ID: n.cfg.ID, API: n.cfg.APIURL}})
				if err == nil {
					break
				}
				n.log.Warn("control: recording this voter's API URL", "err", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
	}
}

// waitReady marks the voter ready once it has applied the log it had on disk at start.
func (n *Server) waitReady(ctx context.Context) {
	defer n.wg.Done()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if n.raft.AppliedIndex() >= n.bootLast {
			n.ready.Store(true)
			n.log.Info("control: voter ready", "applied_index", n.raft.AppliedIndex())
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
