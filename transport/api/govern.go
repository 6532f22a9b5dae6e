package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/strata-ledger/strata/hlc"
)

// The region's governance endpoints (issue 18 §2): circuit breakers per
// (tenant, job type) and maintenance mode. Both live in a region's
// ledger, so a manager (or a gate, which forwards to a manager of its
// region) answers for its own region only.
const (
	// PathBreakers is GET: the region's breakers (a tenant token sees its
	// tenant's). POST PathBreakers/{tenant}/{job_type}/open or /close
	// forces one (scope breaker:write).
	PathBreakers = "/v1/breakers"
	// PathMaintenance is GET (the region's maintenance mode) and POST
	// (turn it on or off; scope maintenance:write).
	PathMaintenance = "/v1/maintenance"
)

// Breaker actions of POST /v1/breakers/{tenant}/{job_type}/{action}.
const (
	BreakerOpen  = "open"
	BreakerClose = "close"
)

// Breaker is one circuit breaker of a region.
type Breaker struct {
	Tenant  string `json:"tenant"`
	JobType string `json:"job_type"`
	// State is closed, open or half_open.
	State string `json:"state"`
	// Since is when State began (Unix ms).
	Since int64 `json:"since"`
	// Forced: an operator opened it; it stays open until one closes it.
	Forced bool `json:"forced,omitempty"`
	// Why the breaker moved (the rule's reason, or the operator's).
	Why string `json:"why,omitempty"`
	// The change that set it: who, with which ticket, at which HLC.
	Requestor string        `json:"requestor,omitempty"`
	Ticket    string        `json:"ticket,omitempty"`
	HLC       hlc.Timestamp `json:"hlc"`
}

// BreakerList is GET /v1/breakers: every breaker of the region that ever
// left closed (a breaker without a record is closed).
type BreakerList struct {
	Region   string    `json:"region"`
	Breakers []Breaker `json:"breakers"`
}

// GovernanceChange is the body of an operator's breaker or maintenance
// change: why, and under which ticket (both required: the change is
// audited).
type GovernanceChange struct {
	Reason string `json:"reason"`
	Ticket string `json:"ticket"`
}

// BreakerChangeResponse answers a forced breaker change.
type BreakerChangeResponse struct {
	Breaker Breaker `json:"breaker"`
	WriteResponse
}

// MaintenanceRequest is the body of POST /v1/maintenance.
type MaintenanceRequest struct {
	// Region must be the region of the node asked (the CLI's --region):
	// a guard against turning off the wrong region.
	Region string `json:"region"`
	On     bool   `json:"on"`
	// Drain (only with on): also take running workflows back from their
	// workers (they wait DISPATCHED, their recorded progress kept).
	Drain bool `json:"drain,omitempty"`
	GovernanceChange
}

// Maintenance scopes (MaintenanceStatus.Scope).
const (
	MaintenanceScopeRegion  = "region"
	MaintenanceScopeCluster = "cluster"
)

// MaintenanceStatus is a maintenance mode: a region's (GET
// /v1/maintenance, and in GET /v1/cluster/status of a manager) or the
// cluster's (GET /v1/maintenance/cluster, and in GET /v1/cluster/status
// of a gate). The fields from On to HLC are the record's: the mode set
// by its scope's operators and the change that set it.
type MaintenanceStatus struct {
	// Scope is region or cluster.
	Scope     string         `json:"scope,omitempty"`
	Region    string         `json:"region,omitempty"`
	On        bool           `json:"on"`
	Drain     bool           `json:"drain,omitempty"`
	Since     int64          `json:"since,omitempty"` // Unix ms of the last change
	Reason    string         `json:"reason,omitempty"`
	Ticket    string         `json:"ticket,omitempty"`
	Requestor string         `json:"requestor,omitempty"`
	HLC       *hlc.Timestamp `json:"hlc,omitempty"`
	// Cluster (a region's status) is the cluster-wide mode as the region
	// holds it: the global leader's copy, absent until one arrived.
	Cluster *MaintenanceStatus `json:"cluster,omitempty"`
	// Effective (a region's status) is what the region does: its own
	// mode or the cluster's, whichever is on.
	Effective *MaintenanceEffect `json:"effective,omitempty"`
	// Error (GET /v1/maintenance/cluster) says why a region could not be
	// asked; the other fields are then empty.
	Error string `json:"error,omitempty"`
}

// MaintenanceEffect is a region's effective maintenance mode.
type MaintenanceEffect struct {
	// On: the region grants no new lease.
	On bool `json:"on"`
	// Drain: it also takes running workflows back from their workers.
	Drain bool `json:"drain"`
	// By names the modes that put it there: region, cluster, or both.
	By []string `json:"by"`
}

// MaintenanceResponse answers POST /v1/maintenance.
type MaintenanceResponse struct {
	Maintenance MaintenanceStatus `json:"maintenance"`
	WriteResponse
}

// Breakers lists the region's breakers.
func (c *Client) Breakers(ctx context.Context, opts ReadOptions) (BreakerList, error) {
	var out BreakerList
	q, err := readQuery(opts)
	if err != nil {
		return out, err
	}
	_, err = c.do(ctx, c.read(PathBreakers, q, opts), &out)
	return out, err
}

// ForceBreaker opens or closes (action) the breaker of (tenant, jobType).
func (c *Client) ForceBreaker(ctx context.Context, tenant, jobType, action string, ch GovernanceChange) (BreakerChangeResponse, error) {
	var out BreakerChangeResponse
	p := PathBreakers + "/" + url.PathEscape(tenant) + "/" + url.PathEscape(jobType) + "/" + url.PathEscape(action)
	_, err := c.do(ctx, request{method: http.MethodPost, path: p, body: ch}, &out)
	return out, err
}

// Maintenance reads the region's maintenance mode.
func (c *Client) Maintenance(ctx context.Context, opts ReadOptions) (MaintenanceStatus, error) {
	var out MaintenanceStatus
	q, err := readQuery(opts)
	if err != nil {
		return out, err
	}
	_, err = c.do(ctx, c.read(PathMaintenance, q, opts), &out)
	return out, err
}

// SetMaintenance turns the region's maintenance mode on or off.
func (c *Client) SetMaintenance(ctx context.Context, req MaintenanceRequest) (MaintenanceResponse, error) {
	var out MaintenanceResponse
	_, err := c.do(ctx, request{method: http.MethodPost, path: PathMaintenance, body: req}, &out)
	return out, err
}
