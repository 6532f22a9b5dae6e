package cluster

import (
	"crypto/ed25519"
	"os"

	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"time"

	"github.com/strata-ledger/strata/bundle"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/backup"
	"github.com/strata-ledger/strata/cluster/chaincheck"
	"github.com/strata-ledger/strata/cluster/dataplane"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/httpapi"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/cluster/replica"
	"github.com/strata-ledger/strata/cluster/tracing"
	"github.com/strata-ledger/strata/cluster/walgc"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/gossip"
	"github.com/strata-ledger/strata/wal"
)

// Role is what a node does in the cluster (DESIGN §1): gossip's role, the
// one role type of the node. Workers are not nodes: they never run an agent.
type Role = gossip.Role

// Node roles.
const (
	RoleGate    = gossip.RoleGate
	RoleManager = gossip.RoleManager
)

// Defaults of NodeConfig.
const (
	DefaultMaxStaleness    = time.Second
	DefaultSessionWait     = 5 * time.Second
	DefaultHLCMaxOffset    = 500 * time.Millisecond
	DefaultBootstrapExpect = 3
	// DefaultRaftSnapshotLogs is snapshot_threshold's default: Raft
	// snapshots the ledger once this many entries were appended since
	// the last snapshot (checked every snapshot_interval).
	DefaultRaftSnapshotLogs = group.DefaultSnapshotThreshold
	// DefaultRaftSnapshotInterval is snapshot_interval's default.
	DefaultRaftSnapshotInterval = group.DefaultSnapshotInterval
	// DefaultWALSegmentBytes is wal_segment_bytes' default: a NodeWAL
	// segment is preallocated to this size, and the next one is prepared
	// ahead, so an idle node's NodeWAL takes twice this.
	DefaultWALSegmentBytes = wal.DefaultSegmentBytes
	// MinWALSegmentBytes is the least wal_segment_bytes: a segment must
	// hold the largest record the pipeline writes (a batch of up to
	// fsm.MaxBatchBytes), with room to spare.
	MinWALSegmentBytes = 2 << 20
	// DefaultWALCompactInterval is wal_compact_interval's default.
	DefaultWALCompactInterval = walgc.DefaultInterval
	// DefaultWorkerAckWindow is how long a worker may stay silent before
	// it loses its leases (DESIGN §10).
	DefaultWorkerAckWindow = 5 * time.Second
	// DefaultReconcileInterval is how often a leader's reconcilers look
	// at the ledger when nothing wakes them sooner.
	DefaultReconcileInterval = 250 * time.Millisecond
	// DefaultAntiEntropyDepth is the Merkle tree's depth: 2^21 leaf
	// buckets, a handful of records each at 10M (an empty tree takes
	// 3.5 MiB, each record about 92 bytes).
	DefaultAntiEntropyDepth = antientropy.DefaultDepth
	// DefaultBreakerCooldown is how long the forwarder's breaker stays
	// open before one probe (DESIGN §4).
	DefaultBreakerCooldown = 30 * time.Second
	// DefaultLedgerCommitInterval is ledger_commit_interval's default,
	// etcd's backend batch interval: at 256 clients it cost 0.88× the
	// manager CPU per write of 50 ms (200 ms: 0.85×), at the price of
	// the lifecycle loops seeing an entry up to 100 ms later.
	DefaultLedgerCommitInterval = 100 * time.Millisecond
	// MinLedgerCommitInterval and MaxLedgerCommitInterval bound it: a
	// shorter one commits nearly every entry alone, a longer one holds
	// too much in a transaction that a read must commit first.
	MinLedgerCommitInterval = 5 * time.Millisecond
	MaxLedgerCommitInterval = time.Second
)

// NodeConfig is everything `strata agent` needs. Every key can be set in the
// YAML file, as a STRATA_ environment variable and as a flag; flags win over
// the environment, which wins over the file, which wins over defaults.
type NodeConfig struct {
	NodeID  string `koanf:"node_id"`
	Role    Role   `koanf:"role"`
	Region  string `koanf:"region"`
	DataDir string `koanf:"data_dir"`

	HTTPAddr      string `koanf:"http_addr"`       // public API
	RaftAddr      string `koanf:"raft_addr"`       // Raft stream layer
	GossipAddr    string `koanf:"gossip_addr"`     // LAN pool of the region
	GossipWANAddr string `koanf:"gossip_wan_addr"` // WAN pool (gates only)
	DataPlaneAddr string `koanf:"data_plane_addr"` // worker progress (managers)
	// HTTPWANAddr is a gate's second API address, on the network between
	// gates (deploy/compose): the node serves the API there too and
	// gossips it in the WAN pool, so the other regions' gates reach it
	// there while its region's managers use http_addr. Gates only;
	// empty: http_addr everywhere.
	HTTPWANAddr string `koanf:"http_wan_addr"`
	// DataPlaneCommitInterval is how often a manager commits the
	// aggregates its data plane folded to the regional ledger (DESIGN
	// §4: 500 ms); between commits they are staged in the NodeWAL every
	// few milliseconds (LOCAL).
	DataPlaneCommitInterval time.Duration `koanf:"data_plane_commit_interval"`
	// LedgerCommitInterval is how long Raft entries share one bbolt
	// transaction of the ledger store (boltstore group commit; etcd's
	// backend: 100 ms). Longer writes each page fewer times per entry
	// under load (BENCHMARKS.md, "Issue 19: the ledger commit
	// interval"); the lifecycle loops see a new entry up to one
	// interval later, and a read that finds entries pending commits
	// them first.
	LedgerCommitInterval time.Duration `koanf:"ledger_commit_interval"`

	// BootstrapExpect is how many voters of this node's Raft group must
	// be seen through gossip before the group bootstraps on first start.
	BootstrapExpect int      `koanf:"bootstrap_expect"`
	Join            []string `koanf:"join"`     // LAN gossip seeds
	JoinWAN         []string `koanf:"join_wan"` // WAN gossip seeds (gates)

	Tokens []auth.TokenConfig `koanf:"tokens"`
	// ClusterToken is the secret nodes of one cluster share to call each
	// other's internal API (forwarded proposals). Every node of the
	// cluster must have the same one.
	ClusterToken string `koanf:"cluster_token"`

	MaxStaleness time.Duration `koanf:"max_staleness"` // default for bounded reads
	SessionWait  time.Duration `koanf:"session_wait"`  // how long a session read waits
	HLCMaxOffset time.Duration `koanf:"hlc_max_offset"`

	// WANLatency is added by the transport to traffic to other regions.
	WANLatency           time.Duration `koanf:"wan_latency"`
	EnableFaultInjection bool          `koanf:"enable_fault_injection"`
	LogLevel             string        `koanf:"log_level"`

	// Job lifecycle (reconcilers, workers, forwarder).
	WorkerAckWindow   time.Duration `koanf:"worker_ack_window"`
	ReconcileInterval time.Duration `koanf:"reconcile_interval"`
	BreakerCooldown   time.Duration `koanf:"breaker_cooldown"`

	// Anti-entropy (DESIGN §11). The depth of every node's Merkle tree:
	// all nodes of a cluster must use the same. The interval between a
	// verified node's replica checks.
	AntiEntropyDepth    int           `koanf:"antientropy_depth"`
	AntiEntropyInterval time.Duration `koanf:"antientropy_interval"`
	// ChainVerifyInterval is how often a gate recomputes every tenant's
	// audit chain (and once at start).
	ChainVerifyInterval time.Duration `koanf:"chain_verify_interval"`

	// SigningKey is an ed25519 private key file (PEM PKCS #8 or base64,
	// strata bundle keygen): gates sign exported bundles and chain
	// checkpoints with it. Empty: unsigned.
	SigningKey string `koanf:"signing_key"`

	// Backup: scheduled, proved backups of the node's group while it
	// leads (cluster/backup); none without a dir.
	Backup BackupConfig `koanf:"backup"`

	// Bounded disk (cluster/walgc). WALSegmentBytes is the size NodeWAL
	// segments are preallocated to; WALCompactInterval the time between
	// two compaction rounds, which drop the NodeWAL records that reached
	// their tier and are in a Raft snapshot on this node. Raft snapshots
	// the ledger when SnapshotThreshold entries were appended since the
	// last one, checked every SnapshotInterval.
	WALSegmentBytes    int64         `koanf:"wal_segment_bytes"`
	WALCompactInterval time.Duration `koanf:"wal_compact_interval"`
	SnapshotThreshold  uint64        `koanf:"snapshot_threshold"`
	SnapshotInterval   time.Duration `koanf:"snapshot_interval"`
	// Security (config_security.go, docs/SECURITY.md).
	TLS               TLSFiles `koanf:"tls"`                 // TLS on the API, node-to-node HTTP and Raft
	GossipKey         string   `koanf:"gossip_key"`          // base64 of 32 bytes: gossip encryption
	GossipKeyringFile string   `koanf:"gossip_keyring_file"` // default DATA/gossip.keyring
	Insecure          bool     `koanf:"insecure"`            // allow non-loopback addresses without TLS
	AdminAddr         string   `koanf:"admin_addr"`          // pprof listener; empty: off

	// Tracing: OpenTelemetry spans exported over OTLP/HTTP; off unless
	// tracing.otlp_endpoint is set (cluster/tracing).
	Tracing tracing.Config `koanf:"tracing"`
	// Per-token API rate limit of this node (issue 18): a token bucket
	// per token refilled at APIRateLimit requests per second, holding
	// APIRateBurst (default: one second's worth). 0: off.
	APIRateLimit float64 `koanf:"api_rate_limit"`
	APIRateBurst float64 `koanf:"api_rate_burst"`
	// Governance of a region's dispatch (managers, issue 18,
	// config_govern.go): the circuit breakers per (tenant, job type), and
	// the retry policy of each job type whose jobs' specs have none.
	Breakers      BreakerConfig          `koanf:"breakers"`
	RetryDefaults map[string]RetryConfig `koanf:"retry_defaults,omitempty"`
}

// BackupConfig is the backup: {dir, interval, retain} block.
type BackupConfig struct {
	Dir      string        `koanf:"dir"`
	Interval time.Duration `koanf:"interval"`
	Retain   int           `koanf:"retain"`
}

// DefaultNodeConfig returns the defaults every loaded config starts from.
func DefaultNodeConfig() NodeConfig {
	return NodeConfig{
		BootstrapExpect: DefaultBootstrapExpect,
		MaxStaleness:    DefaultMaxStaleness,
		SessionWait:     DefaultSessionWait,
		HLCMaxOffset:    DefaultHLCMaxOffset,
		LogLevel:        "info",

		WorkerAckWindow:   DefaultWorkerAckWindow,
		ReconcileInterval: DefaultReconcileInterval,
		BreakerCooldown:   DefaultBreakerCooldown,

		DataPlaneCommitInterval: dataplane.DefaultCommitInterval,
		LedgerCommitInterval:    DefaultLedgerCommitInterval,

		AntiEntropyDepth:    DefaultAntiEntropyDepth,
		AntiEntropyInterval: replica.DefaultInterval,
		ChainVerifyInterval: chaincheck.DefaultInterval,
		Backup:              BackupConfig{Interval: backup.DefaultInterval, Retain: backup.DefaultRetain},

		WALSegmentBytes:    DefaultWALSegmentBytes,
		WALCompactInterval: DefaultWALCompactInterval,
		SnapshotThreshold:  DefaultRaftSnapshotLogs,
		SnapshotInterval:   DefaultRaftSnapshotInterval,
	}
}

// Validate checks c and names the first bad key.
func (c *NodeConfig) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if !members.IsNodeID(c.NodeID) {
		bad("node_id", "%q must be 1-63 of [a-z0-9_-], starting with a letter or digit", c.NodeID)
	}
	if c.Role != RoleGate && c.Role != RoleManager {
		bad("role", "%q must be %q or %q", c.Role, RoleGate, RoleManager)
	}
	if !fsm.IsRegion(c.Region) {
		bad("region", "%q must be a short lowercase code such as use1", c.Region)
	}
	if c.DataDir == "" {
		bad("data_dir", "required")
	}
	if c.APIRateLimit < 0 || c.APIRateLimit > 1e6 || c.APIRateBurst < 0 || c.APIRateBurst > 1e7 {
		bad("api_rate_limit", "%g per second and burst %g must be in [0, 1e6] and [0, 1e7]", c.APIRateLimit, c.APIRateBurst)
	}
	addrs := map[string]string{"http_addr": c.HTTPAddr, "raft_addr": c.RaftAddr, "gossip_addr": c.GossipAddr}
	if c.Role == RoleGate {
		addrs["gossip_wan_addr"] = c.GossipWANAddr
	}
	if c.Role == RoleManager {
		addrs["data_plane_addr"] = c.DataPlaneAddr
	}
	if c.HTTPWANAddr != "" {
		addrs["http_wan_addr"] = c.HTTPWANAddr
		if c.Role != RoleGate || c.HTTPWANAddr == c.HTTPAddr {
			bad("http_wan_addr", "%q: a gate's second API address, not its http_addr", c.HTTPWANAddr)
		}
	}
	for key, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			bad(key, "%q is not host:port", a)
		}
	}
	if c.BootstrapExpect < 1 || c.BootstrapExpect > 7 {
		bad("bootstrap_expect", "%d must be 1..7", c.BootstrapExpect)
	}
	if c.MaxStaleness <= 0 || c.SessionWait <= 0 || c.HLCMaxOffset <= 0 || c.WANLatency < 0 {
		bad("max_staleness, session_wait, hlc_max_offset, wan_latency", "durations must be positive")
	}
	if c.WorkerAckWindow <= 0 || c.ReconcileInterval <= 0 || c.BreakerCooldown <= 0 {
		bad("worker_ack_window, reconcile_interval, breaker_cooldown", "durations must be positive")
	}
	if c.AntiEntropyDepth < antientropy.MinDepth || c.AntiEntropyDepth > antientropy.MaxDepth {
		bad("antientropy_depth", "%d must be %d..%d, the same on every node", c.AntiEntropyDepth, antientropy.MinDepth, antientropy.MaxDepth)
	}
	if c.LedgerCommitInterval < MinLedgerCommitInterval || c.LedgerCommitInterval > MaxLedgerCommitInterval {
		bad("ledger_commit_interval", "%s must be %s..%s", c.LedgerCommitInterval, time.Duration(MinLedgerCommitInterval), time.Duration(MaxLedgerCommitInterval))
	}
	if c.DataPlaneCommitInterval < dataplane.MinCommitInterval {
		bad("data_plane_commit_interval", "%s must be at least %s", c.DataPlaneCommitInterval, time.Duration(dataplane.MinCommitInterval))
	}
	if c.AntiEntropyInterval <= 0 || c.ChainVerifyInterval <= 0 {
		bad("antientropy_interval, chain_verify_interval", "durations must be positive")
	}
	if c.Backup.Dir != "" && (c.Backup.Interval < time.Second || c.Backup.Retain < 1) {
		bad("backup", "interval %s must be at least 1s and retain %d at least 1", c.Backup.Interval, c.Backup.Retain)
	}
	if c.WALSegmentBytes < MinWALSegmentBytes || c.WALSegmentBytes > wal.MaxSegmentBytes {
		bad("wal_segment_bytes", "%d must be %d..%d", c.WALSegmentBytes, MinWALSegmentBytes, int64(wal.MaxSegmentBytes))
	}
	if c.WALCompactInterval <= 0 {
		bad("wal_compact_interval", "must be positive")
	}
	if c.SnapshotThreshold < 1 {
		bad("snapshot_threshold", "must be at least 1")
	}
	if c.SnapshotInterval < minRaftSnapshotInterval {
		bad("snapshot_interval", "%s must be at least %s", c.SnapshotInterval, minRaftSnapshotInterval)
	}
	if c.SigningKey != "" {
		if _, err := loadSigningKey(c.SigningKey); err != nil {
			bad("signing_key", "%v", err)
		}
	}
	if _, err := auth.NewAuthenticator(c.Tokens); err != nil {
		bad("tokens", "%v", err)
	}
	if len(c.Tokens) == 0 {
		bad("tokens", "at least one API token is required")
	}
	errs = append(errs, c.validateSecurity()...)
	errs = append(errs, c.validateGovern()...)
	if err := c.Tracing.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(c.ClusterToken) < auth.MinTokenLen {
		bad("cluster_token", "required, at least %d characters, the same on every node", auth.MinTokenLen)
	}
	return errors.Join(errs...)
}

// minRaftSnapshotInterval is the least snapshot_interval hashicorp/raft
// accepts.
const minRaftSnapshotInterval = 5 * time.Millisecond

// Ordinal is the node's number in HLC timestamps: FNV-1a of the node id. A
// collision only makes two nodes' timestamps able to tie, which the ledger
// breaks by event id.
func (c *NodeConfig) Ordinal() uint32 {
	h := fnv.New32a()
	h.Write([]byte(c.NodeID))
	return h.Sum32()
}

// MaxWorkerCapacity bounds the workflows one worker runs at once
// (httpapi's limit, for dev clusters that plan workers).
const MaxWorkerCapacity = httpapi.MaxWorkerCapacity

// loadSigningKey reads an ed25519 private key file.
func loadSigningKey(path string) (ed25519.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return bundle.ParsePrivateKey(b)
}
