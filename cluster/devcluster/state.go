package devcluster

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/structs"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/transport/api"
)

// Files of the data directory.
const (
	secretsFileName = "secrets.json"
	clusterFileName = "cluster.json"
	// maxStateFileBytes bounds what is read from secrets.json and
	// cluster.json: a few nodes' addresses, never megabytes.
	maxStateFileBytes = 1 << 20
	privateFileMode   = 0o600 // tokens and logs are for the user only
	dirMode           = 0o700
)

// ErrShapeMismatch is returned when the data directory holds a cluster of
// another shape than the one planned.
var ErrShapeMismatch = errors.New("data dir holds a dev cluster of another shape")

// secrets are the tokens a dev cluster keeps across restarts, so a user's
// exported STRATA_TOKEN stays valid, and a TLS cluster's gossip key.
type secrets struct {
	Token        string `json:"token"`
	ClusterToken string `json:"cluster_token"`
	GossipKey    string `json:"gossip_key,omitempty"` // base64, only with TLS
}

// decodeSecrets parses and checks secrets.json.
func decodeSecrets(b []byte) (secrets, error) {
	var s secrets
	if len(b) > maxStateFileBytes {
		return secrets{}, fmt.Errorf("%d bytes, more than %d", len(b), maxStateFileBytes)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return secrets{}, err
	}
	if len(s.Token) < minTokenLen || len(s.ClusterToken) < minTokenLen {
		return secrets{}, fmt.Errorf("token and cluster_token must each be at least %d characters", minTokenLen)
	}
	if s.GossipKey != "" {
		if _, err := cluster.DecodeGossipKey(s.GossipKey); err != nil {
			return secrets{}, fmt.Errorf("gossip_key: %w", err)
		}
	}
	return s, nil
}

// decodeClusterFile parses cluster.json.
func decodeClusterFile(b []byte) (api.ClusterFile, error) {
	var f api.ClusterFile
	if len(b) > maxStateFileBytes {
		return api.ClusterFile{}, fmt.Errorf("%d bytes, more than %d", len(b), maxStateFileBytes)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return api.ClusterFile{}, err
	}
	return f, nil
}

// readStateFile reads a bounded state file; a missing file is (nil, nil).
func readStateFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}

// loadSecrets returns the data directory's tokens. On first start it
// stores want, with a random value for each empty field. An existing
// directory keeps its tokens, so a restarted dev cluster keeps its API
// token; wanting another one is an error rather than a silent switch.
// With gossipKey, the secrets also hold a gossip key, made if missing.
func loadSecrets(dataDir string, want secrets, gossipKey bool) (secrets, error) {
	path := filepath.Join(dataDir, secretsFileName)
	b, err := readStateFile(path)
	if err != nil {
		return secrets{}, err
	}
	if b != nil {
		s, err := decodeSecrets(b)
		if err != nil {
			return secrets{}, fmt.Errorf("secrets %s: %w", path, err)
		}
		if (want.Token != "" && want.Token != s.Token) || (want.ClusterToken != "" && want.ClusterToken != s.ClusterToken) {
			return secrets{}, fmt.Errorf("data dir %s already has other tokens (in %s); use another data dir", dataDir, path)
		}
		if !gossipKey || s.GossipKey != "" {
			return s, nil
		}
		// A directory whose first run died before any node started.
		if s.GossipKey, err = newGossipKey(rand.Reader); err != nil {
			return secrets{}, err
		}
		return s, writeSecrets(path, s)
	}
	s := want
	if s.Token == "" {
		t, err := auth.NewBootstrapToken()
		if err != nil {
			return secrets{}, err
		}
		s.Token = t.Token
	}
	if s.ClusterToken == "" {
		s.ClusterToken = rand.Text()
	}
	if gossipKey {
		if s.GossipKey, err = newGossipKey(rand.Reader); err != nil {
			return secrets{}, err
		}
	}
	return s, writeSecrets(path, s)
}

// writeSecrets writes s to path (0600).
func writeSecrets(path string, s secrets) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'))
}

// checkShape refuses a plan that differs from the cluster recorded in
// dataDir: another set of nodes, roles, regions or addresses would mix two
// clusters' Raft state. Node directories with an agent.yaml count even
// without a cluster.json, in case a run died before writing it.
func checkShape(dataDir string, plan []NodeSpec) error {
	planned := make(map[string]api.ClusterNode, len(plan))
	for _, s := range plan {
		planned[s.ID()] = clusterNode(s, 0)
	}
	path := filepath.Join(dataDir, clusterFileName)
	b, err := readStateFile(path)
	if err != nil {
		return err
	}
	if b != nil {
		f, err := decodeClusterFile(b)
		if err != nil {
			return fmt.Errorf("cluster file %s: %w", path, err)
		}
		if err := sameShape(planned, f.Nodes); err != nil {
			return fmt.Errorf("%w: %s: %w; use another data dir or remove it", ErrShapeMismatch, dataDir, err)
		}
	}
	entries, err := os.ReadDir(dataDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, ok := planned[e.Name()]; ok || !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dataDir, e.Name(), "agent.yaml")); err == nil {
			return fmt.Errorf("%w: %s: node %s is not in the plan; use another data dir or remove it", ErrShapeMismatch, dataDir, e.Name())
		}
	}
	return nil
}

// sameShape names the first node that differs between the plan and a
// recorded cluster file.
func sameShape(planned map[string]api.ClusterNode, recorded []api.ClusterNode) error {
	seen := make(map[string]bool, len(recorded))
	for _, n := range recorded {
		want, ok := planned[n.NodeID]
		if !ok {
			return fmt.Errorf("node %s is recorded but not planned", n.NodeID)
		}
		if d := shapeDiff(n, want); d != "" {
			return fmt.Errorf("node %s: %s", n.NodeID, d)
		}
		seen[n.NodeID] = true
	}
	ids := make([]string, 0, len(planned))
	for id := range planned {
		if !seen[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) > 0 {
		slices.Sort(ids)
		return fmt.Errorf("node %s is planned but not recorded", ids[0])
	}
	return nil
}

// shapeDiff names the first field that must not change across restarts
// (identity and addresses; not paths, the directory may move) and differs.
func shapeDiff(recorded, planned api.ClusterNode) string {
	fields := []struct{ key, recorded, planned string }{
		{"role", recorded.Role, planned.Role},
		{"region", recorded.Region, planned.Region},
		{"api_addr", recorded.APIAddr, planned.APIAddr},
		{"raft_addr", recorded.RaftAddr, planned.RaftAddr},
		{"gossip_addr", recorded.GossipAddr, planned.GossipAddr},
		{"gossip_wan_addr", recorded.GossipWANAddr, planned.GossipWANAddr},
		{"data_plane_addr", recorded.DataPlaneAddr, planned.DataPlaneAddr},
	}
	for _, f := range fields {
		if f.recorded != f.planned {
			return fmt.Sprintf("%s is %q in the data dir, %q in the plan", f.key, f.recorded, f.planned)
		}
	}
	return ""
}

// clusterFileOf describes the planned nodes and workers as cluster.json
// does; one missing from pids is not running (pid 0). tls is its tls
// member (nil: the nodes serve plain HTTP).
func clusterFileOf(dataDir, token string, tls *api.ClusterTLS, specs []NodeSpec, workers []WorkerSpec, pids map[string]int) api.ClusterFile {
	f := api.ClusterFile{DataDir: dataDir, Token: token, TLS: tls, Nodes: make([]api.ClusterNode, 0, len(specs))}
	for _, s := range specs {
		f.Nodes = append(f.Nodes, clusterNode(s, pids[s.ID()]))
	}
	for _, w := range workers {
		f.Workers = append(f.Workers, workerNode(w, pids[w.ID]))
	}
	return f
}

func clusterNode(s NodeSpec, pid int) api.ClusterNode {
	c := s.Config
	return api.ClusterNode{
		NodeID:        c.NodeID,
		Role:          string(c.Role),
		Region:        c.Region,
		APIAddr:       c.HTTPAddr,
		RaftAddr:      c.RaftAddr,
		GossipAddr:    c.GossipAddr,
		GossipWANAddr: c.GossipWANAddr,
		DataPlaneAddr: c.DataPlaneAddr,
		DataDir:       c.DataDir,
		PID:           pid,
	}
}

// encodeNodeConfig renders cfg as the YAML `strata agent --config` reads.
// The keys come from the struct's koanf tags, so a new NodeConfig field is
// written without touching this code; durations are written as Go duration
// strings.
func encodeNodeConfig(cfg cluster.NodeConfig) ([]byte, error) {
	m, err := structs.Provider(cfg, "koanf").Read()
	if err != nil {
		return nil, err
	}
	b, err := yaml.Parser().Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode config of %s: %w", cfg.NodeID, err)
	}
	return b, nil
}

// writeFileAtomic replaces path with b (mode 0600): write a temporary file,
// fsync, rename, so a reader never sees half a file.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := tmp.Chmod(privateFileMode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}
