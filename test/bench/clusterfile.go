package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/strata-ledger/strata/transport/api"
)

// maxClusterFileBytes bounds cluster.json: a few nodes' addresses.
const maxClusterFileBytes = 1 << 20

// Node roles in a cluster file.
const (
	roleGate    = "gate"
	roleManager = "manager"
)

// LoadClusterFile reads the cluster.json that `strata dev` writes into its
// data directory.
func LoadClusterFile(path string) (api.ClusterFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return api.ClusterFile{}, fmt.Errorf("cluster file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxClusterFileBytes+1))
	if err != nil {
		return api.ClusterFile{}, fmt.Errorf("cluster file %s: %w", path, err)
	}
	cf, err := decodeClusterFile(b)
	if err != nil {
		return api.ClusterFile{}, fmt.Errorf("cluster file %s: %w", path, err)
	}
	return cf, nil
}

// decodeClusterFile parses cluster.json of at most maxClusterFileBytes.
// Unknown fields are ignored: the file belongs to `strata dev`, which may
// add some.
func decodeClusterFile(b []byte) (api.ClusterFile, error) {
	if len(b) > maxClusterFileBytes {
		return api.ClusterFile{}, fmt.Errorf("%d bytes, more than %d", len(b), maxClusterFileBytes)
	}
	var cf api.ClusterFile
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&cf); err != nil {
		return api.ClusterFile{}, fmt.Errorf("not a cluster file: %w", err)
	}
	return cf, nil
}

// TierAddrs returns the API addresses a workload of tier writes to: the
// gates for the global tier, the managers of region for the regional one.
func TierAddrs(cf api.ClusterFile, tier, region string) ([]string, error) {
	role := roleGate
	if tier == TierRegional {
		role = roleManager
	}
	var addrs []string
	for _, n := range cf.Nodes {
		if n.Role == role && (role == roleGate || n.Region == region) && n.APIAddr != "" {
			addrs = append(addrs, n.APIAddr)
		}
	}
	if len(addrs) == 0 {
		if role == roleManager {
			return nil, fmt.Errorf("cluster file lists no manager of region %q", region)
		}
		return nil, fmt.Errorf("cluster file lists no gate")
	}
	return addrs, nil
}
