package api

import (
	"context"
	"net/http"
	"net/url"
)

// Governance (issue 18): quotas, throttles, replay. The types are the
// API's JSON; the ledger keeps policies as governance records.

// QuotaPolicy is one tenant quota as the API shows it: its id
// ("tenant" or "tenant:job_type"), its limits, and who set it.
type QuotaPolicy struct {
	ID         string `json:"id"`
	Tenant     string `json:"tenant"`
	JobType    string `json:"job_type,omitempty"`
	MaxActive  uint32 `json:"max_active,omitempty"`
	MaxPerHour uint32 `json:"max_per_hour,omitempty"`
	Burst      uint32 `json:"burst,omitempty"`
	Weight     uint32 `json:"weight,omitempty"`
	Reserved   uint32 `json:"reserved,omitempty"`
	Reason     string `json:"reason,omitempty"`
	Ticket     string `json:"ticket,omitempty"`
	Requestor  string `json:"requestor,omitempty"`
	HLC        string `json:"hlc,omitempty"`
}

// FleetQuota is the fleet capacity and its allocation strategy (fixed,
// equal, proportional, reserved).
type FleetQuota struct {
	Capacity uint32 `json:"capacity"`
	Strategy string `json:"strategy"`
}

// QuotaList is the answer to GET /v1/quotas.
type QuotaList struct {
	Policies []QuotaPolicy `json:"policies"`
	Fleet    *FleetQuota   `json:"fleet,omitempty"`
}

// PutQuotaPolicyRequest is the body of PUT /v1/quotas/policies/{id};
// reason and ticket are required (the change is audited).
type PutQuotaPolicyRequest struct {
	Tenant     string `json:"tenant"`
	JobType    string `json:"job_type,omitempty"`
	MaxActive  uint32 `json:"max_active,omitempty"`
	MaxPerHour uint32 `json:"max_per_hour,omitempty"`
	Burst      uint32 `json:"burst,omitempty"`
	Weight     uint32 `json:"weight,omitempty"`
	Reserved   uint32 `json:"reserved,omitempty"`
	Reason     string `json:"reason"`
	Ticket     string `json:"ticket"`
}

// PutFleetQuotaRequest is the body of PUT /v1/quotas/fleet.
type PutFleetQuotaRequest struct {
	Capacity uint32 `json:"capacity"`
	Strategy string `json:"strategy"`
	Reason   string `json:"reason"`
	Ticket   string `json:"ticket"`
}

// AuditRequest is the body of a governance delete: why, under which
// ticket.
type AuditRequest struct {
	Reason string `json:"reason"`
	Ticket string `json:"ticket"`
}

// GovernanceResponse is the answer to a governance change.
type GovernanceResponse struct {
	ID string `json:"id"`
	WriteResponse
}

// QuotaUsage is one limit of a tenant's status: used, allowed, pending.
type QuotaUsage struct {
	JobType string `json:"job_type,omitempty"`
	// Allowed is the effective max_active (the policy's, lowered to the
	// tenant's fleet share); 0 when none applies.
	Allowed    int64  `json:"allowed"`
	Used       int    `json:"used"`
	Pending    int    `json:"pending"`
	MaxPerHour uint32 `json:"max_per_hour,omitempty"`
}

// QuotaStatus is the answer to GET /v1/quotas/status?tenant=.
type QuotaStatus struct {
	Tenant string       `json:"tenant"`
	Limits []QuotaUsage `json:"limits"`
	Paused bool         `json:"paused,omitempty"`
}

// ThrottleRequest is the body of POST /v1/throttles: pause or resume a
// tenant, a job type, or a tenant's job type.
type ThrottleRequest struct {
	Action  string `json:"action"` // "pause" or "resume"
	Tenant  string `json:"tenant,omitempty"`
	JobType string `json:"job_type,omitempty"`
	Reason  string `json:"reason"`
	Ticket  string `json:"ticket"`
}

// Throttle is one pause in force.
type Throttle struct {
	Tenant    string `json:"tenant,omitempty"`
	JobType   string `json:"job_type,omitempty"`
	Paused    bool   `json:"paused"`
	Reason    string `json:"reason,omitempty"`
	Ticket    string `json:"ticket,omitempty"`
	Requestor string `json:"requestor,omitempty"`
	HLC       string `json:"hlc,omitempty"`
}

// ThrottleList is the answer to GET /v1/throttles.
type ThrottleList struct {
	Throttles []Throttle `json:"throttles"`
}

// ReplayRequest is the optional body of POST /v1/jobs/{id}/replay.
type ReplayRequest struct {
	Reason string `json:"reason,omitempty"`
}

// ReplayResponse is the answer to a replay: the new job, linked to the
// original.
type ReplayResponse struct {
	JobID    string `json:"job_id"`
	ReplayOf string `json:"replay_of"`
	WriteResponse
}

// Quotas lists the quota policies (GET /v1/quotas).
func (c *Client) Quotas(ctx context.Context) (*QuotaList, ResponseMeta, error) {
	var out QuotaList
	meta, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/quotas", retrySafe: true}, &out)
	return result(&out, meta, err)
}

// QuotaStatus reads a tenant's usage (GET /v1/quotas/status?tenant=).
func (c *Client) QuotaStatus(ctx context.Context, tenant string) (*QuotaStatus, ResponseMeta, error) {
	var out QuotaStatus
	meta, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/quotas/status",
		query: url.Values{"tenant": {tenant}}, retrySafe: true}, &out)
	return result(&out, meta, err)
}

// PutQuotaPolicy sets a policy (PUT /v1/quotas/policies/{id}).
func (c *Client) PutQuotaPolicy(ctx context.Context, id string, req PutQuotaPolicyRequest) (*GovernanceResponse, ResponseMeta, error) {
	if err := checkID("policy id", id); err != nil {
		return nil, ResponseMeta{}, err
	}
	var out GovernanceResponse
	meta, err := c.do(ctx, request{method: http.MethodPut, path: "/v1/quotas/policies/" + url.PathEscape(id), body: req, retrySafe: true}, &out)
	return result(&out, meta, err)
}

// DeleteQuotaPolicy removes a policy (DELETE /v1/quotas/policies/{id}).
func (c *Client) DeleteQuotaPolicy(ctx context.Context, id string, req AuditRequest) (*GovernanceResponse, ResponseMeta, error) {
	if err := checkID("policy id", id); err != nil {
		return nil, ResponseMeta{}, err
	}
	var out GovernanceResponse
	meta, err := c.do(ctx, request{method: http.MethodDelete, path: "/v1/quotas/policies/" + url.PathEscape(id), body: req}, &out)
	return result(&out, meta, err)
}

// PutFleetQuota sets the fleet capacity (PUT /v1/quotas/fleet).
func (c *Client) PutFleetQuota(ctx context.Context, req PutFleetQuotaRequest) (*GovernanceResponse, ResponseMeta, error) {
	var out GovernanceResponse
	meta, err := c.do(ctx, request{method: http.MethodPut, path: "/v1/quotas/fleet", body: req, retrySafe: true}, &out)
	return result(&out, meta, err)
}

// SetThrottle pauses or resumes (POST /v1/throttles).
func (c *Client) SetThrottle(ctx context.Context, req ThrottleRequest) (*GovernanceResponse, ResponseMeta, error) {
	var out GovernanceResponse
	meta, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/throttles", body: req, retrySafe: true}, &out)
	return result(&out, meta, err)
}

// Throttles lists the pauses in force (GET /v1/throttles).
func (c *Client) Throttles(ctx context.Context) (*ThrottleList, ResponseMeta, error) {
	var out ThrottleList
	meta, err := c.do(ctx, request{method: http.MethodGet, path: "/v1/throttles", retrySafe: true}, &out)
	return result(&out, meta, err)
}

// ReplayJob replays a job (POST /v1/jobs/{id}/replay).
func (c *Client) ReplayJob(ctx context.Context, id string, req ReplayRequest) (*ReplayResponse, ResponseMeta, error) {
	if err := checkID("job id", id); err != nil {
		return nil, ResponseMeta{}, err
	}
	var out ReplayResponse
	meta, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/jobs/" + url.PathEscape(id) + "/replay", body: req}, &out)
	return result(&out, meta, err)
}
