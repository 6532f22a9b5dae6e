package httpapi

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/quota"
	"github.com/strata-ledger/strata/cluster/throttle"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Governance routes of the global ledger (issue 18): quotas and
// throttles. Every change is a governance event (PolicySet,
// PolicyDeleted) committed through Raft at GLOBAL, with the caller's
// reason and ticket and the token as requestor, linked into the tenant's
// audit chain (fleet-wide changes into the empty tenant's). A bad
// request is a 400 that proposes nothing.

// auditOf checks reason and ticket: both required, free text.
func auditOf(reason, ticket string) error {
	switch {
	case strings.TrimSpace(reason) == "":
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: "reason is required: a governance change is audited", Details: map[string]any{"field": "reason"}}
	case strings.TrimSpace(ticket) == "":
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: "ticket is required: a governance change is audited", Details: map[string]any{"field": "ticket"}}
	case len(reason) > fsm.MaxTextBytes || len(ticket) > fsm.MaxTextBytes:
		return &httpx.APIError{Status: http.StatusRequestEntityTooLarge, Code: httpx.CodeTooLarge,
			Message: "reason and ticket are at most 1 KiB each", Details: map[string]any{"limit": fsm.MaxTextBytes}}
	}
	return nil
}

// commitGovernance commits one governance event at the global tier and
// answers it: 404 for a delete of nothing, 400 for what the ledger
// refuses.
func (sv *Server) commitGovernance(ctx context.Context, w http.ResponseWriter, id, tenant string, body fsm.Body) {
	t := fsm.TypePolicySet
	notFound := &httpx.APIError{Status: http.StatusNotFound, Code: httpx.CodeNotFound, Message: "no such policy: " + id}
	if d, ok := body.(*fsm.PolicyDeleted); ok {
		t = fsm.TypePolicyDeleted
		// A delete of nothing is a 404 that proposes nothing (this
		// node's state; the ledger refuses one that raced, below).
		if p, err := sv.cfg.Ledger.Policy(d.Kind, d.Key); err != nil || p == nil || p.Tenant != tenant {
			httpx.WriteError(w, cmp.Or(err, error(notFound)))
			return
		}
	}
	res, ts, err := commitOwn(ctx, &sv.cfg, sv.cfg.Tier, fsm.Event{Type: t, Tenant: tenant, Body: body})
	if err == nil && len(res.Results) == 1 && res.Results[0].Err != nil &&
		(errors.Is(res.Results[0].Err, fsm.ErrUnknownPolicy) || strings.Contains(res.Results[0].Err.Error(), fsm.ErrUnknownPolicy.Error())) {
		err = notFound // the result may come from the leader as text
	}
	if err == nil {
		err = resultError(res)
	}
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, api.GovernanceResponse{ID: id, WriteResponse: sv.writeResponse(w, res, ts)})
}

// requireGovernor: the scope for every tenant (a tenant-bound token
// cannot change its own quota or throttle).
func requireGovernor(p auth.Principal, scope auth.Scope) error {
	if !p.Allows(scope, auth.AllTenants) {
		return forbidden(p, scope, "")
	}
	return nil
}

func (sv *Server) handlePutQuota(w http.ResponseWriter, r *http.Request, c *call) {
	if err := requireGovernor(c.p, auth.ScopeQuotaWrite); err != nil {
		httpx.WriteError(w, err)
		return
	}
	var req api.PutQuotaPolicyRequest
	if err := httpx.DecodeBytes(c.body, &req); err != nil {
		httpx.WriteError(w, err)
		return
	}
	p := quota.Policy{Tenant: req.Tenant, JobType: req.JobType, MaxActive: req.MaxActive, MaxPerHour: req.MaxPerHour,
		Burst: req.Burst, Weight: req.Weight, Reserved: req.Reserved}
	id := r.PathValue("id")
	if err := p.Validate(); err != nil {
		httpx.WriteError(w, httpx.BadRequest("%v", err))
		return
	}
	if id != p.Key() {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: "the policy of tenant " + p.Tenant + " (job type " + orDash(p.JobType) + ") has id " + p.Key() + ", not " + id,
			Details: map[string]any{"field": "id", "want": p.Key()}})
		return
	}
	if err := auditOf(req.Reason, req.Ticket); err != nil {
		httpx.WriteError(w, err)
		return
	}
	v, err := p.Encode()
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	sv.commitGovernance(r.Context(), w, id, p.Tenant, &fsm.PolicySet{Kind: quota.Kind, Key: id, Value: v,
		Reason: req.Reason, Ticket: req.Ticket, Requestor: c.p.Name})
}

func (sv *Server) handleDeleteQuota(w http.ResponseWriter, r *http.Request, c *call) {
	if err := requireGovernor(c.p, auth.ScopeQuotaWrite); err != nil {
		httpx.WriteError(w, err)
		return
	}
	var req api.AuditRequest
	if err := httpx.DecodeBytes(c.body, &req); err != nil {
		httpx.WriteError(w, err)
		return
	}
	if err := auditOf(req.Reason, req.Ticket); err != nil {
		httpx.WriteError(w, err)
		return
	}
	id := r.PathValue("id")
	tenant, _, _ := strings.Cut(id, ":")
	if !fsm.IsPolicyKey(id) || !fsm.IsName(tenant) {
		httpx.WriteError(w, httpx.BadRequest("policy id %q is not tenant or tenant:job_type", id))
		return
	}
	sv.commitGovernance(r.Context(), w, id, tenant, &fsm.PolicyDeleted{Kind: quota.Kind, Key: id,
		Reason: req.Reason, Ticket: req.Ticket, Requestor: c.p.Name})
}

func (sv *Server) handlePutFleetQuota(w http.ResponseWriter, r *http.Request, c *call) {
	if err := requireGovernor(c.p, auth.ScopeQuotaWrite); err != nil {
		httpx.WriteError(w, err)
		return
	}
	var req api.PutFleetQuotaRequest
	if err := httpx.DecodeBytes(c.body, &req); err != nil {
		httpx.WriteError(w, err)
		return
	}
	f := quota.FleetPolicy{Capacity: req.Capacity, Strategy: quota.Strategy(req.Strategy)}
	if err := f.Validate(); err != nil {
		httpx.WriteError(w, httpx.BadRequest("%v", err))
		return
	}
	if err := auditOf(req.Reason, req.Ticket); err != nil {
		httpx.WriteError(w, err)
		return
	}
	v, err := f.Encode()
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	sv.commitGovernance(r.Context(), w, quota.FleetKey, "", &fsm.PolicySet{Kind: quota.FleetKind, Key: quota.FleetKey, Value: v,
		Reason: req.Reason, Ticket: req.Ticket, Requestor: c.p.Name})
}

// handleListQuotas lists the policies the token sees: an operator's
// every tenant's, a tenant token its own (and the fleet policy).
func (sv *Server) handleListQuotas(w http.ResponseWriter, _ *http.Request, c *call) {
	out := api.QuotaList{Policies: []api.QuotaPolicy{}}
	sv.serveView(w, &out, func(tx fsm.ReadTx) error {
		err := tx.Policies(quota.Kind, func(r *fsm.Policy) error {
			if !c.p.Allows(auth.ScopeJobsRead, r.Tenant) {
				return nil
			}
			var p quota.Policy
			if err := json.Unmarshal(r.Value, &p); err != nil {
				return err
			}
			out.Policies = append(out.Policies, api.QuotaPolicy{ID: r.Key, Tenant: p.Tenant, JobType: p.JobType,
				MaxActive: p.MaxActive, MaxPerHour: p.MaxPerHour, Burst: p.Burst, Weight: p.Weight, Reserved: p.Reserved,
				Reason: r.Reason, Ticket: r.Ticket, Requestor: r.Requestor, HLC: r.HLC.String()})
			return nil
		})
		if err != nil {
			return err
		}
		f, err := quota.ReadFleet(tx)
		if f != nil {
			out.Fleet = &api.FleetQuota{Capacity: f.Capacity, Strategy: string(f.Strategy)}
		}
		return err
	})
}

// handleQuotaStatus answers a tenant's used / allowed / pending, for the
// tenant and each job type with a policy.
func (sv *Server) handleQuotaStatus(w http.ResponseWriter, r *http.Request, c *call) {
	tenant := r.URL.Query().Get("tenant")
	if tenant == "" && c.p.Tenant != auth.AllTenants {
		tenant = c.p.Tenant
	}
	if !fsm.IsName(tenant) {
		httpx.WriteError(w, httpx.BadRequest("tenant=%q: a tenant name is required", tenant))
		return
	}
	if !c.p.Allows(auth.ScopeJobsRead, tenant) {
		httpx.WriteError(w, forbidden(c.p, auth.ScopeJobsRead, tenant))
		return
	}
	out := api.QuotaStatus{Tenant: tenant, Limits: []api.QuotaUsage{}}
	sv.serveView(w, &out, func(tx fsm.ReadTx) error {
		types := []string{""}
		err := tx.Policies(quota.Kind, func(r *fsm.Policy) error {
			if t, jt, ok := strings.Cut(r.Key, ":"); ok && t == tenant {
				types = append(types, jt)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, jt := range types {
			allowed, _, err := quota.Allowed(tx, tenant, jt)
			if err != nil {
				return err
			}
			u, err := quota.Count(tx, tenant, jt, 0)
			if err != nil {
				return err
			}
			qu := api.QuotaUsage{JobType: jt, Allowed: allowed, Used: u.Active, Pending: u.Queued}
			if p, err := quota.ReadPolicy(tx, tenant, jt); err != nil {
				return err
			} else if p != nil {
				qu.MaxPerHour = p.MaxPerHour
			}
			out.Limits = append(out.Limits, qu)
		}
		out.Paused, err = throttle.Paused(tx, tenant, "")
		return err
	})
}

// handleThrottle pauses or resumes a tenant, a job type or a tenant's
// job type. Resuming what is not paused is a 404.
func (sv *Server) handleThrottle(w http.ResponseWriter, r *http.Request, c *call) {
	if err := requireGovernor(c.p, auth.ScopeThrottleWrite); err != nil {
		httpx.WriteError(w, err)
		return
	}
	var req api.ThrottleRequest
	if err := httpx.DecodeBytes(c.body, &req); err != nil {
		httpx.WriteError(w, err)
		return
	}
	t := throttle.Target{Tenant: req.Tenant, JobType: req.JobType}
	if err := t.Validate(); err != nil {
		httpx.WriteError(w, httpx.BadRequest("%v", err))
		return
	}
	if err := auditOf(req.Reason, req.Ticket); err != nil {
		httpx.WriteError(w, err)
		return
	}
	switch req.Action {
	case "pause":
		v, err := throttle.Encode(t)
		if err != nil {
			httpx.WriteError(w, err)
			return
		}
		sv.commitGovernance(r.Context(), w, t.Key(), t.Tenant, &fsm.PolicySet{Kind: throttle.Kind, Key: t.Key(), Value: v,
			Reason: req.Reason, Ticket: req.Ticket, Requestor: c.p.Name})
	case "resume":
		sv.commitGovernance(r.Context(), w, t.Key(), t.Tenant, &fsm.PolicyDeleted{Kind: throttle.Kind, Key: t.Key(),
			Reason: req.Reason, Ticket: req.Ticket, Requestor: c.p.Name})
	default:
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: "action must be \"pause\" or \"resume\"", Details: map[string]any{"field": "action"}})
	}
}

func (sv *Server) handleListThrottles(w http.ResponseWriter, _ *http.Request, c *call) {
	var out api.ThrottleList
	err := sv.cfg.Ledger.View(func(tx fsm.ReadTx) error {
		ts, err := throttle.List(tx, func(tenant string) bool { return c.p.Allows(auth.ScopeJobsRead, tenant) })
		for _, t := range ts {
			out.Throttles = append(out.Throttles, api.Throttle{Tenant: t.Tenant, JobType: t.JobType, Paused: t.Paused,
				Reason: t.Reason, Ticket: t.Ticket, Requestor: t.Requestor, HLC: t.HLC})
		}
		return err
	})
	if err != nil {
		httpx.WriteError(w, readError(err))
		return
	}
	if out.Throttles == nil {
		out.Throttles = []api.Throttle{}
	}
	sv.setReadHeaders(w)
	httpx.WriteJSON(w, http.StatusOK, out)
}

// serveView answers 200 with out once fill has filled it from one read
// view of the ledger, or the read's error.
func (sv *Server) serveView(w http.ResponseWriter, out any, fill func(fsm.ReadTx) error) {
	if err := sv.cfg.Ledger.View(fill); err != nil {
		httpx.WriteError(w, readError(err))
		return
	}
	sv.setReadHeaders(w)
	httpx.WriteJSON(w, http.StatusOK, out)
}
