package httpapi

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// Who may write which events through /v1/events:batch (docs/SECURITY.md,
// "Who writes what"):
//
//   - A client token (any token without the operator scope) writes only
//     the client kinds: JobCreated (a submit) and JobCancellationRequested
//     (a cancel), of tenants it may write. Their origin is this node's:
//     the node, HLC, region and fence are stamped here and the client may
//     not set them; a JobCreated gets its job id from this gate, the
//     spec's limits are checked as a POST /v1/jobs does, and a cancel
//     takes its fence from the job. System events (acceptance, progress,
//     dispatch, leases, completion, decisions) come only from nodes, and
//     from workers through /v1/workers, fenced by their lease.
//   - Every JobCreated, whoever writes it, is held to the submit limits
//     (fsm.JobSpec.CheckSubmit).
//   - An operator token is trusted as a node is (it can add Raft voters):
//     it may write any kind but ForwardMark, with the origin it gives
//     (load tools, repair); an HLC it gives is merged into this node's
//     clock, refused beyond max_offset.

// clientKind reports whether t is an event kind a client token may write.
func clientKind(t fsm.EventType) bool {
	return t == fsm.TypeJobCreated || t == fsm.TypeJobCancellationRequested
}

// stampEvents checks scope and validity of every event and stamps what
// the node owns: one bad event fails the whole batch before anything is
// written.
func (sv *Server) stampEvents(p auth.Principal, events []fsm.Event) error {
	for i := range events {
		e := &events[i]
		var err error
		switch {
		case e.Type == fsm.TypeForwardMark:
			err = eventRefused(i, e, http.StatusBadRequest, "ForwardMark is recorded by the regional forwarder only")
		case e.Type.IsGovernance():
			err = eventRefused(i, e, http.StatusBadRequest, fmt.Sprintf("%s is a governance change: it goes through its route (quotas, throttles, ...), with a reason and a ticket", e.Type))
		case p.IsOperator():
			if err = sv.cfg.Stamper.Received(e); err != nil {
				err = httpx.BadRequest("events[%d].hlc: %v", i, err)
			}
		case !clientKind(e.Type):
			err = eventRefused(i, e, http.StatusForbidden, fmt.Sprintf("%s events are written by nodes, and by workers through /v1/workers; a client token writes JobCreated and JobCancellationRequested", e.Type))
		default:
			err = sv.stampClientEvent(p, i, e)
		}
		if err != nil {
			return err
		}
		if err := checkEvent(e); err != nil {
			ae := eventError(err).(*httpx.APIError)
			ae.Message = fmt.Sprintf("events[%d]: %s", i, ae.Message)
			return ae
		}
	}
	return nil
}

// checkEvent is Validate, and the submit limits for a JobCreated, whoever
// writes it.
func checkEvent(e *fsm.Event) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if b, ok := e.Body.(*fsm.JobCreated); ok {
		return b.Spec.CheckSubmit()
	}
	return nil
}

// stampClientEvent checks a client's submit or cancel and gives it this
// node's origin.
func (sv *Server) stampClientEvent(p auth.Principal, i int, e *fsm.Event) error {
	if f := nodeOwnedField(e); f != "" {
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: fmt.Sprintf("events[%d].%s is set by the node that receives the event, not by a client", i, f),
			Details: map[string]any{"index": i, "field": f}}
	}
	if e.Type == fsm.TypeJobCreated {
		return sv.stampSubmit(p, i, e)
	}
	s, err := sv.jobs.job(p, e.JobID)
	if err != nil {
		return err
	}
	if e.Tenant != "" && e.Tenant != s.Tenant {
		return httpx.BadRequest("events[%d].tenant: job %s is not of tenant %q", i, e.JobID, e.Tenant)
	}
	if !p.Allows(auth.ScopeJobsWrite, s.Tenant) {
		return forbidden(p, auth.ScopeJobsWrite, s.Tenant)
	}
	e.Tenant, e.Fence = s.Tenant, s.Fence+1
	return sv.cfg.Stamper.Received(e)
}

// stampSubmit makes a client's JobCreated what POST /v1/jobs would: the
// spec's limits and regions checked, this gate's job id and HLC, fence 1,
// the event id of its idempotency key if it has one.
func (sv *Server) stampSubmit(p auth.Principal, i int, e *fsm.Event) error {
	b, ok := e.Body.(*fsm.JobCreated)
	if !ok {
		return httpx.BadRequest("events[%d]: JobCreated without its body", i)
	}
	spec := &b.Spec
	if err := gateOnlyFields(spec, fmt.Sprintf("events[%d].body.spec.", i)); err != nil {
		return err
	}
	if e.Tenant != "" && spec.Tenant != "" && e.Tenant != spec.Tenant {
		return httpx.BadRequest("events[%d]: tenant %q and spec.tenant %q differ", i, e.Tenant, spec.Tenant)
	}
	if spec.Tenant == "" {
		spec.Tenant = e.Tenant
	}
	e.Tenant = spec.Tenant
	if !p.Allows(auth.ScopeJobsWrite, spec.Tenant) {
		return forbidden(p, auth.ScopeJobsWrite, spec.Tenant)
	}
	if err := sv.jobs.checkRegions(spec.Regions); err != nil {
		return err
	}
	// Quota admission, as POST /v1/jobs (gov_admission.go).
	adm, err := sv.jobs.admit(spec)
	sv.countSubmit(err, adm)
	if err != nil {
		return err
	}
	spec.Held, spec.EligibleAtMs = adm.held, adm.eligibleAtMs
	if len(b.AssignedRegions) == 0 {
		b.AssignedRegions = spec.Regions
	} else if !slices.Equal(b.AssignedRegions, spec.Regions) {
		return httpx.BadRequest("events[%d].body.assigned_regions: a client's submit is assigned the regions of its spec", i)
	}
	if spec.IdempotencyKey != "" {
		id := idempotentEventID(spec.Tenant, spec.IdempotencyKey)
		if !e.ID.IsZero() && e.ID != id {
			return httpx.BadRequest("events[%d].id: a submit with an idempotency key has the key's event id %s", i, id)
		}
		e.ID = id
	}
	jobID, ts, err := sv.cfg.JobIDs.Next()
	if err != nil {
		return err
	}
	if e.ID.IsZero() {
		e.ID = commit.NewEventID()
	}
	e.JobID, e.Fence = jobID, 1
	sv.cfg.Stamper.Created(e, ts)
	return nil
}

// nodeOwnedField names a field of a client's event that only the node
// sets ("" if none is set). A JobCreated's job id is the gate's too.
func nodeOwnedField(e *fsm.Event) string {
	switch {
	case e.Node != "":
		return "node"
	case e.HLC != (hlc.Timestamp{}):
		return "hlc"
	case e.Region != "":
		return "region"
	case e.Fence != 0:
		return "fence"
	case e.Type == fsm.TypeJobCreated && e.JobID != "":
		return "job_id"
	}
	return ""
}

// eventRefused is the error of an event a token may not write.
func eventRefused(i int, e *fsm.Event, status int, why string) *httpx.APIError {
	code := httpx.CodeBadRequest
	if status == http.StatusForbidden {
		code = httpx.CodeForbidden
	}
	return &httpx.APIError{Status: status, Code: code, Message: fmt.Sprintf("events[%d]: %s", i, why),
		Details: map[string]any{"index": i, "type": e.Type.String()}}
}
