package httpapi

import (
	"fmt"
	"net/http"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Worker reports: progress of leased workflows, and their completion or
// failure. Each report is checked against the ledger first (checkReport):
// a report on an unknown workflow, another worker's lease or a stale lease
// fence is answered per workflow and never proposed, so one stale
// workflow does not fail the others. The rest go in one pipeline Submit.

// MaxProgressUpdates bounds the updates of one progress request.
const MaxProgressUpdates = 1_000

// report is one workflow's report: optional cumulative counters, then an
// optional end (completed or failed).
type report struct {
	workflow string
	fence    uint64
	progress *fsm.WorkflowProgress // nil: no counters
	end      fsm.Body              // nil: progress only
}

// bodies are the report's event bodies in the order they apply.
func (rp *report) bodies() []fsm.Body {
	var bs []fsm.Body
	if rp.progress != nil {
		bs = append(bs, rp.progress)
	}
	if rp.end != nil {
		bs = append(bs, rp.end)
	}
	return bs
}

// kind is the event type that decides what the report leads to.
func (rp *report) kind() fsm.EventType {
	if rp.end != nil {
		return rp.end.EventType()
	}
	return fsm.TypeWorkflowProgress
}

// handleProgress is POST /v1/workers/{id}/progress. Progress is
// acknowledged at LOCAL by default (DESIGN §4: the manager's NodeWAL);
// ?durability=regional waits for the ledger and returns its outcomes.
func (sv *Server) handleProgress(w http.ResponseWriter, r *http.Request, c *call) {
	body := c.body
	id, ok := workerIDParam(w, r)
	if !ok {
		return
	}
	level, err := sv.reportLevel(r, commit.DurabilityLocal)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	var req api.ProgressRequest
	if err := httpx.DecodeBytes(body, &req); err != nil {
		httpx.WriteError(w, err)
		return
	}
	reps, err := progressReports(req.Updates)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	sv.submitReports(w, r, id, reps, level)
}

// progressReports checks a progress request and turns it into reports.
func progressReports(updates []api.ProgressUpdate) ([]report, error) {
	switch {
	case len(updates) == 0:
		return nil, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: "updates: empty; send at least one workflow's counters", Details: map[string]any{"field": "updates"}}
	case len(updates) > MaxProgressUpdates:
		return nil, &httpx.APIError{Status: http.StatusRequestEntityTooLarge, Code: httpx.CodeTooLarge,
			Message: fmt.Sprintf("updates: %d in one request, limit %d", len(updates), MaxProgressUpdates),
			Details: map[string]any{"limit": MaxProgressUpdates}}
	}
	reps := make([]report, len(updates))
	seen := make(map[string]int, len(updates))
	for i, u := range updates {
		field := fmt.Sprintf("updates[%d]", i)
		if err := checkWorkflowRef(field, u.Workflow, u.LeaseFence); err != nil {
			return nil, err
		}
		if j, dup := seen[u.Workflow]; dup {
			return nil, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
				Message: fmt.Sprintf("%s: workflow %s is also updates[%d]; send one update per workflow", field, u.Workflow, j),
				Details: map[string]any{"field": field + ".workflow"}}
		}
		seen[u.Workflow] = i
		reps[i] = report{workflow: u.Workflow, fence: u.LeaseFence,
			progress: &fsm.WorkflowProgress{Workflow: u.Workflow, Completed: u.Completed, Failed: u.Failed, Stats: u.Stats}}
		if err := checkReportBodies(field, reps[i]); err != nil {
			return nil, err
		}
	}
	return reps, nil
}

// handleCompleteWorkflow is POST /v1/workers/{id}/complete.
func (sv *Server) handleCompleteWorkflow(w http.ResponseWriter, r *http.Request, c *call) {
	sv.handleWorkflowEnd(w, r, c, fsm.TypeWorkflowCompleted)
}

// handleFailWorkflow is POST /v1/workers/{id}/fail.
func (sv *Server) handleFailWorkflow(w http.ResponseWriter, r *http.Request, c *call) {
	sv.handleWorkflowEnd(w, r, c, fsm.TypeWorkflowFailed)
}

// handleWorkflowEnd ends a leased workflow as t (completed or failed),
// after recording the request's counters when it carries any.
func (sv *Server) handleWorkflowEnd(w http.ResponseWriter, r *http.Request, c *call, t fsm.EventType) {
	body := c.body
	id, ok := workerIDParam(w, r)
	if !ok {
		return
	}
	level, err := sv.reportLevel(r, sv.cfg.Tier)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	var req api.WorkflowEndRequest
	if err := httpx.DecodeBytes(body, &req); err != nil {
		httpx.WriteError(w, err)
		return
	}
	rp, err := endReport(t, &req)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	sv.submitReports(w, r, id, []report{rp}, level)
}

// endReport checks a complete or fail request and turns it into a report.
func endReport(t fsm.EventType, req *api.WorkflowEndRequest) (report, error) {
	if err := checkWorkflowRef("", req.Workflow, req.LeaseFence); err != nil {
		return report{}, err
	}
	rp := report{workflow: req.Workflow, fence: req.LeaseFence}
	switch {
	case t == fsm.TypeWorkflowFailed && req.Error == "":
		return report{}, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: "error: a failure needs its error", Details: map[string]any{"field": "error"}}
	case t == fsm.TypeWorkflowCompleted && req.Error != "":
		return report{}, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: "error: only a failure carries an error; report it with /fail", Details: map[string]any{"field": "error"}}
	case t == fsm.TypeWorkflowFailed:
		rp.end = &fsm.WorkflowFailed{Workflow: req.Workflow, Error: req.Error}
	default:
		rp.end = &fsm.WorkflowCompleted{Workflow: req.Workflow}
	}
	if req.Completed > 0 || req.Failed > 0 || len(req.Stats) > 0 {
		rp.progress = &fsm.WorkflowProgress{Workflow: req.Workflow, Completed: req.Completed, Failed: req.Failed, Stats: req.Stats}
	}
	if err := checkReportBodies("", rp); err != nil {
		return report{}, err
	}
	return rp, nil
}

// reportLevel parses durability= of a report; def when absent.
func (sv *Server) reportLevel(r *http.Request, def commit.Durability) (commit.Durability, error) {
	d, err := parseWriteLevel(r)
	if err == nil {
		err = checkLevel(d, sv.cfg.Tier)
	}
	if d == 0 {
		d = def
	}
	return d, err
}

// submitReports checks reps against the ledger, proposes the events of
// those that pass in one Submit, and answers a result per report whose
// outcome is known: refused by the check, a duplicate, or applied or
// rejected by the ledger. A report acknowledged below the tier (LOCAL,
// NONE) has no result: it is written and climbs to the ledger. A report
// that would make an invalid event fails the whole request (it is the
// request's fault) before anything is written.
func (sv *Server) submitReports(w http.ResponseWriter, r *http.Request, worker string, reps []report, level commit.Durability) {
	if _, err := sv.activeWorker(worker); err != nil {
		httpx.WriteError(w, err)
		return
	}
	ids := make([]string, len(reps))
	for i := range reps {
		ids[i] = reps[i].workflow
	}
	wfs, err := sv.ledgerWorkflows(ids)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	results, events, owner, err := sv.reportEvents(worker, reps, wfs)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	out := api.WorkerReportResponse{Results: knownResults(results), WriteResponse: api.WriteResponse{Durability: level.String()}}
	if len(events) == 0 {
		httpx.WriteJSON(w, http.StatusOK, out)
		return
	}
	res, err := sv.cfg.Writer.Submit(r.Context(), events, level)
	if err != nil {
		httpx.WriteError(w, submitError(err, res, sv.cfg.NodeID))
		return
	}
	for k, i := range owner {
		if results[i].Outcome == fsm.OutcomeRejected.String() {
			continue // the report's counters were refused: keep why
		}
		if res.Results == nil {
			continue // below the tier: outcome not known yet
		}
		rs := res.Results[k]
		if rs.Err != nil {
			results[i] = rejectedResult(results[i].Workflow, rs.Err)
			continue
		}
		results[i].Outcome = rs.Outcome.String()
	}
	sv.workerM.countFailures(reps, results)
	out.Results = knownResults(results)
	out.WriteResponse = sv.writeResponse(w, res, events[len(events)-1].HLC)
	httpx.WriteJSON(w, http.StatusOK, out)
}

// reportEvents checks reps of worker against the ledger's states wfs and
// builds the events of those that pass, in report order: results[i] is
// report i's answer (no outcome yet when it passed), owner[k] the report
// of events[k]. Both the HTTP reports and the data plane's flush
// (workers_dataplane.go) go through it, so they propose the same events
// for the same counters. An error is a report that makes an invalid event.
func (sv *Server) reportEvents(worker string, reps []report, wfs map[string]*fsm.WorkflowState) (results []api.WorkerReportResult, events []fsm.Event, owner []int, err error) {
	results = make([]api.WorkerReportResult, len(reps))
	for i := range reps {
		rp := &reps[i]
		wf := wfs[rp.workflow]
		dup, err := checkReport(wf, rp.workflow, worker, rp.fence, rp.kind())
		switch {
		case err != nil:
			results[i] = rejectedResult(rp.workflow, err)
			continue
		case dup:
			results[i] = api.WorkerReportResult{Workflow: rp.workflow, Outcome: fsm.OutcomeDuplicate.String()}
			continue
		}
		results[i] = api.WorkerReportResult{Workflow: rp.workflow}
		for _, b := range rp.bodies() {
			e, err := sv.reportEvent(wf, rp.fence, b)
			if err != nil {
				return nil, nil, nil, err
			}
			events, owner = append(events, e), append(owner, i)
		}
	}
	return results, events, owner, nil
}

// knownResults drops the results without an outcome (reports acknowledged
// below the tier), keeping request order; never nil.
func knownResults(rs []api.WorkerReportResult) []api.WorkerReportResult {
	out := make([]api.WorkerReportResult, 0, len(rs))
	for _, r := range rs {
		if r.Outcome != "" {
			out = append(out, r)
		}
	}
	return out
}

// reportEvent builds and validates the event of one report body on wf:
// fenced by the lease, job, tenant and region from the ledger.
func (sv *Server) reportEvent(wf *fsm.WorkflowState, fence uint64, b fsm.Body) (fsm.Event, error) {
	e := fsm.Event{Type: b.EventType(), JobID: wf.JobID, Tenant: wf.Tenant, Region: wf.Region, Fence: fence, Body: b}
	if err := sv.cfg.Stamper.Own(&e); err != nil {
		return fsm.Event{}, err
	}
	if err := e.Validate(); err != nil {
		ae := eventError(err).(*httpx.APIError)
		ae.Message = fmt.Sprintf("workflow %s: %s", wf.ID, ae.Message)
		return fsm.Event{}, ae
	}
	return e, nil
}
