package api

import (
	"context"
	"net/http"
)

// The cluster-wide maintenance mode (issue 18 §2): kept in the global
// ledger, so the gates serve it (a manager forwards to a gate of its
// region); the global leader converges every region to it.

// PathClusterMaintenance is GET (the cluster's mode and every region's)
// and POST (switch the cluster's mode; scope maintenance:write).
const PathClusterMaintenance = "/v1/maintenance/cluster"

// ClusterMaintenanceRequest is the body of POST /v1/maintenance/cluster.
type ClusterMaintenanceRequest struct {
	On bool `json:"on"`
	// Drain (only with on): every region also takes its running
	// workflows back from their workers.
	Drain bool `json:"drain,omitempty"`
	GovernanceChange
}

// ClusterMaintenanceStatus is GET /v1/maintenance/cluster: the cluster's
// mode as the global ledger holds it, and each region's status as a node
// of that region answered it (its own mode, its copy of the cluster's,
// what it does), sorted by region.
type ClusterMaintenanceStatus struct {
	Cluster MaintenanceStatus   `json:"cluster"`
	Regions []MaintenanceStatus `json:"regions"`
}

// ClusterMaintenance reads the cluster's maintenance mode and every
// region's.
func (c *Client) ClusterMaintenance(ctx context.Context, opts ReadOptions) (ClusterMaintenanceStatus, error) {
	var out ClusterMaintenanceStatus
	q, err := readQuery(opts)
	if err != nil {
		return out, err
	}
	_, err = c.do(ctx, c.read(PathClusterMaintenance, q, opts), &out)
	return out, err
}

// SetClusterMaintenance switches the cluster's maintenance mode.
func (c *Client) SetClusterMaintenance(ctx context.Context, req ClusterMaintenanceRequest) (MaintenanceResponse, error) {
	var out MaintenanceResponse
	_, err := c.do(ctx, request{method: http.MethodPost, path: PathClusterMaintenance, body: req}, &out)
	return out, err
}
