package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/strata-ledger/strata/cluster/internal/httpx"
	"github.com/strata-ledger/strata/cluster/peer"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// The worker control plane (DESIGN §9, §10): heartbeat and lease
// long-poll (here), registration (api_workers_register.go) and reports
// (api_workers_report.go). Worker calls are served by the regional
// leader, which keeps the workers' liveness and the reconciler's
// view (sv.cfg.Workers): a gate forwards a worker call to a manager of its
// region, a follower manager to its leader. Every call from a worker the
// ledger holds as active renews its liveness. Nothing here waits on a
// worker: each call answers as soon as the manager has done its part.

// Worker API limits.
const (
	// MaxWorkerCapacity bounds a worker's capacity in concurrent
	// workflows.
	MaxWorkerCapacity = 1_000
	// MaxRunningPerHeartbeat bounds the running list of one heartbeat: a
	// worker never runs more than its capacity.
	MaxRunningPerHeartbeat = MaxWorkerCapacity
	// MaxForwardedLeaseWait bounds the wait of a lease long-poll this
	// node forwards, so the answer comes back within the node-to-node
	// client's timeout (a shorter poll is harmless: the worker polls
	// again).
	MaxForwardedLeaseWait = peer.CallTimeout - 5*time.Second
	// maxWorkerIDTries bounds the draws of a generated worker id that is
	// already in the ledger.
	maxWorkerIDTries = 8
	// WorkerLeftReason is the reason of a deregistration's WorkerLeft.
	WorkerLeftReason = "deregistered"
)

// capLeaseWait bounds the wait of a lease long-poll this node forwards,
// so the answer comes back within the node-to-node client's timeout (a
// shorter poll is harmless: the worker polls again). A wait that does not
// parse is left for the serving node to refuse.
func capLeaseWait(r *http.Request) {
	q := r.URL.Query()
	// Only a valid wait is cut: one over api.MaxLeaseWait goes on as it
	// came, so the leader refuses it (400) as it would if asked directly.
	if wait, err := time.ParseDuration(q.Get("wait")); err == nil && wait > MaxForwardedLeaseWait && wait <= api.MaxLeaseWait {
		q.Set("wait", MaxForwardedLeaseWait.String())
		r.URL.RawQuery = q.Encode()
	}
}

// workerIDParam reads the {id} of a worker path; a malformed id is a 400.
func workerIDParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	id := r.PathValue("id")
	if err := checkWorkerID(id); err != nil {
		httpx.WriteError(w, err)
		return "", false
	}
	return id, true
}

// unknownWorker is the 404 of a call naming a worker that is not active in
// the region's ledger: the worker registers again.
func (sv *Server) unknownWorker(id string) *httpx.APIError {
	return &httpx.APIError{Status: http.StatusNotFound, Code: api.CodeUnknownWorker,
		Message: fmt.Sprintf("worker %s is not registered with region %s: register again", id, sv.cfg.Region),
		Details: map[string]any{"worker": id}}
}

// activeWorker reads worker id from the ledger and touches its liveness;
// a worker not active there is a 404.
func (sv *Server) activeWorker(id string) (*fsm.WorkerState, error) {
	ws, err := sv.ledgerWorker(id)
	if err != nil {
		return nil, err
	}
	if ws == nil || !ws.Active {
		return nil, sv.unknownWorker(id)
	}
	sv.cfg.Workers.Touch(id)
	return ws, nil
}

// handleHeartbeat is POST /v1/workers/{id}/heartbeat: it renews the
// worker's liveness and tells it what to stop and how hard it may push.
func (sv *Server) handleHeartbeat(w http.ResponseWriter, r *http.Request, c *call) {
	body := c.body
	id, ok := workerIDParam(w, r)
	if !ok {
		return
	}
	var req api.HeartbeatRequest
	if err := httpx.DecodeBytes(body, &req); err != nil {
		httpx.WriteError(w, err)
		return
	}
	if err := checkRunning(req.Running); err != nil {
		httpx.WriteError(w, err)
		return
	}
	if _, err := sv.activeWorker(id); err != nil {
		httpx.WriteError(w, err)
		return
	}
	ids := make([]string, len(req.Running))
	for i, rw := range req.Running {
		ids[i] = rw.Workflow
	}
	wfs, err := sv.ledgerWorkflows(ids)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	sv.workerM.extensions.Add(float64(heldLeases(id, req.Running, wfs)))
	httpx.WriteJSON(w, http.StatusOK, api.HeartbeatResponse{Stop: stopList(id, req.Running, wfs), Recorded: recordedList(id, req.Running, wfs),
		Backpressure: backpressureLevel(sv.cfg.Writer.QueueFill(), sv.dataPlaneFill()), AckWindow: fsm.Duration(sv.cfg.WorkerAckWindow)})
}

// checkRunning refuses a heartbeat's running list that is too long or
// names no workflow.
func checkRunning(running []api.RunningWorkflow) error {
	if len(running) > MaxRunningPerHeartbeat {
		return &httpx.APIError{Status: http.StatusRequestEntityTooLarge, Code: httpx.CodeTooLarge,
			Message: fmt.Sprintf("running lists %d workflows, limit %d", len(running), MaxRunningPerHeartbeat),
			Details: map[string]any{"limit": MaxRunningPerHeartbeat}}
	}
	for i, rw := range running {
		if err := checkWorkflowRef(fmt.Sprintf("running[%d]", i), rw.Workflow, rw.LeaseFence); err != nil {
			return err
		}
	}
	return nil
}

// checkWorkflowRef refuses an empty or over-long workflow id and a lease
// fence of 0 (leases start at 1). prefix names the element of a list
// ("running[3]"), empty for a top-level field.
func checkWorkflowRef(prefix, workflow string, fence uint64) error {
	field := func(name string) string {
		if prefix == "" {
			return name
		}
		return prefix + "." + name
	}
	switch {
	case workflow == "" || len(workflow) > fsm.MaxWorkflowIDBytes:
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: fmt.Sprintf("%s: want a workflow id of 1..%d bytes", field("workflow"), fsm.MaxWorkflowIDBytes),
			Details: map[string]any{"field": field("workflow")}}
	case fence == 0:
		return &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
			Message: fmt.Sprintf("%s: must be at least 1 (the fence of the workflow's lease)", field("lease_fence")),
			Details: map[string]any{"field": field("lease_fence")}}
	}
	return nil
}

// handleLeases is GET /v1/workers/{id}/leases?index=&wait=: it answers the
// worker's leases once the reconciler's view is newer than index, or with
// the current view after wait.
func (sv *Server) handleLeases(w http.ResponseWriter, r *http.Request, c *call) {
	id, ok := workerIDParam(w, r)
	if !ok {
		return
	}
	index, wait, err := parseLeasePoll(r)
	if err != nil {
		httpx.WriteError(w, err)
		return
	}
	if _, err := sv.activeWorker(id); err != nil {
		httpx.WriteError(w, err)
		return
	}
	sv.extendWriteDeadline(w, wait) // the answer comes after the wait
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	v := sv.cfg.Workers.LeaseView(ctx, index)
	sv.cfg.Workers.Touch(id)
	sv.setReadHeaders(w)
	leases := leasesOf(v.Leases[id])
	sv.traceLeases(leases)
	httpx.WriteJSON(w, http.StatusOK, api.LeaseList{Index: v.Index, Leases: leases})
}

// parseLeasePoll reads index= (default 0) and wait= (default
// api.DefaultLeaseWait, at most api.MaxLeaseWait) of a lease long-poll.
func parseLeasePoll(r *http.Request) (uint64, time.Duration, error) {
	q := r.URL.Query()
	var index uint64
	if s := q.Get("index"); s != "" {
		var err error
		if index, err = strconv.ParseUint(s, 10, 64); err != nil {
			return 0, 0, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
				Message: fmt.Sprintf("index %q is not a view index (an unsigned integer)", s), Details: map[string]any{"field": "index"}}
		}
	}
	wait := api.DefaultLeaseWait
	if s := q.Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > api.MaxLeaseWait {
			return 0, 0, &httpx.APIError{Status: http.StatusBadRequest, Code: httpx.CodeBadRequest,
				Message: fmt.Sprintf("wait %q must be a duration from 0s to %s", s, api.MaxLeaseWait), Details: map[string]any{"field": "wait"}}
		}
		wait = d
	}
	return index, wait, nil
}
