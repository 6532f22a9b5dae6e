package api

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// Bounds of a cluster file.
const (
	// MaxClusterFileBytes bounds cluster.json: a dev cluster has a handful
	// of nodes of a few hundred bytes each.
	MaxClusterFileBytes = 1 << 20
	// MaxClusterNodes bounds its nodes.
	MaxClusterNodes = 256
)

// roleGate names a gate in ClusterNode.Role.
const roleGate = "gate"

// LoadClusterFile reads cluster.json, as `strata dev` writes it.
func LoadClusterFile(path string) (*ClusterFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cluster file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxClusterFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("cluster file %s: %w", path, err)
	}
	cf, err := DecodeClusterFile(b)
	if err != nil {
		return nil, fmt.Errorf("cluster file %s: %w", path, err)
	}
	return cf, nil
}

// DecodeClusterFile parses and checks the bytes of a cluster file: at most
// MaxClusterFileBytes, one JSON object, at least one node, every node with
// an id and an API address. Unknown fields are accepted, so an older CLI
// reads the file of a newer `strata dev`.
func DecodeClusterFile(b []byte) (*ClusterFile, error) {
	if len(b) > MaxClusterFileBytes {
		return nil, fmt.Errorf("over the limit of %d bytes", MaxClusterFileBytes)
	}
	var cf ClusterFile
	if err := json.Unmarshal(b, &cf); err != nil {
		return nil, err
	}
	switch n := len(cf.Nodes); {
	case n == 0:
		return nil, fmt.Errorf("no nodes")
	case n > MaxClusterNodes:
		return nil, fmt.Errorf("%d nodes, over the limit of %d", n, MaxClusterNodes)
	}
	for i, n := range cf.Nodes {
		if n.NodeID == "" || strings.TrimSpace(n.APIAddr) == "" {
			return nil, fmt.Errorf("nodes[%d]: node_id and api_addr are required", i)
		}
	}
	return &cf, nil
}

// APIAddrs returns the nodes' API addresses, gates first (they serve every
// job call without forwarding), each group in file order.
func (cf *ClusterFile) APIAddrs() []string {
	addrs := make([]string, 0, len(cf.Nodes))
	for _, gates := range []bool{true, false} {
		for _, n := range cf.Nodes {
			if (n.Role == roleGate) == gates {
				addrs = append(addrs, n.APIAddr)
			}
		}
	}
	return addrs
}
