package main

import (
	"fmt"
	"strings"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/file"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/providers/structs"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

	"github.com/strata-ledger/strata/cluster"
)

// envPrefix names every environment variable of a config key:
// STRATA_NODE_ID, STRATA_HTTP_ADDR, ...
const envPrefix = "STRATA_"

// addNodeFlags declares a flag for every NodeConfig key (tokens excepted:
// they come from the file or STRATA_TOKENS only).
func addNodeFlags(fs *pflag.FlagSet) {
	d := cluster.DefaultNodeConfig()
	fs.String("config", "", "YAML config file")
	fs.String("node_id", "", "node id (unique in the cluster)")
	fs.String("role", "", "gate or manager")
	fs.String("region", "", "region code, e.g. use1")
	fs.String("data_dir", "", "data directory")
	fs.String("http_addr", "", "API listen address")
	fs.String("raft_addr", "", "Raft listen address")
	fs.String("gossip_addr", "", "LAN gossip address")
	fs.String("gossip_wan_addr", "", "WAN gossip address (gates)")
	fs.String("data_plane_addr", "", "worker progress address (managers)")
	fs.String("http_wan_addr", "", "a gate's second API address, on the network between gates (gossiped in the WAN pool)")
	fs.Int("bootstrap_expect", d.BootstrapExpect, "voters to see before bootstrapping the group")
	fs.StringSlice("join", nil, "LAN gossip seeds")
	fs.StringSlice("join_wan", nil, "WAN gossip seeds")
	fs.Duration("max_staleness", d.MaxStaleness, "default staleness bound of bounded reads")
	fs.Duration("session_wait", d.SessionWait, "how long a session read waits for the node to catch up")
	fs.Duration("hlc_max_offset", d.HLCMaxOffset, "largest accepted clock offset of a peer")
	fs.Duration("wan_latency", 0, "latency added to traffic between regions (demos)")
	fs.Bool("enable_fault_injection", false, "serve the fault-injection endpoint")
	fs.String("log_level", d.LogLevel, "debug, info, warn or error")
	fs.String("cluster_token", "", "secret shared by the cluster's nodes for internal calls")
	fs.Duration("worker_ack_window", d.WorkerAckWindow, "how long a worker may stay silent before it loses its leases")
	fs.Duration("reconcile_interval", d.ReconcileInterval, "how often a leader's reconcilers look at the ledger")
	fs.Duration("breaker_cooldown", d.BreakerCooldown, "how long the forwarder's open breaker waits before a probe")
	fs.Int("antientropy_depth", d.AntiEntropyDepth, "depth of every node's Merkle tree (the same on every node)")
	fs.Duration("data_plane_commit_interval", d.DataPlaneCommitInterval, "how often a manager commits data-plane progress to the regional ledger (staged in the NodeWAL meanwhile)")
	fs.Duration("ledger_commit_interval", d.LedgerCommitInterval, "how long Raft entries share one transaction of the ledger store (5ms..1s; longer: less CPU per write under load, the reconcilers see an entry later)")
	fs.Duration("antientropy_interval", d.AntiEntropyInterval, "how often replica checks and regional anti-entropy rounds run")
	fs.Duration("chain_verify_interval", d.ChainVerifyInterval, "how often a gate verifies every tenant's audit chain")
	fs.String("signing_key", "", "ed25519 private key file (strata bundle keygen): gates sign exports and chain checkpoints")
	fs.String("backup.dir", "", "directory of scheduled, proved backups of the node's group (none if empty)")
	fs.Duration("backup.interval", d.Backup.Interval, "how often the group's leader writes a backup")
	fs.Int("backup.retain", d.Backup.Retain, "how many backups of the group to keep")
	fs.Int64("wal_segment_bytes", d.WALSegmentBytes, "size NodeWAL segments are preallocated to")
	fs.Duration("wal_compact_interval", d.WALCompactInterval, "time between two NodeWAL compaction rounds")
	fs.Uint64("snapshot_threshold", d.SnapshotThreshold, "Raft entries since the last snapshot that make the next check take one")
	fs.Duration("snapshot_interval", d.SnapshotInterval, "how often Raft checks whether to snapshot the ledger")
	fs.String("tls.ca_file", "", "cluster CA (PEM): with tls.cert_file and tls.key_file, TLS on the API and node-to-node, mutual TLS on Raft")
	fs.String("tls.cert_file", "", "this node's certificate (strata tls cert create)")
	fs.String("tls.key_file", "", "this node's private key")
	fs.String("gossip_key", "", "gossip encryption key, base64 of 32 bytes (strata keyring generate)")
	fs.String("gossip_keyring_file", "", "where the node keeps its gossip keyring (default DATA_DIR/gossip.keyring)")
	fs.Bool("insecure", false, "allow listening beyond loopback without TLS and a gossip key")
	fs.String("admin_addr", "", "pprof listener, loopback unless TLS is on (default: off)")
	// --enable-fault-injection and --enable_fault_injection are one flag.
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		return pflag.NormalizedName(strings.ReplaceAll(name, "-", "_"))
	})
}

// loadNodeConfig layers defaults < file < environment < flags that were set
// on the command line, then validates.
func loadNodeConfig(fs *pflag.FlagSet, environ []string) (cluster.NodeConfig, error) {
	k := koanf.New(".")
	if err := k.Load(structs.Provider(cluster.DefaultNodeConfig(), "koanf"), nil); err != nil {
		return cluster.NodeConfig{}, err
	}
	path, _ := fs.GetString("config")
	if path == "" {
		path = lookupEnv(environ, envPrefix+"CONFIG")
	}
	if path != "" {
		if err := k.Load(file.Provider(path), yaml.Parser()); err != nil {
			return cluster.NodeConfig{}, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	if err := k.Load(env.Provider(".", env.Opt{
		Prefix:        envPrefix,
		EnvironFunc:   func() []string { return environ },
		TransformFunc: envKey,
	}), nil); err != nil {
		return cluster.NodeConfig{}, err
	}
	// posflag with the koanf instance only overrides defaults with flags
	// the user actually set.
	if err := k.Load(posflag.Provider(fs, ".", k), nil); err != nil {
		return cluster.NodeConfig{}, err
	}
	var cfg cluster.NodeConfig
	if err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{Tag: "koanf"}); err != nil {
		return cluster.NodeConfig{}, fmt.Errorf("config: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return cluster.NodeConfig{}, usageError{fmt.Errorf("config: %w", err)}
	}
	return cfg, nil
}

// envKey maps STRATA_HTTP_ADDR to http_addr; list values are comma-separated.
func envKey(k, v string) (string, any) {
	key := strings.ToLower(strings.TrimPrefix(k, envPrefix))
	if key == "config" {
		return "", nil
	}
	switch key {
	case "join", "join_wan":
		return key, strings.Split(v, ",")
	}
	if rest, ok := strings.CutPrefix(key, "tls_"); ok {
		return "tls." + rest, v // STRATA_TLS_CA_FILE is tls.ca_file
	}
	if rest, ok := strings.CutPrefix(key, "backup_"); ok {
		return "backup." + rest, v // STRATA_BACKUP_DIR is backup.dir
	}
	return key, v
}

func lookupEnv(environ []string, name string) string {
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}
