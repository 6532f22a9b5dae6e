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
	// MaxClusterNodes bounds its nodes, and separately its workers.
	MaxClusterNodes = 256
)

// Roles of ClusterNode.Role.
const (
	roleGate    = "gate"
	roleManager = "manager"
	// ClusterRoleWorker is the role of a ClusterFile's workers.
	ClusterRoleWorker = "worker"
)

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
// an id and an API address, at most MaxClusterNodes workers, each with an
// id and a region. Unknown fields are accepted, so an older CLI reads the
// file of a newer `strata dev`; a file without workers (older) is valid.
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
	if n := len(cf.Workers); n > MaxClusterNodes {
		return nil, fmt.Errorf("%d workers, over the limit of %d", n, MaxClusterNodes)
	}
	for i, w := range cf.Workers {
		if w.NodeID == "" || w.Region == "" {
			return nil, fmt.Errorf("workers[%d]: node_id and region are required", i)
		}
	}
	return &cf, nil
}

// ManagerAddrs returns the API addresses of region's managers, in file
// order: where a worker of that region registers.
func (cf *ClusterFile) ManagerAddrs(region string) []string {
	var addrs []string
	for _, n := range cf.Nodes {
		if n.Role == roleManager && n.Region == region {
			addrs = append(addrs, n.APIAddr)
		}
	}
	return addrs
}

// GateAddrs returns the API addresses of the gates, in file order.
func (cf *ClusterFile) GateAddrs() []string {
	var addrs []string
	for _, n := range cf.Nodes {
		if n.Role == roleGate {
			addrs = append(addrs, n.APIAddr)
		}
	}
	return addrs
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
