package control

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	"github.com/vigil-dns/vigil/control/state"
)

// RecoverConfig names the voter whose data directory Recover rewrites.
type RecoverConfig struct {
	// DataDir is the stopped voter's data directory (the control/ folder of the agent's
	// -data-dir), holding raft.db or wal/ and snapshots/.
	DataDir string
	// ID is the voter's raft ID, as it runs (-id).
	ID string
	// RaftAddr is the address its raft transport will listen on and advertise (-raft-addr).
	RaftAddr string
	// Logger receives raft's logs of the recovery; nil discards them.
	Logger *slog.Logger
}

// RecoverResult says what a recovery kept.
type RecoverResult struct {
	// Index is the raft index of the last entry of the log the voter held, which the
	// recovered state includes.
	Index uint64
	// Voters are the voters the state still records (ID → API URL), the recovered one among
	// them: the others are to be removed once the voter runs, or they stay listed.
	Voters map[string]string
}

// Recover makes a stopped voter the only voter of its cluster, keeping every entry of its log
// and its snapshots: the way back for a cluster that lost a majority of its voters for good
// (raft.RecoverCluster; Consul's peers.json and etcd's --force-new-cluster do the same job).
// Entries that the voter held but the lost majority had not yet committed become committed.
// The voter then starts as usual, without -bootstrap, elects itself, and new voters join it.
// Running it on a voter of a cluster that still has a majority splits the cluster in two:
// the caller must have stopped every voter first.
func Recover(cfg RecoverConfig) (RecoverResult, error) {
	if cfg.DataDir == "" || cfg.ID == "" || cfg.RaftAddr == "" {
		return RecoverResult{}, errors.New("control: recover needs the voter's data directory, id and raft address")
	}
	if _, err := os.Stat(cfg.DataDir); err != nil {
		return RecoverResult{}, fmt.Errorf("control: recover: data directory: %w", err)
	}
	bolt, wal := filepath.Join(cfg.DataDir, "raft.db"), filepath.Join(cfg.DataDir, "wal")
	_, errBolt := os.Stat(bolt)
	_, errWAL := os.Stat(wal)
	if errBolt != nil && errWAL != nil {
		return RecoverResult{}, fmt.Errorf("control: recover: %s holds no raft log (neither raft.db nor wal/): is it the control/ folder of the voter's -data-dir?", cfg.DataDir)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hlog := newHCLogger(log, slog.LevelWarn)
	store, err := openLogStore(cfg.DataDir, "", 0, hlog)
	if err != nil {
		return RecoverResult{}, fmt.Errorf("%w (is the voter still running? stop it first)", err)
	}
	defer store.Close()
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, hlog)
	if err != nil {
		return RecoverResult{}, fmt.Errorf("control: recover: snapshot store: %w", err)
	}
	last, err := store.LastIndex()
	if err != nil {
		return RecoverResult{}, fmt.Errorf("control: recover: read raft log: %w", err)
	}
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.Logger = hlog
	fsm := NewFSM(state.ShardAllocators, log)
	_, trans := raft.NewInmemTransport(raft.ServerAddress(cfg.RaftAddr))
	only := raft.Configuration{Servers: []raft.Server{{
		Suffrage: raft.Voter, ID: raft.ServerID(cfg.ID), Address: raft.ServerAddress(cfg.RaftAddr),
	}}}
	if err := raft.RecoverCluster(rc, fsm, store, store, snaps, trans, only); err != nil {
		return RecoverResult{}, fmt.Errorf("control: recover: %w", err)
	}
	voters := map[string]string{}
	for id, u := range fsm.State().Voters {
		voters[id] = u
	}
	idx := fsm.State().Index
	if last > idx {
		idx = last
	}
	return RecoverResult{Index: idx, Voters: voters}, nil
}
