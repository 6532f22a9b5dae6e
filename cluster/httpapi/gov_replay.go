package httpapi

import (
	"context"
	"net/http"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/tracing"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Replay (issue 18 §3): POST /v1/jobs/{id}/replay makes a new job with
// the original's spec, at high priority (at least fsm.ReplayPriority),
// recording the original's id (replay_of) and its state digest at the
// replay (replay_digest), so an auditor follows the chain of replays
// through GET /v1/jobs/{new}. A replay goes through admission like a
// submit, asking to queue: over quota it waits, held, instead of being
// refused.

// Replay replays job id for p; reason (bounded by the caller) is kept
// with the link.
func (j *Jobs) Replay(ctx context.Context, p auth.Principal, id, reason string, level commit.Durability) (Submitted, error) {
	orig, err := j.job(p, id)
	if err != nil {
		return Submitted{}, err
	}
	if !p.Allows(auth.ScopeJobsWrite, orig.Tenant) {
		return Submitted{}, forbidden(p, auth.ScopeJobsWrite, orig.Tenant)
	}
	digest, err := orig.Digest()
	if err != nil {
		return Submitted{}, err
	}
	spec := orig.Spec.ClientSpec()
	spec.IdempotencyKey = "" // a replay is a new job; the original's key stays the original's
	spec.ReplayOf, spec.ReplayDigest, spec.ReplayReason = id, &digest, reason
	spec.Priority = max(spec.Priority, fsm.ReplayPriority)
	spec.Admission = fsm.AdmissionQueue
	if err := spec.CheckSubmit(); err != nil {
		return Submitted{}, eventError(err)
	}
	a, err := j.admit(&spec)
	if err != nil {
		return Submitted{}, err
	}
	spec.Held, spec.EligibleAtMs = a.held, a.eligibleAtMs
	spec.Traceparent = tracing.Traceparent(ctx)
	jobID, ts, err := j.cfg.JobIDs.Next()
	if err != nil {
		return Submitted{}, err
	}
	e := fsm.Event{ID: commit.NewEventID(), Type: fsm.TypeJobCreated, JobID: jobID, Tenant: spec.Tenant, Fence: 1,
		Body: &fsm.JobCreated{Spec: spec, AssignedRegions: spec.Regions}}
	j.cfg.Stamper.Created(&e, ts)
	if err := e.Validate(); err != nil {
		return Submitted{}, eventError(err)
	}
	res, err := j.cfg.Writer.Submit(ctx, []fsm.Event{e}, level)
	if err != nil {
		return Submitted{}, submitError(err, res, j.cfg.NodeID)
	}
	if err := resultError(res); err != nil {
		return Submitted{}, err
	}
	return Submitted{JobID: jobID, Level: res.Level, HLC: ts, Index: res.Index, LSN: res.LSN, Admission: a}, nil
}

func (sv *Server) handleReplayJob(w http.ResponseWriter, r *http.Request, c *call) {
	id, ok := jobIDParam(w, r)
	if !ok {
		return
	}
	level, err := sv.writeLevel(r)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	var req api.ReplayRequest
	if len(c.body) > 0 {
		if err := httpx.DecodeBytes(c.body, &req); err != nil {
			httpx.WriteError(w, err)
			return
		}
		if len(req.Reason) > fsm.MaxTextBytes {
			httpx.WriteError(w, &httpx.APIError{Status: http.StatusRequestEntityTooLarge, Code: httpx.CodeTooLarge,
				Message: "reason is at most 1 KiB", Details: map[string]any{"limit": fsm.MaxTextBytes}})
			return
		}
		if req.Reason != "" {
			sv.log.Info("job replay", "job", id, "reason", req.Reason, "token", c.p.Name)
		}
	}
	out, err := sv.jobs.Replay(r.Context(), c.p, id, req.Reason, level)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+out.JobID)
	res := commit.SubmitResult{Level: out.Level, LSN: out.LSN, Index: out.Index}
	httpx.WriteJSON(w, http.StatusCreated, api.ReplayResponse{JobID: out.JobID, ReplayOf: id, WriteResponse: sv.writeResponse(w, res, out.HLC)})
}
