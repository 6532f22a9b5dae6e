package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/strata-ledger/strata/cluster"
)

const baseYAML = `
node_id: gate1
role: gate
region: use1
data_dir: /tmp/strata-gate1
http_addr: 127.0.0.1:7001
raft_addr: 127.0.0.1:7002
gossip_addr: 127.0.0.1:7003
gossip_wan_addr: 127.0.0.1:7004
max_staleness: 3s
cluster_token: cluster-secret-0123456789
tokens:
  - token: file-token-0123456789
    tenant: acme
    scopes: [jobs:read]
`

func TestLoadNodeConfig_FlagsBeatEnvBeatFileBeatDefaults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gate1.yaml")
	if err := os.WriteFile(path, []byte(baseYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	addNodeFlags(fs)
	if err := fs.Parse([]string{"--config", path, "--region", "euw1"}); err != nil {
		t.Fatal(err)
	}
	environ := []string{"STRATA_REGION=apse1", "STRATA_HTTP_ADDR=127.0.0.1:9001", "STRATA_JOIN=127.0.0.2:1,127.0.0.3:1", "HOME=/root"}
	cfg, err := loadNodeConfig(fs, environ)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"flag beats env and file", cfg.Region, "euw1"},
		{"env beats file", cfg.HTTPAddr, "127.0.0.1:9001"},
		{"file beats default", cfg.MaxStaleness, 3 * time.Second},
		{"default kept", cfg.BootstrapExpect, 3},
		{"env list", len(cfg.Join), 2},
		{"file tokens", len(cfg.Tokens), 1},
		{"file only", cfg.NodeID, "gate1"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

func TestLoadNodeConfig_InvalidIsUsageError(t *testing.T) {
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	addNodeFlags(fs)
	if err := fs.Parse([]string{"--role", "worker"}); err != nil {
		t.Fatal(err)
	}
	_, err := loadNodeConfig(fs, nil)
	var ue usageError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want a usage error", err)
	}
}

// The backup block: nested in YAML, STRATA_BACKUP_* in the environment,
// --backup.* flags; defaults for what is not set.
func TestLoadNodeConfig_BackupBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gate1.yaml")
	if err := os.WriteFile(path, []byte(baseYAML+"backup:\n  dir: /var/backups/strata\n  interval: 10m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	addNodeFlags(fs)
	if err := fs.Parse([]string{"--config", path, "--backup.interval", "20m"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadNodeConfig(fs, []string{"STRATA_BACKUP_RETAIN=5"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Backup.Dir != "/var/backups/strata" || cfg.Backup.Interval != 20*time.Minute || cfg.Backup.Retain != 5 {
		t.Fatalf("backup %+v", cfg.Backup)
	}
	fs = pflag.NewFlagSet("agent", pflag.ContinueOnError)
	addNodeFlags(fs)
	if err := fs.Parse([]string{"--config", path, "--backup.retain", "0"}); err != nil {
		t.Fatal(err)
	}
	if _, err := loadNodeConfig(fs, nil); err == nil {
		t.Fatal("retain 0 accepted")
	}
}

// The bounded-disk keys (issue 16 §2) load from every layer and default
// to DefaultRaftSnapshotLogs and the NodeWAL's 64 MiB segments.
func TestLoadNodeConfig_BoundedDiskKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gate1.yaml")
	if err := os.WriteFile(path, []byte(baseYAML+"snapshot_interval: 45s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	addNodeFlags(fs)
	if err := fs.Parse([]string{"--config", path, "--wal-segment-bytes", "4194304"}); err != nil {
		t.Fatal(err)
	}
	cfg, err := loadNodeConfig(fs, []string{"STRATA_SNAPSHOT_THRESHOLD=1000", "STRATA_LEDGER_COMMIT_INTERVAL=250ms"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LedgerCommitInterval != 250*time.Millisecond || cluster.DefaultNodeConfig().LedgerCommitInterval != cluster.DefaultLedgerCommitInterval {
		t.Fatalf("ledger_commit_interval %s (default %s)", cfg.LedgerCommitInterval, cluster.DefaultNodeConfig().LedgerCommitInterval)
	}
	for _, bad := range []string{"1ms", "2s"} {
		if _, err := loadNodeConfig(fs, []string{"STRATA_LEDGER_COMMIT_INTERVAL=" + bad}); err == nil ||
			!strings.Contains(err.Error(), "ledger_commit_interval") {
			t.Fatalf("ledger_commit_interval %s: %v, want refused by name", bad, err)
		}
	}
	if cfg.WALSegmentBytes != 4<<20 || cfg.SnapshotThreshold != 1000 || cfg.SnapshotInterval != 45*time.Second ||
		cfg.WALCompactInterval != cluster.DefaultWALCompactInterval {
		t.Fatalf("wal_segment_bytes %d, snapshot_threshold %d, snapshot_interval %s, wal_compact_interval %s",
			cfg.WALSegmentBytes, cfg.SnapshotThreshold, cfg.SnapshotInterval, cfg.WALCompactInterval)
	}
	fs = pflag.NewFlagSet("agent", pflag.ContinueOnError)
	addNodeFlags(fs)
	if err := fs.Parse([]string{"--config", path, "--wal_segment_bytes", "65536"}); err != nil {
		t.Fatal(err)
	}
	if _, err := loadNodeConfig(fs, nil); err == nil {
		t.Fatal("a 64 KiB wal_segment_bytes (below the node minimum) was accepted")
	}
	d := cluster.DefaultNodeConfig()
	if d.SnapshotThreshold != cluster.DefaultRaftSnapshotLogs || d.WALSegmentBytes != 64<<20 {
		t.Fatalf("defaults: snapshot_threshold %d, wal_segment_bytes %d", d.SnapshotThreshold, d.WALSegmentBytes)
	}
}
