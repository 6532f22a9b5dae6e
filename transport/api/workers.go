package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// The worker control plane (DESIGN §9, §10): a worker registers with a
// manager of its region, heartbeats, long-polls for its leases and reports
// each leased workflow's progress and end. Workers never take part in a
// commit: every call here returns as soon as the manager has done its part.

// Backpressure levels returned on a heartbeat (DESIGN §10, AD-37).
const (
	BackpressureNone     = "NONE"
	BackpressureThrottle = "THROTTLE"
	BackpressureBatch    = "BATCH"
	BackpressureReject   = "REJECT"
)

// RegisterWorkerRequest is the body of POST /v1/workers. An empty WorkerID
// asks the manager to choose one. Registering an id that is already active
// with the same region and capacity is answered 200 with the same worker.
type RegisterWorkerRequest struct {
	WorkerID string `json:"worker_id,omitempty"`
	Region   string `json:"region"`
	Capacity uint32 `json:"capacity"`
}

// RegisterWorkerResponse is the answer to a registration: the worker's id
// and the timings it must keep.
type RegisterWorkerResponse struct {
	WorkerID string `json:"worker_id"`
	Region   string `json:"region"`
	Capacity uint32 `json:"capacity"`
	// AckWindow is how long the worker may stay silent before it loses
	// its leases; HeartbeatInterval is how often it should heartbeat.
	AckWindow         fsm.Duration `json:"ack_window"`
	HeartbeatInterval fsm.Duration `json:"heartbeat_interval"`
	// DataPlane is where and how to send progress frames (the progress
	// data plane, transport/progress); absent when the answering manager
	// has no data_plane_addr.
	DataPlane *DataPlaneAccess `json:"data_plane,omitempty"`
	WriteResponse
}

// DataPlaneAccess is a registration's access to the progress data plane:
// the answering manager's addresses and the registration's key. The key
// is secret: it is only ever sent in the answer to the worker's own
// registration, and works against every manager of the region (each
// derives it) until the worker registers again.
type DataPlaneAccess struct {
	UDPAddr string `json:"udp_addr"`
	TCPAddr string `json:"tcp_addr"`
	KeyID   uint32 `json:"key_id"`
	// Key is the frames' HMAC key, base64 (standard, padded).
	Key string `json:"key"`
}

// RunningWorkflow names a workflow a worker is running under a lease.
type RunningWorkflow struct {
	Workflow   string `json:"workflow"`
	LeaseFence uint64 `json:"lease_fence"`
}

// HeartbeatRequest is the body of POST /v1/workers/{id}/heartbeat: what
// the worker is running right now.
type HeartbeatRequest struct {
	Running []RunningWorkflow `json:"running"`
}

// HeartbeatResponse tells the worker which of its running workflows to stop
// (cancelled, rescheduled away, or no longer leased to it under that fence)
// and how hard it may push.
type HeartbeatResponse struct {
	Stop         []string     `json:"stop"`
	Backpressure string       `json:"backpressure"`
	AckWindow    fsm.Duration `json:"ack_window"`
	// Recorded is the regional ledger's counters of the running
	// workflows the worker still holds: a worker sending progress frames
	// learns from them whether they arrive.
	Recorded []RecordedProgress `json:"recorded,omitempty"`
}

// RecordedProgress is a workflow's counters as the regional ledger holds
// them.
type RecordedProgress struct {
	Workflow   string `json:"workflow"`
	LeaseFence uint64 `json:"lease_fence"`
	Completed  uint64 `json:"completed"`
	Failed     uint64 `json:"failed"`
}

// Lease is one workflow leased to a worker.
type Lease struct {
	Workflow   string           `json:"workflow"`
	JobID      string           `json:"job_id"`
	Tenant     string           `json:"tenant"`
	Region     string           `json:"region"`
	Name       string           `json:"name"`
	Instance   uint32           `json:"instance"`
	Spec       fsm.WorkflowSpec `json:"spec"`
	LeaseFence uint64           `json:"lease_fence"`
	// LeaseUntil is when the lease was first due (Unix ms); a worker keeps
	// it by heartbeating, not by renewing it.
	LeaseUntil int64 `json:"lease_until"`
	// Completed and Failed are the counters already recorded, so a worker
	// that takes over a rescheduled workflow continues from them.
	Completed uint64 `json:"completed"`
	Failed    uint64 `json:"failed"`
	// Attempt is the workflow's attempt under its job's retry policy, 1
	// for its first run (issue 18 §3).
	Attempt uint32 `json:"attempt,omitempty"`
	// Traceparent is the trace context the job was submitted under (W3C;
	// empty: none): a worker's execution span joins that trace.
	Traceparent string `json:"traceparent,omitempty"`
}

// LeaseList is the answer of GET /v1/workers/{id}/leases: every workflow
// leased to the worker as of Index (the manager's view of its ledger).
type LeaseList struct {
	Index  uint64  `json:"index"`
	Leases []Lease `json:"leases"`
}

// ProgressUpdate is one workflow's cumulative counters.
type ProgressUpdate struct {
	Workflow   string    `json:"workflow"`
	LeaseFence uint64    `json:"lease_fence"`
	Completed  uint64    `json:"completed"`
	Failed     uint64    `json:"failed"`
	Stats      fsm.Stats `json:"stats,omitempty"`
}

// ProgressRequest is the body of POST /v1/workers/{id}/progress.
type ProgressRequest struct {
	Updates []ProgressUpdate `json:"updates"`
}

// WorkflowEndRequest is the body of POST /v1/workers/{id}/complete and
// /fail. Error is required for a failure. Completed and Failed, when set,
// are recorded as a last progress report before the end.
type WorkflowEndRequest struct {
	Workflow   string    `json:"workflow"`
	LeaseFence uint64    `json:"lease_fence"`
	Completed  uint64    `json:"completed"`
	Failed     uint64    `json:"failed"`
	Stats      fsm.Stats `json:"stats,omitempty"`
	Error      string    `json:"error,omitempty"`
}

// WorkerReportResponse answers progress, complete and fail: in request
// order, one result per workflow whose outcome is known: "applied",
// "duplicate" (already recorded under this lease), or "rejected" with the
// ledger's error code, e.g. "stale_fence" when the lease moved on,
// "worker_mismatch" when another worker holds it, "unknown_workflow",
// "illegal_transition" when it is no longer leased. A workflow without a
// result was acknowledged below REGIONAL (durability local or none): its
// report is written and climbs to the ledger.
type WorkerReportResponse struct {
	Results []WorkerReportResult `json:"results"`
	WriteResponse
}

// WorkerReportResult is the outcome of one workflow's report.
type WorkerReportResult struct {
	Workflow string `json:"workflow"`
	Outcome  string `json:"outcome"`
	Code     string `json:"code,omitempty"`
	Message  string `json:"message,omitempty"`
}

// workerPath is /v1/workers/{id}[/suffix].
func workerPath(id, suffix string) string {
	p := "/v1/workers/" + url.PathEscape(id)
	if suffix != "" {
		p += "/" + suffix
	}
	return p
}

// RegisterWorker registers a worker (POST /v1/workers).
func (c *Client) RegisterWorker(ctx context.Context, req *RegisterWorkerRequest) (*RegisterWorkerResponse, ResponseMeta, error) {
	var out RegisterWorkerResponse
	meta, err := c.do(ctx, request{method: http.MethodPost, path: "/v1/workers", body: req,
		retrySafe: req.WorkerID != ""}, &out)
	return result(&out, meta, err)
}

// DeregisterWorker tells the managers the worker is leaving
// (DELETE /v1/workers/{id}); its leases go back to the region.
func (c *Client) DeregisterWorker(ctx context.Context, id string) (ResponseMeta, error) {
	if err := checkID("worker id", id); err != nil {
		return ResponseMeta{}, err
	}
	return c.do(ctx, request{method: http.MethodDelete, path: workerPath(id, ""), retrySafe: true}, nil)
}

// Heartbeat renews the worker's liveness and learns what to stop.
func (c *Client) Heartbeat(ctx context.Context, id string, req *HeartbeatRequest) (*HeartbeatResponse, ResponseMeta, error) {
	if err := checkID("worker id", id); err != nil {
		return nil, ResponseMeta{}, err
	}
	var out HeartbeatResponse
	meta, err := c.do(ctx, request{method: http.MethodPost, path: workerPath(id, "heartbeat"), body: req, retrySafe: true}, &out)
	return result(&out, meta, err)
}

// Leases long-polls for the worker's leases: the manager answers once its
// view is newer than index, or after wait (at most MaxLeaseWait).
func (c *Client) Leases(ctx context.Context, id string, index uint64, wait time.Duration) (*LeaseList, ResponseMeta, error) {
	if err := checkID("worker id", id); err != nil {
		return nil, ResponseMeta{}, err
	}
	if wait < 0 || wait > MaxLeaseWait {
		return nil, ResponseMeta{}, fmt.Errorf("lease wait %s: want 0 (the manager's default, %s) up to %s", wait, DefaultLeaseWait, MaxLeaseWait)
	}
	q := url.Values{"index": {strconv.FormatUint(index, 10)}}
	poll := DefaultLeaseWait
	if wait > 0 {
		q.Set("wait", wait.String())
		poll = wait
	}
	var out LeaseList
	// The attempt's timeout covers the manager's wait (its default when
	// none is sent) on top of the ordinary round trip.
	meta, err := c.do(ctx, request{method: http.MethodGet, path: workerPath(id, "leases"), query: q, retrySafe: true,
		timeout: poll + c.timeout}, &out)
	return result(&out, meta, err)
}

// ReportProgress records cumulative progress of leased workflows.
func (c *Client) ReportProgress(ctx context.Context, id string, req *ProgressRequest, wo WriteOptions) (*WorkerReportResponse, ResponseMeta, error) {
	return c.workerWrite(ctx, id, "progress", req, wo)
}

// CompleteWorkflow ends a leased workflow as completed.
func (c *Client) CompleteWorkflow(ctx context.Context, id string, req *WorkflowEndRequest, wo WriteOptions) (*WorkerReportResponse, ResponseMeta, error) {
	return c.workerWrite(ctx, id, "complete", req, wo)
}

// FailWorkflow ends a leased workflow as failed.
func (c *Client) FailWorkflow(ctx context.Context, id string, req *WorkflowEndRequest, wo WriteOptions) (*WorkerReportResponse, ResponseMeta, error) {
	return c.workerWrite(ctx, id, "fail", req, wo)
}

// workerWrite posts a report; reports are fenced by lease and cumulative,
// so repeating one on another node is safe.
func (c *Client) workerWrite(ctx context.Context, id, suffix string, body any, wo WriteOptions) (*WorkerReportResponse, ResponseMeta, error) {
	q, err := writeQuery(wo)
	if err == nil {
		err = checkID("worker id", id)
	}
	if err != nil {
		return nil, ResponseMeta{}, err
	}
	var out WorkerReportResponse
	meta, err := c.do(ctx, request{method: http.MethodPost, path: workerPath(id, suffix), query: q, body: body, retrySafe: true}, &out)
	return result(&out, meta, err)
}

// Lease long-poll bounds: a manager waits DefaultLeaseWait when the call
// names no wait, and refuses a wait above MaxLeaseWait.
const (
	DefaultLeaseWait = 10 * time.Second
	MaxLeaseWait     = 30 * time.Second
)

// CodeUnknownWorker is the error code of a worker call naming a worker the
// region's ledger does not hold as active: the worker registers again.
const CodeUnknownWorker = "unknown_worker"
