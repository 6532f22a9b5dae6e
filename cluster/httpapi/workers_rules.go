package httpapi

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/peer"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/progress"
)

// The pure part of the worker control plane: what a heartbeat tells a
// worker to stop, whether a report may be proposed, backpressure levels,
// and the shape of a lease. No I/O here: the handlers (api_workers*.go)
// read the ledger and hand the states in.

// backpressureLevel maps the worse of the commit queue's and the progress
// receive queue's fills (0..1) to the level a heartbeat returns. The
// thresholds are AD-37's, kept once in transport/progress so the two
// queues cannot drift apart: the worse fill is the worse level.
func backpressureLevel(fills ...float64) string {
	worst := 0.0
	for _, f := range fills {
		worst = max(worst, f)
	}
	return progress.LevelForFill(worst).String()
}

// stopList returns, in request order and without repeats, every workflow
// the worker says it runs that the ledger does not hold LEASED to it under
// that lease fence: cancelled, ended, rescheduled away, leased anew, or
// never known. wfs holds the ledger's states by id (absent: unknown).
func stopList(worker string, running []api.RunningWorkflow, wfs map[string]*fsm.WorkflowState) []string {
	stop := []string{}
	for _, rw := range running {
		if !holds(worker, rw, wfs) && !slices.Contains(stop, rw.Workflow) {
			stop = append(stop, rw.Workflow)
		}
	}
	return stop
}

// recordedList is the ledger's counters of the running workflows worker
// still holds: a worker sending progress over the data plane learns from
// them whether its frames arrive (it gets no other answer to a frame).
func recordedList(worker string, running []api.RunningWorkflow, wfs map[string]*fsm.WorkflowState) []api.RecordedProgress {
	var out []api.RecordedProgress
	for _, rw := range running {
		if holds(worker, rw, wfs) {
			wf := wfs[rw.Workflow]
			out = append(out, api.RecordedProgress{Workflow: wf.ID, LeaseFence: wf.LeaseFence, Completed: wf.Completed, Failed: wf.Failed})
		}
	}
	return out
}

// holds says whether worker holds rw's lease at its fence.
func holds(worker string, rw api.RunningWorkflow, wfs map[string]*fsm.WorkflowState) bool {
	wf := wfs[rw.Workflow]
	return wf != nil && wf.Status == fsm.WorkflowStatusLeased && wf.Worker == worker && wf.LeaseFence == rw.LeaseFence
}

// checkReport decides whether a worker's report of type t (progress,
// completed, failed) on wf under fence may be proposed. It refuses what
// the ledger would reject, with the error fsm would give (so the wire
// code is the same), and one thing the ledger does not check: the worker
// must hold the lease. dup is true for an end already recorded under this
// very lease (a retried complete or fail): nothing to propose.
func checkReport(wf *fsm.WorkflowState, id, worker string, fence uint64, t fsm.EventType) (dup bool, err error) {
	if wf == nil {
		return false, fmt.Errorf("workflow %s: %w", id, fsm.ErrUnknownWorkflow)
	}
	if fence != wf.LeaseFence {
		return false, &fsm.FenceError{Subject: wf.ID, Fence: fence, Current: wf.LeaseFence}
	}
	to := reportTarget(t)
	if wf.Status == to && to != fsm.WorkflowStatusLeased {
		return true, nil
	}
	if wf.Status != fsm.WorkflowStatusLeased {
		return false, &fsm.WorkflowTransitionError{Workflow: wf.ID, From: wf.Status, To: to, Event: t}
	}
	if wf.Worker != worker {
		return false, fmt.Errorf("workflow %s is leased to %s, not %s: %w", wf.ID, wf.Worker, worker, fsm.ErrWorkerMismatch)
	}
	return false, nil
}

// reportTarget is the workflow status a report leads to.
func reportTarget(t fsm.EventType) fsm.WorkflowStatus {
	switch t {
	case fsm.TypeWorkflowCompleted:
		return fsm.WorkflowStatusCompleted
	case fsm.TypeWorkflowFailed:
		return fsm.WorkflowStatusFailed
	}
	return fsm.WorkflowStatusLeased
}

// rejectedResult is the per-workflow answer to a report that was not, or
// will not be, applied.
func rejectedResult(workflow string, err error) api.WorkerReportResult {
	return api.WorkerReportResult{Workflow: workflow, Outcome: fsm.OutcomeRejected.String(), Code: peer.ResultCode(err), Message: err.Error()}
}

// leasesOf turns the view's workflows leased to a worker into the wire
// form, in workflow id order.
func leasesOf(wfs []*fsm.WorkflowState) []api.Lease {
	out := make([]api.Lease, 0, len(wfs))
	for _, wf := range wfs {
		out = append(out, api.Lease{Workflow: wf.ID, JobID: wf.JobID, Tenant: wf.Tenant, Region: wf.Region, Name: wf.Name,
			Instance: wf.Instance, Spec: wf.Spec, LeaseFence: wf.LeaseFence, LeaseUntil: wf.LeaseUntilMs,
			Completed: wf.Completed, Failed: wf.Failed, Attempt: wf.Attempt()})
	}
	slices.SortFunc(out, func(a, b api.Lease) int { return strings.Compare(a.Workflow, b.Workflow) })
	return out
}

// probeHLC fills the envelope of the event checkWorkerID validates: only
// the worker field is under test.
var probeHLC = hlc.Timestamp{WallMs: 1}

// checkWorkerID applies fsm's name rules to a worker id (by validating a
// WorkerLeft that names it, so the rules cannot drift), and refuses "."
// and "..", which fsm allows but a URL path cannot carry: such a worker
// could never heartbeat.
func checkWorkerID(id string) error {
	if id == "." || id == ".." {
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: fmt.Sprintf("worker id %q cannot be a URL path segment", id), Details: map[string]any{"field": "worker_id"}}
	}
	e := fsm.Event{ID: fsm.EventID{1}, Type: fsm.TypeWorkerLeft, Region: "r", Node: "n", HLC: probeHLC,
		Body: &fsm.WorkerLeft{Worker: id}}
	if err := e.Validate(); err != nil {
		// A 400 even for an over-long id: it is a bad field, not a body
		// too large.
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: fmt.Sprintf("worker id %q: %v", id, err), Details: map[string]any{"field": "worker_id"}}
	}
	return nil
}

// workerIDBytes is the randomness of a generated worker id ("w-" and 8
// hex digits).
const workerIDBytes = 4

// newWorkerID returns a random worker id.
func newWorkerID() string {
	var b [workerIDBytes]byte
	_, _ = rand.Read(b[:])
	return "w-" + hex.EncodeToString(b[:])
}

// checkReportBodies validates a report's event bodies before anything is
// read from the ledger, so a bad body is a 400 (or a 413 naming the
// limit), never a per-workflow rejection that depends on what the ledger
// holds. The bodies are validated in a probe event whose envelope is
// valid and whose job is the one the workflow id names (the part before
// its first '/'): fsm's rules apply unchanged.
func checkReportBodies(field string, rp report) error {
	job, _, _ := strings.Cut(rp.workflow, "/")
	for _, b := range rp.bodies() {
		e := fsm.Event{ID: fsm.EventID{1}, Type: b.EventType(), JobID: job, Tenant: "probe", Region: "r", Node: "n",
			HLC: probeHLC, Fence: rp.fence, Body: b}
		if err := e.Validate(); err != nil {
			ae := eventError(err).(*httpx.APIError)
			if field != "" {
				ae.Message = field + ": " + ae.Message
			}
			return ae
		}
	}
	return nil
}
