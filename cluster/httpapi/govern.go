package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
)

// The region's governance (issue 18 §2): breakers and maintenance mode,
// records of the regional ledger's governance state (cluster/govern's
// kinds), read here and changed by PolicySet events proposed through the
// region's Raft group. The regional leader's reconciler acts on them
// (cluster/lifecycle). A gate forwards these calls to a manager of its
// region; no node answers for another region. The cluster-wide
// maintenance mode is the gates' (maintenance_cluster.go).

// handleListBreakers is GET /v1/breakers: the region's breakers the
// caller may see (a tenant token: its tenant's).
func (sv *Server) handleListBreakers(w http.ResponseWriter, _ *http.Request, c *call) {
	out := api.BreakerList{Region: sv.cfg.Region, Breakers: []api.Breaker{}}
	err := sv.cfg.Store.View(func(tx fsm.ReadTx) error {
		return tx.Policies(govern.KindBreaker, func(p *fsm.Policy) error {
			if !c.p.SeesTenant(p.Tenant) {
				return nil
			}
			if b, ok := breakerOf(p); ok {
				out.Breakers = append(out.Breakers, b)
			}
			return nil
		})
	})
	if err != nil {
		httpx.WriteError(w, readError(err))
		return
	}
	sv.setReadHeaders(w)
	httpx.WriteJSON(w, http.StatusOK, out)
}

// breakerOf is a breaker record in the API's form; false if the record is
// not a breaker's (the rules ignore it too).
func breakerOf(p *fsm.Policy) (api.Breaker, bool) {
	tenant, jobType, ok := govern.SplitBreakerKey(p.Key)
	if !ok {
		return api.Breaker{}, false
	}
	r, _, err := govern.DecodeBreaker(p.Value)
	if err != nil {
		return api.Breaker{}, false
	}
	return api.Breaker{Tenant: tenant, JobType: jobType, State: r.State, Since: r.SinceMs, Forced: r.Forced, Why: r.Why,
		Requestor: p.Requestor, Ticket: p.Ticket, HLC: p.HLC}, true
}

// handleForceBreaker is POST /v1/breakers/{tenant}/{job_type}/{action}:
// an operator opens (held open until closed) or closes a breaker, with a
// reason and a ticket.
func (sv *Server) handleForceBreaker(w http.ResponseWriter, r *http.Request, c *call) {
	tenant, jobType, action := r.PathValue("tenant"), r.PathValue("job_type"), r.PathValue("action")
	switch {
	case !fsm.IsName(tenant):
		httpx.WriteError(w, httpx.BadRequest("tenant %q: want a name of 1 to %d [A-Za-z0-9._-]", clipText(tenant), fsm.MaxNameBytes))
		return
	case !fsm.IsName(jobType):
		httpx.WriteError(w, httpx.BadRequest("job type %q: want a name of 1 to %d [A-Za-z0-9._-]", clipText(jobType), fsm.MaxNameBytes))
		return
	case action != api.BreakerOpen && action != api.BreakerClose:
		httpx.WriteError(w, httpx.BadRequest("action %q: want %s or %s", clipText(action), api.BreakerOpen, api.BreakerClose))
		return
	case !c.p.Allows(auth.ScopeBreakerWrite, tenant):
		httpx.WriteError(w, forbidden(c.p, auth.ScopeBreakerWrite, tenant))
		return
	}
	ch, ok := decodeChange(w, c.body)
	if !ok {
		return
	}
	level, err := sv.writeLevel(r)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	key := govern.BreakerKey(tenant, jobType)
	var b govern.Breaker
	err = sv.cfg.Store.View(func(tx fsm.ReadTx) error {
		p, err := tx.Policy(govern.KindBreaker, key)
		if err != nil || p == nil {
			return err
		}
		if p.Tenant != tenant { // cannot happen: the key names the tenant
			return fmt.Errorf("breaker %s held by another tenant: %w", key, fsm.ErrTenantMismatch)
		}
		if rec, state, err := govern.DecodeBreaker(p.Value); err == nil {
			b.Restore(state, rec.SinceMs, rec.Forced)
		}
		return nil
	})
	if err != nil {
		httpx.WriteError(w, readError(err))
		return
	}
	verb := "opened"
	if action == api.BreakerClose {
		verb = "closed"
	}
	why := fmt.Sprintf("%s by %s: %s", verb, c.p.Name, ch.Reason)
	b.Force(action == api.BreakerOpen, time.Now().UnixMilli(), why)
	value, err := govern.EncodeBreaker(govern.BreakerRecord{State: b.State.String(), SinceMs: b.SinceMs, Forced: b.Forced, Why: why})
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	e := fsm.Event{Type: fsm.TypePolicySet, Tenant: tenant, Body: &fsm.PolicySet{Kind: govern.KindBreaker, Key: key, Value: value,
		Reason: ch.Reason, Ticket: ch.Ticket, Requestor: c.p.Name}}
	res, ts, err := commitOwn(r.Context(), &sv.cfg, level, e)
	if err == nil {
		err = resultError(res)
	}
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	out := api.BreakerChangeResponse{WriteResponse: sv.writeResponse(w, res, ts)}
	out.Breaker, _ = breakerOf(&fsm.Policy{Kind: govern.KindBreaker, Key: key, Tenant: tenant, Value: value, HLC: ts,
		Requestor: c.p.Name, Reason: ch.Reason, Ticket: ch.Ticket})
	httpx.WriteJSON(w, http.StatusOK, out)
}

// handleGetMaintenance is GET /v1/maintenance: the region's maintenance
// mode, its copy of the cluster's, and what the region does.
func (sv *Server) handleGetMaintenance(w http.ResponseWriter, _ *http.Request, _ *call) {
	st, err := sv.maintenance()
	if err != nil {
		httpx.WriteError(w, readError(err))
		return
	}
	sv.setReadHeaders(w)
	httpx.WriteJSON(w, http.StatusOK, st)
}

// maintenance reads the region's maintenance mode from this node's
// ledger: its own record, its copy of the cluster's, and both together
// (govern.EffectiveMaintenance).
func (sv *Server) maintenance() (api.MaintenanceStatus, error) {
	st := api.MaintenanceStatus{Scope: api.MaintenanceScopeRegion, Region: sv.cfg.Region}
	var own, cluster *govern.MaintenanceRecord
	err := sv.cfg.Store.View(func(tx fsm.ReadTx) error {
		var err error
		if own, err = readMaintenanceRecord(tx, sv.cfg.Region, &st); err != nil {
			return err
		}
		cl := api.MaintenanceStatus{Scope: api.MaintenanceScopeCluster}
		if cluster, err = readMaintenanceRecord(tx, govern.ClusterMaintenanceKey, &cl); err == nil && cl.HLC != nil {
			st.Cluster = &cl
		}
		return err
	})
	st.Effective = effectOf(govern.EffectiveMaintenance(own, cluster))
	return st, err
}

// readMaintenanceRecord reads the maintenance record under key into st's
// record fields; nil (st untouched) when there is none, or one the rules
// cannot read (they act on none).
func readMaintenanceRecord(tx fsm.ReadTx, key string, st *api.MaintenanceStatus) (*govern.MaintenanceRecord, error) {
	p, err := tx.Policy(govern.KindMaintenance, key)
	if err != nil || p == nil {
		return nil, err
	}
	r, err := govern.DecodeMaintenance(p.Value)
	if err != nil {
		return nil, nil
	}
	at := p.HLC
	st.On, st.Drain, st.Since, st.Reason, st.Ticket, st.Requestor, st.HLC = r.On, r.Drain, r.SinceMs, p.Reason, p.Ticket, p.Requestor, &at
	return &r, nil
}

func effectOf(m govern.MaintenanceMode) *api.MaintenanceEffect {
	by := m.Sources()
	if by == nil {
		by = []string{}
	}
	return &api.MaintenanceEffect{On: m.On, Drain: m.Drain, By: by}
}

// handleSetMaintenance is POST /v1/maintenance: turn the region's own
// maintenance mode on (draining or not) or off (operators, scope
// maintenance:write). The answer says what the region does then: the
// cluster's mode may keep it in maintenance.
func (sv *Server) handleSetMaintenance(w http.ResponseWriter, r *http.Request, c *call) {
	if !c.p.Allows(auth.ScopeMaintenanceWrite, auth.AllTenants) {
		httpx.WriteError(w, forbidden(c.p, auth.ScopeMaintenanceWrite, ""))
		return
	}
	var req api.MaintenanceRequest
	if err := httpx.DecodeBytes(c.body, &req); err != nil {
		httpx.WriteError(w, err)
		return
	}
	if req.Region != sv.cfg.Region {
		httpx.WriteError(w, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: fmt.Sprintf("region %q: this node serves region %q; ask a node of that region", clipText(req.Region), sv.cfg.Region),
			Details: map[string]any{"region": sv.cfg.Region}})
		return
	}
	rec := govern.MaintenanceRecord{On: req.On, Drain: req.Drain, SinceMs: time.Now().UnixMilli()}
	ts, res, ok := sv.commitMaintenance(w, r, c, sv.cfg.Region, rec, req.GovernanceChange)
	if !ok {
		return
	}
	out := api.MaintenanceResponse{WriteResponse: sv.writeResponse(w, res, ts)}
	out.Maintenance = api.MaintenanceStatus{Scope: api.MaintenanceScopeRegion, Region: sv.cfg.Region, On: req.On, Drain: req.Drain,
		Since: rec.SinceMs, Reason: req.Reason, Ticket: req.Ticket, Requestor: c.p.Name, HLC: &ts}
	if cur, err := sv.maintenance(); err == nil { // the cluster's copy as this node holds it
		var cluster *govern.MaintenanceRecord
		if cl := cur.Cluster; cl != nil {
			cluster = &govern.MaintenanceRecord{On: cl.On, Drain: cl.Drain}
		}
		out.Maintenance.Cluster, out.Maintenance.Effective = cur.Cluster, effectOf(govern.EffectiveMaintenance(&rec, cluster))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// checkMaintenanceChange refuses a drain that does not turn maintenance
// on, and a change without its reason and ticket.
func checkMaintenanceChange(on, drain bool, ch api.GovernanceChange) error {
	if drain && !on {
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: "drain needs on: a region drains only while it is in maintenance", Details: map[string]any{"field": "drain"}}
	}
	return checkChange(ch)
}

// commitMaintenance checks and commits rec as the maintenance record
// under key at the call's write level, audited with ch and the caller;
// false when it wrote the error.
func (sv *Server) commitMaintenance(w http.ResponseWriter, r *http.Request, c *call, key string,
	rec govern.MaintenanceRecord, ch api.GovernanceChange) (hlc.Timestamp, commit.SubmitResult, bool) {
	if err := checkMaintenanceChange(rec.On, rec.Drain, ch); err != nil {
		httpx.WriteError(w, err)
		return hlc.Timestamp{}, commit.SubmitResult{}, false
	}
	level, err := sv.writeLevel(r)
	if err != nil {
		httpx.WriteError(w, err)
		return hlc.Timestamp{}, commit.SubmitResult{}, false
	}
	value, err := govern.EncodeMaintenance(rec)
	if err != nil {
		httpx.WriteError(w, httpx.BadRequest("%v", err))
		return hlc.Timestamp{}, commit.SubmitResult{}, false
	}
	e := fsm.Event{Type: fsm.TypePolicySet, Body: &fsm.PolicySet{Kind: govern.KindMaintenance, Key: key, Value: value,
		Reason: ch.Reason, Ticket: ch.Ticket, Requestor: c.p.Name}}
	res, ts, err := commitOwn(r.Context(), &sv.cfg, level, e)
	if err == nil {
		err = resultError(res)
	}
	if err != nil {
		httpx.WriteError(w, err)
		return ts, res, false
	}
	return ts, res, true
}

// decodeChange reads and checks an operator change's body.
func decodeChange(w http.ResponseWriter, body []byte) (api.GovernanceChange, bool) {
	var ch api.GovernanceChange
	if err := httpx.DecodeBytes(body, &ch); err != nil {
		httpx.WriteError(w, err)
		return ch, false
	}
	if err := checkChange(ch); err != nil {
		httpx.WriteError(w, err)
		return ch, false
	}
	return ch, true
}

// checkChange requires a reason and a ticket within the ledger's text
// bound: an operator change is audited.
func checkChange(ch api.GovernanceChange) error {
	for _, f := range []struct{ name, v string }{{"reason", ch.Reason}, {"ticket", ch.Ticket}} {
		switch {
		case strings.TrimSpace(f.v) == "":
			return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
				Message: f.name + " is required: governance changes are audited", Details: map[string]any{"field": f.name}}
		case len(f.v) > fsm.MaxTextBytes:
			return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
				Message: fmt.Sprintf("%s: %d bytes, limit %d", f.name, len(f.v), fsm.MaxTextBytes), Details: map[string]any{"field": f.name}}
		}
	}
	return nil
}

// clipText shortens a bad value for an error message.
func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
