package httpapi

import (
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
)

// Job endpoints. Jobs live in the global ledger: a manager forwards every
// job call to a gate of its region.

// readBody reads a request body of at most MaxRequestBytes (413 beyond).
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > MaxRequestBytes {
		return nil, tooLarge(MaxRequestBytes)
	}
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, MaxRequestBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(MaxRequestBytes)
		}
		return nil, badRequest("read request body: %v", err)
	}
	return b, nil
}

// forwardJobCall sends a job call that reached a manager to a gate; it
// returns true when it did (or failed trying).
func (sv *Server) forwardJobCall(w http.ResponseWriter, r *http.Request) bool {
	if sv.cfg.Role == RoleGate {
		return false
	}
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return true
	}
	sv.forwardToRole(w, r, body, RoleGate)
	return true
}

// writeLevel parses durability= for a write of this node's tier (empty:
// the tier).
func (sv *Server) writeLevel(r *http.Request) (commit.Durability, error) {
	d, err := parseWriteLevel(r)
	if err == nil {
		err = checkLevel(d, sv.cfg.Tier)
	}
	if d == 0 {
		d = sv.cfg.Tier
	}
	return d, err
}

func (sv *Server) handleSubmitJob(w http.ResponseWriter, r *http.Request) {
	p, ok := sv.principal(w, r)
	if !ok || sv.forwardJobCall(w, r) {
		return
	}
	level, err := sv.writeLevel(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var spec fsm.JobSpec
	if err := decodeJSON(r, MaxRequestBytes, &spec); err != nil {
		writeError(w, err)
		return
	}
	if !p.Allows(auth.ScopeJobsWrite, spec.Tenant) {
		writeError(w, forbidden(p, auth.ScopeJobsWrite, spec.Tenant))
		return
	}
	if err := sv.checkRegions(spec.Regions); err != nil {
		writeError(w, err)
		return
	}
	var eventID fsm.EventID
	if spec.IdempotencyKey != "" {
		eventID = idempotentEventID(spec.Tenant, spec.IdempotencyKey)
		if sv.replayFromLedger(w, eventID, &spec) {
			return
		}
	} else {
		eventID = commit.NewEventID()
	}
	jobID, ts, err := sv.cfg.JobIDs.Next()
	if err != nil {
		writeError(w, err)
		return
	}
	e := fsm.Event{ID: eventID, Type: fsm.TypeJobCreated, JobID: jobID, Tenant: spec.Tenant, Region: sv.cfg.Region,
		Node: sv.cfg.NodeID, HLC: ts, Fence: 1, Body: &fsm.JobCreated{Spec: spec, AssignedRegions: spec.Regions}}
	if err := e.Validate(); err != nil {
		writeError(w, eventError(err))
		return
	}
	if spec.IdempotencyKey != "" {
		if prev, fresh := sv.idem.claim(eventID, idemEntry{jobID: jobID, spec: &spec, hlc: ts}); !fresh {
			sv.answerReplay(w, prev, &spec)
			return
		}
	}
	res, err := sv.cfg.Writer.Submit(r.Context(), []fsm.Event{e}, level)
	if spec.IdempotencyKey != "" {
		sv.idem.settle(eventID, res.Level)
	}
	if err != nil {
		writeError(w, submitError(err, res))
		return
	}
	if len(res.Results) == 1 && errors.Is(res.Results[0].Err, fsm.ErrEventConflict) {
		// The key's job was created earlier (through another gate, or
		// before this gate applied it): answer from the ledger once this
		// node has applied the entry that found the conflict.
		if err := sv.cfg.Applied.Wait(r.Context(), res.Index); err != nil {
			writeError(w, submitError(err, res))
			return
		}
		if sv.replayFromLedger(w, eventID, &spec) {
			return
		}
	}
	if err := resultError(res); err != nil {
		writeError(w, err)
		return
	}
	out := api.SubmitJobResponse{JobID: jobID, WriteResponse: sv.writeResponse(w, res, ts)}
	w.Header().Set("Location", "/v1/jobs/"+jobID)
	writeJSON(w, http.StatusCreated, out)
}

// writeResponse is the common part of a write's answer; it sets the
// session header when the write reached its tier.
func (sv *Server) writeResponse(w http.ResponseWriter, res commit.SubmitResult, ts hlc.Timestamp) api.WriteResponse {
	out := api.WriteResponse{Durability: res.Level.String(), HLC: ts, Session: sv.sessionToken(res.Index)}
	if out.Session != "" {
		w.Header().Set(api.HeaderSession, out.Session)
	}
	return out
}

// checkRegions refuses a region no gate of the cluster serves.
func (sv *Server) checkRegions(regions []string) error {
	known := map[string]bool{sv.cfg.Region: true}
	for _, m := range sv.cfg.Members.Members() {
		known[m.Meta.Region] = true
	}
	for _, r := range regions {
		if !known[r] {
			return &APIError{Status: http.StatusBadRequest, Code: CodeBadRequest,
				Message: fmt.Sprintf("region %q is not a region of this cluster", r), Details: map[string]any{"field": "regions"}}
		}
	}
	return nil
}

func (sv *Server) handleGetJob(w http.ResponseWriter, r *http.Request) {
	p, ok := sv.principal(w, r)
	if !ok || sv.forwardJobCall(w, r) {
		return
	}
	id, ok := jobIDParam(w, r)
	if !ok {
		return
	}
	s, ok := sv.readJob(w, r, p, id)
	if !ok {
		return
	}
	sv.setReadHeaders(w)
	writeJSON(w, http.StatusOK, s)
}

// readJob is a read call's prelude (consistency) and its job: the job p
// may read, or false with the error written.
func (sv *Server) readJob(w http.ResponseWriter, r *http.Request, p auth.Principal, id string) (*fsm.JobState, bool) {
	if !sv.readPrelude(w, r) {
		return nil, false
	}
	s, err := sv.jobFor(p, id)
	if err != nil {
		writeError(w, err)
		return nil, false
	}
	return s, true
}

// jobFor reads a job the principal may read; another tenant's job is "not
// found", so a token never learns that it exists.
func (sv *Server) jobFor(p auth.Principal, id string) (*fsm.JobState, error) {
	s, err := sv.cfg.Ledger.JobByID(id)
	if err == nil && !p.Allows(auth.ScopeJobsRead, s.Tenant) {
		err = fsm.ErrNotFound
	}
	if errors.Is(err, fsm.ErrNotFound) {
		return nil, &APIError{Status: http.StatusNotFound, Code: CodeNotFound, Message: fmt.Sprintf("job %s not found", id)}
	}
	return s, err
}

func (sv *Server) handleListJobs(w http.ResponseWriter, r *http.Request) {
	p, ok := sv.principal(w, r)
	if !ok || sv.forwardJobCall(w, r) {
		return
	}
	q := r.URL.Query()
	jq := fsm.JobQuery{Tenant: q.Get("tenant"), Region: q.Get("region"), Cursor: q.Get("cursor")}
	if jq.Tenant == "" && p.Tenant != auth.AllTenants {
		jq.Tenant = p.Tenant
	}
	if !p.Allows(auth.ScopeJobsRead, orAll(jq.Tenant)) {
		writeError(w, forbidden(p, auth.ScopeJobsRead, jq.Tenant))
		return
	}
	if s := q.Get("status"); s != "" {
		st, err := fsm.ParseJobStatus(s)
		if err != nil {
			writeError(w, badRequest("status %q: %v", s, err))
			return
		}
		jq.Status = st
	}
	if s := q.Get("limit"); s != "" {
		var err error
		if jq.Limit, err = parseLimit(s); err != nil {
			writeError(w, err)
			return
		}
	}
	if !sv.readPrelude(w, r) {
		return
	}
	page, err := sv.cfg.Ledger.ListJobs(jq)
	if err != nil {
		writeError(w, readError(err))
		return
	}
	sv.setReadHeaders(w)
	writeJSON(w, http.StatusOK, api.JobList{Jobs: orEmpty(page.Jobs), NextCursor: page.Next})
}

func (sv *Server) handleJobEvents(w http.ResponseWriter, r *http.Request) {
	p, ok := sv.principal(w, r)
	if !ok || sv.forwardJobCall(w, r) {
		return
	}
	id, ok := jobIDParam(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	eq := fsm.EventQuery{JobID: id, Cursor: q.Get("cursor")}
	if s := q.Get("limit"); s != "" {
		var err error
		if eq.Limit, err = parseLimit(s); err != nil {
			writeError(w, err)
			return
		}
	}
	s, ok := sv.readJob(w, r, p, id)
	if !ok {
		return
	}
	eq.Tenant = s.Tenant
	page, err := sv.cfg.Ledger.JobEvents(eq)
	if err != nil {
		writeError(w, readError(err))
		return
	}
	out := api.EventList{Events: make([]fsm.StoredEvent, len(page.Events)), NextCursor: page.Next}
	for i, se := range page.Events {
		out.Events[i] = *se
	}
	sv.setReadHeaders(w)
	writeJSON(w, http.StatusOK, out)
}

func (sv *Server) handleCancelJob(w http.ResponseWriter, r *http.Request) {
	p, ok := sv.principal(w, r)
	if !ok || sv.forwardJobCall(w, r) {
		return
	}
	id, ok := jobIDParam(w, r)
	if !ok {
		return
	}
	level, err := sv.writeLevel(r)
	if err != nil {
		writeError(w, err)
		return
	}
	body, err := readBody(r)
	if err != nil {
		writeError(w, err)
		return
	}
	var req api.CancelJobRequest
	if err := decodeStrictBytes(body, &req); err != nil {
		writeError(w, err)
		return
	}
	// The cancel's fence comes from the job's current state: read it
	// linearizably, on the leader.
	if !sv.cfg.Consensus.IsLeader() {
		sv.forwardToLeader(w, r, body, "cancels are decided by the leader")
		return
	}
	if err := sv.cfg.Consensus.ConfirmLeadership(r.Context()); err != nil {
		writeError(w, &APIError{Status: http.StatusServiceUnavailable, Code: CodeUnavailable, Message: "cancel: " + err.Error()})
		return
	}
	s, err := sv.jobFor(p, id)
	if err != nil {
		writeError(w, err)
		return
	}
	if !p.Allows(auth.ScopeJobsWrite, s.Tenant) {
		writeError(w, forbidden(p, auth.ScopeJobsWrite, s.Tenant))
		return
	}
	if s.Status.Terminal() {
		writeError(w, &APIError{Status: http.StatusConflict, Code: CodeConflict,
			Message: fmt.Sprintf("job %s is %s: it cannot be cancelled", id, s.Status), Details: map[string]any{"status": s.Status.String()}})
		return
	}
	if req.Requestor == "" {
		req.Requestor = p.Name
	}
	res, ts, ok := sv.submitOwn(w, r, level, fsm.Event{Type: fsm.TypeJobCancellationRequested, JobID: id, Tenant: s.Tenant,
		Fence: s.Fence + 1, Body: &fsm.JobCancellationRequested{Reason: req.Reason, Requestor: req.Requestor}})
	if !ok {
		return
	}
	if err := resultError(res); err != nil {
		writeError(w, err)
		return
	}
	out := api.CancelJobResponse{JobID: id, WriteResponse: sv.writeResponse(w, res, ts)}
	if len(res.Results) == 1 {
		out.Outcome = res.Results[0].Outcome.String()
	}
	writeJSON(w, http.StatusOK, out)
}

// jobIDParam reads the {id} of a job path; a malformed id is a 400.
func jobIDParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if _, err := fsm.ParseJobID(id); err != nil {
		writeError(w, badRequest("job id %q: %v", id, err))
		return "", false
	}
	return id, true
}

// readPrelude parses a read's consistency options and makes the node fit
// to answer it (prepareRead); false when it has answered already.
func (sv *Server) readPrelude(w http.ResponseWriter, r *http.Request) bool {
	o, err := sv.parseReadOpts(r)
	if err != nil {
		writeError(w, err)
		return false
	}
	return sv.prepareRead(w, r, o)
}

func orAll(tenant string) string {
	if tenant == "" {
		return auth.AllTenants
	}
	return tenant
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
