package group

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// Kind selects the timeouts of a Raft group (DESIGN §7).
type Kind int

// Raft group kinds.
const (
	// Regional is a region's managers: one datacenter, LAN round trips.
	Regional Kind = iota
	// Global is the gates across regions: WAN round trips.
	Global
)

// Raft limits and tunables.
const (
	raftSnapshotsRetained = 2
	raftMaxPool           = 3
	raftTransportTimeout  = 10 * time.Second
	// raftMaxAppendEntries lets a follower catch up in big steps; entries
	// already carry many events each.
	raftMaxAppendEntries = 256
	raftTrailingLogs     = 10_240
	// DefaultSnapshotInterval is how often Raft checks whether
	// DefaultSnapshotThreshold entries were appended since the last
	// snapshot, and takes one if so (hashicorp/raft waits a random time
	// between the interval and twice it).
	DefaultSnapshotInterval = 30 * time.Second
	// DefaultSnapshotThreshold is how many entries past the last
	// snapshot make the next check take one.
	DefaultSnapshotThreshold = 8192
	// raftLogCacheEntries is how many recent entries stay decoded in
	// memory. Without the cache, the leader reads every entry it
	// replicates back from raft-boltdb and a follower every entry it
	// applies (a bolt read plus a msgpack decode of up to MaxEntryBytes:
	// 13 % of a regional leader's CPU under batched load). Two entries are
	// in flight at a time (DefaultProposerInFlight), so 64 covers the
	// steady state with room for a follower a few round trips behind;
	// worst case 64 × MaxEntryBytes of memory.
	raftLogCacheEntries = 64
)

// raftTimings returns the timeouts for kind. Writes must resume within 2 s
// of a leader's kill -9, and the heartbeat timeout (HT) sets that time:
// hashicorp/raft checks a follower's last contact on a timer re-armed at
// random in [HT, 2×HT), so a follower notices a dead leader HT to ~3×HT
// after its last heartbeat; a survivor refuses (pre-)votes while it still
// has a leader, so the election waits for the later of the two survivors
// to notice. If the one with the longer log noticed first, it retries
// only after its election timeout, [ET, 2×ET): ET = HT, the least
// hashicorp/raft allows. LAN (regional): sub-millisecond round trips.
//
// WAN (global): gates see round trips of up to ~100 ms (strata dev
// --wan-latency 50ms). HT 500 ms is 5 of them; the leader heartbeats
// every HT/10 to HT/5 and waits a round trip for each answer, so a
// follower times out only after ~3 heartbeats in a row went missing
// (measured under --wan-latency 50ms: a follower's last contact at most
// ~220 ms old, idle or under load). Writes then resume 0.8-1.6 s after a
// leader's kill (3 more round trips under WAN latency: pre-vote, vote,
// first commit); with HT 1 s they took 1.7-3.6 s. The lease (a leader
// that heard from no quorum for that long steps down) only hastens the
// exit of a cut-off leader, strong reads verify leadership with a quorum;
// it is HT, the most hashicorp/raft allows, so that a stall trips no
// earlier at the leader than at its followers. Round trips much above
// 100 ms need larger values.
func raftTimings(kind Kind) (heartbeat, election, lease, commit time.Duration) {
	if kind == Global {
		return 500 * time.Millisecond, 500 * time.Millisecond, 500 * time.Millisecond, 50 * time.Millisecond
	}
	return 300 * time.Millisecond, 300 * time.Millisecond, 150 * time.Millisecond, 10 * time.Millisecond
}

// Config is what a node needs to run its Raft group.
type Config struct {
	NodeID  string
	Kind    Kind
	Dir     string // raft.db and snapshots/ live here
	FSM     raft.FSM
	Stream  raft.StreamLayer
	LogSink io.Writer // hashicorp/raft's own logs (JSON lines); nil discards
	// SnapshotThreshold and SnapshotInterval set when Raft snapshots the
	// ledger (zero: the defaults above). A snapshot lets Raft truncate its
	// log and the node compact its NodeWAL (cluster/walgc).
	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
}

// Group is one node's member of a Raft group with its durable stores.
type Group struct {
	Raft      *raft.Raft
	Transport *raft.NetworkTransport
	logStore  *raftboltdb.BoltStore
	// HadState is true when the node restarted with Raft state on disk: it
	// must not bootstrap, it rejoins with its data.
	HadState bool

	readyTerm atomic.Uint64 // term in which a barrier made strong reads safe
	barrierMu sync.Mutex
}

// Open opens the stores under cfg.Dir and starts Raft. It does not
// bootstrap: see Bootstrap.
func Open(cfg Config) (*Group, error) {
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("raft dir %s: %w", cfg.Dir, err)
	}
	sink := cfg.LogSink
	if sink == nil {
		sink = io.Discard
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "raft", Output: sink, JSONFormat: true, Level: hclog.Warn})

	logStore, snaps, err := openStores(cfg.Dir, logger)
	if err != nil {
		return nil, err
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  cfg.Stream,
		MaxPool: raftMaxPool,
		Timeout: raftTransportTimeout,
		Logger:  logger,
	})
	rc := raftConfig(cfg.NodeID, cfg.Kind, logger)
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.SnapshotInterval > 0 {
		rc.SnapshotInterval = cfg.SnapshotInterval
	}

	existing, err := raft.HasExistingState(logStore, logStore, snaps)
	if err != nil {
		trans.Close()
		logStore.Close()
		return nil, fmt.Errorf("inspect raft state %s: %w", cfg.Dir, err)
	}
	logs, err := raft.NewLogCache(raftLogCacheEntries, logStore)
	if err != nil {
		trans.Close()
		logStore.Close()
		return nil, fmt.Errorf("raft log cache: %w", err)
	}
	r, err := raft.NewRaft(rc, cfg.FSM, logs, logStore, snaps, trans)
	if err != nil {
		trans.Close()
		logStore.Close()
		return nil, fmt.Errorf("start raft %s: %w", cfg.NodeID, err)
	}
	return &Group{Raft: r, Transport: trans, logStore: logStore, HadState: existing}, nil
}

// openStores opens the log and stable store (raft-boltdb) and the
// snapshot store under dir.
func openStores(dir string, logger hclog.Logger) (*raftboltdb.BoltStore, *raft.FileSnapshotStore, error) {
	// raft-boltdb: the log store must fsync every append (it is what makes a
	// committed entry durable); the freelist is not synced because bbolt
	// rebuilds it on open, which halves the pages written per commit.
	logStore, err := raftboltdb.New(raftboltdb.Options{
		Path:        filepath.Join(dir, "raft.db"),
		BoltOptions: &bbolt.Options{Timeout: time.Second, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("raft log store %s: %w", dir, err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, raftSnapshotsRetained, logger)
	if err != nil {
		logStore.Close()
		return nil, nil, fmt.Errorf("raft snapshot store %s: %w", dir, err)
	}
	return logStore, snaps, nil
}

// raftConfig is the Raft configuration of a node of a group of kind.
func raftConfig(nodeID string, kind Kind, logger hclog.Logger) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(nodeID)
	rc.Logger = logger
	rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout, rc.CommitTimeout = raftTimings(kind)
	rc.MaxAppendEntries = raftMaxAppendEntries
	rc.TrailingLogs = raftTrailingLogs
	rc.SnapshotInterval = DefaultSnapshotInterval
	rc.SnapshotThreshold = DefaultSnapshotThreshold
	rc.BatchApplyCh = true
	// Replication metrics only with a peer label, not once more per peer
	// name (see peerLabelSink).
	rc.NoLegacyTelemetry = true
	return rc
}

// Recover rewrites the Raft state under dir so that the group's
// configuration is servers (hashicorp/raft's RecoverCluster, what
// Consul's peers.json does): for a group that lost its majority for good.
// The node must be stopped. fsm is the node's ledger FSM: the log is
// replayed into it (entries it applied already are skipped) and a
// snapshot taken. Run it on every surviving server with the same servers,
// then start them.
func Recover(nodeID string, kind Kind, dir string, fsm raft.FSM, servers []Server) error {
	if len(servers) == 0 {
		return errors.New("recover: no servers")
	}
	logger := hclog.New(&hclog.LoggerOptions{Name: "raft", Output: io.Discard, JSONFormat: true, Level: hclog.Warn})
	logStore, snaps, err := openStores(dir, logger)
	if err != nil {
		return err
	}
	defer logStore.Close()
	conf := raft.Configuration{}
	for _, s := range servers {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(s.ID), Address: raft.ServerAddress(s.Addr)})
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(servers[0].Addr))
	if err := raft.RecoverCluster(raftConfig(nodeID, kind, logger), fsm, logStore, logStore, snaps, trans, conf); err != nil {
		return fmt.Errorf("recover %s: %w", nodeID, err)
	}
	return nil
}

// Bootstrap starts the group with servers as its first configuration.
// Every member may call it with the same servers.
func (g *Group) Bootstrap(servers []Server) error {
	conf := raft.Configuration{}
	for _, s := range servers {
		conf.Servers = append(conf.Servers, raft.Server{ID: raft.ServerID(s.ID), Address: raft.ServerAddress(s.Addr)})
	}
	err := g.Raft.BootstrapCluster(conf).Error()
	if err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("bootstrap: %w", err)
	}
	return nil
}

// SnapshotIndex returns the Raft index of this node's newest snapshot: one
// complete and durable in its snapshot store (the file store writes a
// snapshot in a temporary directory, fsyncs it and renames it into place;
// only then does Raft count it). 0 if there is none.
func (g *Group) SnapshotIndex() (uint64, error) {
	// Raft records it once a snapshot is in place (taken, restored from
	// the leader, or found at start); listing the store instead would log
	// a warning for every snapshot still being written.
	v := g.Raft.Stats()["last_snapshot_index"]
	index, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("raft last_snapshot_index %q: %w", v, err)
	}
	return index, nil
}

// Close stops Raft and closes its stores. It does not leave the group.
func (g *Group) Close() error {
	err := g.Raft.Shutdown().Error()
	return errors.Join(err, g.Transport.Close(), g.logStore.Close())
}

// GlobalName names the gates' Raft group in session tokens, deliveries and
// the API; a regional group is named by its region.
const GlobalName = "global"
