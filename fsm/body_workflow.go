package fsm

import (
	"strconv"
	"strings"
)

// WorkflowID returns the id of a workflow instance:
// {job_id}/{region}/{name}/{instance}.
func WorkflowID(jobID, region, name string, instance uint32) string {
	return jobID + "/" + region + "/" + name + "/" + strconv.FormatUint(uint64(instance), 10)
}

// isWorkflowID reports whether id is WorkflowID(jobID, region, name,
// instance), without building it (an allocation per dispatch).
func isWorkflowID(id, jobID, region, name string, instance uint32) bool {
	var buf [10]byte
	num := strconv.AppendUint(buf[:0], uint64(instance), 10)
	for _, part := range [...]string{jobID, "/", region, "/", name, "/"} {
		rest, ok := strings.CutPrefix(id, part)
		if !ok {
			return false
		}
		id = rest
	}
	return id == string(num)
}

// WorkflowDispatched creates a workflow instance in the regional ledger:
// DISPATCHED. Workflow must equal WorkflowID(job id, origin region, Name,
// Instance).
type WorkflowDispatched struct {
	Workflow string       `json:"workflow"`
	Name     string       `json:"name"`
	Instance uint32       `json:"instance"`
	Spec     WorkflowSpec `json:"spec"`
}

// WorkflowLeased leases a dispatched workflow to a worker until
// LeaseUntilMs (Unix ms). LeaseFence must exceed every earlier lease fence
// of the workflow; the worker's reports carry it as their envelope fence.
type WorkflowLeased struct {
	Workflow     string `json:"workflow"`
	Worker       string `json:"worker"`
	LeaseUntilMs int64  `json:"lease_until"`
	LeaseFence   uint64 `json:"lease_fence"`
}

// WorkflowProgress carries the workflow's cumulative counters (aggregated
// over its worker's reports).
type WorkflowProgress struct {
	Workflow  string `json:"workflow"`
	Completed uint64 `json:"completed"`
	Failed    uint64 `json:"failed"`
	Stats     Stats  `json:"stats,omitempty"`
}

// WorkflowCompleted: the leased workflow finished.
type WorkflowCompleted struct {
	Workflow string `json:"workflow"`
}

// WorkflowFailed: the leased workflow failed.
type WorkflowFailed struct {
	Workflow string `json:"workflow"`
	Error    string `json:"error"`
}

// WorkflowRescheduled takes the lease from FromWorker and returns the
// workflow to DISPATCHED.
type WorkflowRescheduled struct {
	Workflow   string `json:"workflow"`
	FromWorker string `json:"from_worker"`
	Reason     string `json:"reason"`
}

// WorkflowCancelled: the workflow was stopped by a job cancellation.
type WorkflowCancelled struct {
	Workflow string `json:"workflow"`
}

// WorkerJoined registers (or re-registers) a worker with its capacity in
// concurrent workflows.
type WorkerJoined struct {
	Worker   string `json:"worker"`
	Capacity uint32 `json:"capacity"`
}

// WorkerLeft deregisters an active worker.
type WorkerLeft struct {
	Worker string `json:"worker"`
	Reason string `json:"reason"`
}

// EventType implementations.
func (*WorkflowDispatched) EventType() EventType  { return TypeWorkflowDispatched }
func (*WorkflowLeased) EventType() EventType      { return TypeWorkflowLeased }
func (*WorkflowProgress) EventType() EventType    { return TypeWorkflowProgress }
func (*WorkflowCompleted) EventType() EventType   { return TypeWorkflowCompleted }
func (*WorkflowFailed) EventType() EventType      { return TypeWorkflowFailed }
func (*WorkflowRescheduled) EventType() EventType { return TypeWorkflowRescheduled }
func (*WorkflowCancelled) EventType() EventType   { return TypeWorkflowCancelled }
func (*WorkerJoined) EventType() EventType        { return TypeWorkerJoined }
func (*WorkerLeft) EventType() EventType          { return TypeWorkerLeft }

func (b *WorkflowDispatched) encode(e *encoder) {
	e.str("workflow", b.Workflow, MaxWorkflowIDBytes)
	e.str("name", b.Name, MaxNameBytes)
	e.u32(b.Instance)
	e.workflowSpec(&b.Spec)
}

func (b *WorkflowDispatched) decode(r *reader) {
	b.Workflow = r.str("workflow", MaxWorkflowIDBytes)
	b.Name = r.str("name", MaxNameBytes)
	b.Instance = r.u32("instance")
	r.workflowSpec(&b.Spec)
}

func (b *WorkflowLeased) encode(e *encoder) {
	e.str("workflow", b.Workflow, MaxWorkflowIDBytes)
	e.str("worker", b.Worker, MaxNameBytes)
	e.varint(b.LeaseUntilMs)
	e.uvarint(b.LeaseFence)
}

func (b *WorkflowLeased) decode(r *reader) {
	b.Workflow = r.str("workflow", MaxWorkflowIDBytes)
	b.Worker = r.str("worker", MaxNameBytes)
	b.LeaseUntilMs = r.varint("lease_until")
	b.LeaseFence = r.uvarint("lease_fence")
}

func (b *WorkflowProgress) encode(e *encoder) {
	e.str("workflow", b.Workflow, MaxWorkflowIDBytes)
	e.uvarint(b.Completed)
	e.uvarint(b.Failed)
	e.stats("stats", b.Stats)
}

func (b *WorkflowProgress) decode(r *reader) {
	b.Workflow = r.str("workflow", MaxWorkflowIDBytes)
	b.Completed = r.uvarint("completed")
	b.Failed = r.uvarint("failed")
	b.Stats = r.stats("stats")
}

func (b *WorkflowCompleted) encode(e *encoder) { e.str("workflow", b.Workflow, MaxWorkflowIDBytes) }
func (b *WorkflowCompleted) decode(r *reader)  { b.Workflow = r.str("workflow", MaxWorkflowIDBytes) }

func (b *WorkflowFailed) encode(e *encoder) {
	e.str("workflow", b.Workflow, MaxWorkflowIDBytes)
	e.str("error", b.Error, MaxTextBytes)
}

func (b *WorkflowFailed) decode(r *reader) {
	b.Workflow = r.str("workflow", MaxWorkflowIDBytes)
	b.Error = r.str("error", MaxTextBytes)
}

func (b *WorkflowRescheduled) encode(e *encoder) {
	e.str("workflow", b.Workflow, MaxWorkflowIDBytes)
	e.str("from_worker", b.FromWorker, MaxNameBytes)
	e.str("reason", b.Reason, MaxTextBytes)
}

func (b *WorkflowRescheduled) decode(r *reader) {
	b.Workflow = r.str("workflow", MaxWorkflowIDBytes)
	b.FromWorker = r.str("from_worker", MaxNameBytes)
	b.Reason = r.str("reason", MaxTextBytes)
}

func (b *WorkflowCancelled) encode(e *encoder) { e.str("workflow", b.Workflow, MaxWorkflowIDBytes) }
func (b *WorkflowCancelled) decode(r *reader)  { b.Workflow = r.str("workflow", MaxWorkflowIDBytes) }

func (b *WorkerJoined) encode(e *encoder) {
	e.str("worker", b.Worker, MaxNameBytes)
	e.u32(b.Capacity)
}

func (b *WorkerJoined) decode(r *reader) {
	b.Worker = r.str("worker", MaxNameBytes)
	b.Capacity = r.u32("capacity")
}

func (b *WorkerLeft) encode(e *encoder) {
	e.str("worker", b.Worker, MaxNameBytes)
	e.str("reason", b.Reason, MaxTextBytes)
}

func (b *WorkerLeft) decode(r *reader) {
	b.Worker = r.str("worker", MaxNameBytes)
	b.Reason = r.str("reason", MaxTextBytes)
}
