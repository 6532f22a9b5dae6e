package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
)

// Job endpoints. Jobs live in the global ledger: a manager forwards every
// job call to a gate of its region.

// readBody reads a request body of at most MaxRequestBytes (413 beyond).
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > httpx.MaxRequestBytes {
		return nil, httpx.TooLarge(httpx.MaxRequestBytes)
	}
	if r.ContentLength > 0 && r.Body != nil {
		// The length is known: one buffer of it, not io.ReadAll's
		// doublings (issue 19). net/http ends the body there.
		b := make([]byte, r.ContentLength)
		if n, err := readFull(r.Body, b); n < len(b) {
			return nil, bodyReadError(err)
		}
		return b, nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, httpx.MaxRequestBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, httpx.TooLarge(httpx.MaxRequestBytes)
		}
		return nil, bodyReadError(err)
	}
	return b, nil
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

func (sv *Server) handleSubmitJob(w http.ResponseWriter, r *http.Request, c *call) {
	p := c.p
	level, err := sv.writeLevel(r)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	var spec fsm.JobSpec
	if err := decodeSubmit(r, &spec); err != nil {
		httpx.WriteError(w, err)
		return
	}
	out, err := sv.jobs.Submit(r.Context(), p, spec, level)
	sv.countSubmit(err, out.Admission)
	if err != nil {
		writeError(w, err) // a 429 carries Retry-After
		return
	}
	w.Header().Set("Location", "/v1/jobs/"+out.JobID)
	if out.Existing {
		writeSubmitAnswer(w, http.StatusOK, &api.SubmitJobResponse{JobID: out.JobID, Existing: true,
			WriteResponse: api.WriteResponse{Durability: out.Level.String(), HLC: out.HLC}})
		return
	}
	res := commit.SubmitResult{Level: out.Level, LSN: out.LSN, Index: out.Index}
	resp := api.SubmitJobResponse{JobID: out.JobID, WriteResponse: sv.writeResponse(w, res, out.HLC)}
	if resp.Queued, resp.NextEligibleAt, resp.QueuedBy = heldNote(out.Admission); resp.Queued {
		resp.Status = fsm.JobStatusPending.String()
		writeSubmitAnswer(w, http.StatusAccepted, &resp) // accepted, held until admitted
		return
	}
	writeSubmitAnswer(w, http.StatusCreated, &resp)
}

// writeResponse is the common part of a write's answer; it sets the
// session header when the write reached its tier, and names the NodeWAL
// record of a write acknowledged below it, so that the client can read
// whether it got there or was refused (GET /v1/writes/{node}/{lsn}).
func (sv *Server) writeResponse(w http.ResponseWriter, res commit.SubmitResult, ts hlc.Timestamp) api.WriteResponse {
	out := api.WriteResponse{Durability: res.Level.String(), HLC: ts, Session: sv.sessionToken(res.Index)}
	if out.Session != "" {
		w.Header().Set(api.HeaderSession, out.Session)
	}
	if res.LSN != 0 && res.Level < sv.cfg.Tier {
		out.Write = api.WriteRef(sv.cfg.NodeID, uint64(res.LSN))
	}
	return out
}

func (sv *Server) handleGetJob(w http.ResponseWriter, r *http.Request, c *call) {
	p := c.p
	id, ok := jobIDParam(w, r)
	if !ok {
		return
	}
	s, ok := sv.readJob(w, p, id)
	if !ok {
		return
	}
	sv.setReadHeaders(w)
	if live := sv.liveOf(s.JobID); live != nil {
		httpx.WriteJSON(w, http.StatusOK, jobWithLive{JobState: s, Live: live})
		return
	}
	httpx.WriteJSON(w, http.StatusOK, s)
}

// jobWithLive is a job's JSON with its live statistics added as "live".
type jobWithLive struct {
	*fsm.JobState
	Live api.JobLive
}

func (j jobWithLive) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(j.JobState)
	if err != nil {
		return nil, err
	}
	live, err := json.Marshal(j.Live)
	if err != nil {
		return nil, err
	}
	// b is a JSON object: insert the member before its closing brace.
	out := append(b[:len(b)-1:len(b)-1], `,"live":`...)
	out = append(out, live...)
	return append(out, '}'), nil
}

// liveOf is job's live statistics on a gate that has fresh ones, nil
// otherwise.
func (sv *Server) liveOf(job string) api.JobLive {
	if sv.cfg.Live == nil {
		return nil
	}
	return sv.cfg.Live.Live(job)
}

// readJob is a read call's prelude (consistency) and its job: the job p
// may read, or false with the error written.
func (sv *Server) readJob(w http.ResponseWriter, p auth.Principal, id string) (*fsm.JobState, bool) {
	s, err := sv.jobs.job(p, id)
	if err != nil {
		httpx.WriteError(w, err)
		return nil, false
	}
	return s, true
}

func (sv *Server) handleListJobs(w http.ResponseWriter, r *http.Request, c *call) {
	p := c.p
	q := r.URL.Query()
	jq := fsm.JobQuery{Tenant: q.Get("tenant"), Region: q.Get("region"), Cursor: q.Get("cursor")}
	if jq.Tenant == "" && p.Tenant != auth.AllTenants {
		jq.Tenant = p.Tenant
	}
	if !p.Allows(auth.ScopeJobsRead, orAll(jq.Tenant)) {
		httpx.WriteError(w, forbidden(p, auth.ScopeJobsRead, jq.Tenant))
		return
	}
	if s := q.Get("status"); s != "" {
		st, err := fsm.ParseJobStatus(s)
		if err != nil {
			httpx.WriteError(w, httpx.BadRequest("status %q: %v", s, err))
			return
		}
		jq.Status = st
	}
	if s := q.Get("limit"); s != "" {
		var err error
		if jq.Limit, err = parseLimit(s); err != nil {
			httpx.WriteError(w, err)
			return
		}
	}
	page, err := sv.cfg.Ledger.ListJobs(jq)
	if err != nil {
		httpx.WriteError(w, readError(err))
		return
	}
	sv.setReadHeaders(w)
	httpx.WriteJSON(w, http.StatusOK, api.JobList{Jobs: orEmpty(page.Jobs), NextCursor: page.Next})
}

func (sv *Server) handleJobEvents(w http.ResponseWriter, r *http.Request, c *call) {
	p := c.p
	id, ok := jobIDParam(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	eq := fsm.EventQuery{JobID: id, Cursor: q.Get("cursor")}
	if s := q.Get("limit"); s != "" {
		var err error
		if eq.Limit, err = parseLimit(s); err != nil {
			httpx.WriteError(w, err)
			return
		}
	}
	s, ok := sv.readJob(w, p, id)
	if !ok {
		return
	}
	eq.Tenant = s.Tenant
	page, err := sv.cfg.Ledger.JobEvents(eq)
	if err != nil {
		httpx.WriteError(w, readError(err))
		return
	}
	out := api.EventList{Events: make([]fsm.StoredEvent, len(page.Events)), NextCursor: page.Next}
	for i, se := range page.Events {
		out.Events[i] = *se
	}
	sv.setReadHeaders(w)
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (sv *Server) handleCancelJob(w http.ResponseWriter, r *http.Request, c *call) {
	p := c.p
	id, ok := jobIDParam(w, r)
	if !ok {
		return
	}
	level, err := sv.writeLevel(r)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	body := c.body
	var req api.CancelJobRequest
	if err := httpx.DecodeBytes(body, &req); err != nil {
		httpx.WriteError(w, err)
		return
	}
	// The cancel's fence comes from the job's current state: read it
	// linearizably, on the leader.
	if !sv.cfg.Consensus.IsLeader() {
		sv.forwardToLeader(w, r, body, "cancels are decided by the leader")
		return
	}
	res, ts, err := sv.jobs.Cancel(r.Context(), p, id, req, level)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	out := api.CancelJobResponse{JobID: id, WriteResponse: sv.writeResponse(w, res, ts)}
	if len(res.Results) == 1 {
		out.Outcome = res.Results[0].Outcome.String()
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// jobIDParam reads the {id} of a job path; a malformed id is a 400.
func jobIDParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if _, err := fsm.ParseJobID(id); err != nil {
		httpx.WriteError(w, httpx.BadRequest("job id %q: %v", id, err))
		return "", false
	}
	return id, true
}

// readPrelude parses a read's consistency options and makes the node fit
// to answer it (prepareRead); false when it has answered already.
func (sv *Server) readPrelude(w http.ResponseWriter, r *http.Request) bool {
	o, err := sv.parseReadOpts(r)
	if err != nil {
		httpx.WriteError(w, err)
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
