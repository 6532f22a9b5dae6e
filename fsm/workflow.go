package fsm

import (
	"fmt"

	"github.com/strata-ledger/strata/hlc"
)

// WorkflowStatus is a workflow instance's state. Stored in records: never
// change the values.
type WorkflowStatus uint8

// Workflow states: DISPATCHED -> LEASED -> COMPLETED | FAILED | CANCELLED;
// a reschedule returns LEASED to DISPATCHED, a retry FAILED to DISPATCHED
// (so FAILED is final only once no retry follows).
const (
	WorkflowStatusUnknown    WorkflowStatus = 0
	WorkflowStatusDispatched WorkflowStatus = 1
	WorkflowStatusLeased     WorkflowStatus = 2
	WorkflowStatusCompleted  WorkflowStatus = 3
	WorkflowStatusFailed     WorkflowStatus = 4
	WorkflowStatusCancelled  WorkflowStatus = 5
)

var workflowStatusNames = [...]string{"UNKNOWN", "DISPATCHED", "LEASED", "COMPLETED", "FAILED", "CANCELLED"}

// String returns the API name ("LEASED").
func (s WorkflowStatus) String() string {
	if int(s) < len(workflowStatusNames) {
		return workflowStatusNames[s]
	}
	return fmt.Sprintf("WorkflowStatus(%d)", uint8(s))
}

// Terminal reports whether s is COMPLETED, FAILED or CANCELLED.
func (s WorkflowStatus) Terminal() bool {
	return s >= WorkflowStatusCompleted && s <= WorkflowStatusCancelled
}

// MarshalText implements encoding.TextMarshaler.
func (s WorkflowStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *WorkflowStatus) UnmarshalText(b []byte) error {
	for i, n := range workflowStatusNames {
		if i > 0 && n == string(b) {
			*s = WorkflowStatus(i)
			return nil
		}
	}
	return fmt.Errorf("fsm: unknown workflow status %q", b)
}

// WorkflowState is one workflow instance in a regional ledger. Its events
// apply in arrival (Raft) order; an illegal one is rejected, not stored.
type WorkflowState struct {
	ID       string         `json:"workflow"`
	JobID    string         `json:"job_id"`
	Tenant   string         `json:"tenant"`
	Region   string         `json:"region"`
	Name     string         `json:"name"`
	Instance uint32         `json:"instance"`
	Spec     WorkflowSpec   `json:"spec"`
	Status   WorkflowStatus `json:"status"`
	// Worker and LeaseUntilMs describe the current lease (empty when not
	// LEASED). LeaseFence is the highest lease fence issued: kept after a
	// reschedule so the old holder's reports stay fenced out.
	Worker       string        `json:"worker,omitempty"`
	LeaseUntilMs int64         `json:"lease_until,omitempty"`
	LeaseFence   uint64        `json:"lease_fence"`
	Completed    uint64        `json:"completed"`
	Failed       uint64        `json:"failed"`
	Stats        Stats         `json:"stats,omitempty"`
	Error        string        `json:"error,omitempty"`
	Reschedules  uint32        `json:"reschedules"`
	HLC          hlc.Timestamp `json:"hlc"`
	// Retries counts the retries scheduled (the attempt running is
	// Retries+1); RetryHistory holds each retried attempt's failure.
	// NotBeforeMs is the earliest lease of a retry (its backoff), and
	// PriorCompleted/PriorFailed the counters of the attempts before the
	// current one (issue 18 §3, WorkflowRetryScheduled).
	Retries        uint32            `json:"retries,omitempty"`
	NotBeforeMs    int64             `json:"not_before,omitempty"`
	PriorCompleted uint64            `json:"prior_completed,omitempty"`
	PriorFailed    uint64            `json:"prior_failed,omitempty"`
	RetryHistory   []WorkflowAttempt `json:"retry_history,omitempty"`
}

// WorkerState is a worker in a regional ledger's registry.
type WorkerState struct {
	ID       string        `json:"worker"`
	Region   string        `json:"region"`
	Capacity uint32        `json:"capacity"`
	Active   bool          `json:"active"`
	Reason   string        `json:"reason,omitempty"` // why it left
	HLC      hlc.Timestamp `json:"hlc"`
}

// workflowOf returns the workflow id a workflow event refers to.
func workflowOf(b Body) string {
	switch b := b.(type) {
	case *WorkflowDispatched:
		return b.Workflow
	case *WorkflowLeased:
		return b.Workflow
	case *WorkflowProgress:
		return b.Workflow
	case *WorkflowCompleted:
		return b.Workflow
	case *WorkflowFailed:
		return b.Workflow
	case *WorkflowRescheduled:
		return b.Workflow
	case *WorkflowCancelled:
		return b.Workflow
	case *WorkflowRetryScheduled:
		return b.Workflow
	}
	return ""
}

// newWorkflow starts a workflow from its dispatch.
func newWorkflow(e *Event, b *WorkflowDispatched) *WorkflowState {
	return &WorkflowState{
		ID: b.Workflow, JobID: e.JobID, Tenant: e.Tenant, Region: e.Region,
		Name: b.Name, Instance: b.Instance, Spec: b.Spec,
		Status: WorkflowStatusDispatched, HLC: e.HLC,
	}
}

// applyWorkflow returns the workflow after event e, or why e is illegal.
// w is not changed; the result is a new value. workerActive answers
// whether a worker may take a lease.
func applyWorkflow(w *WorkflowState, e *Event, workerActive bool) (*WorkflowState, error) {
	if w.Tenant != e.Tenant {
		return nil, &otherTenantError{kind: "workflow", id: w.ID, unknown: ErrUnknownWorkflow}
	}
	to, from := workflowTarget(e.Type), w.Status
	if !workflowLegal(from, e.Type) {
		return nil, &WorkflowTransitionError{Workflow: w.ID, From: from, To: to, Event: e.Type}
	}
	n := *w
	n.HLC = e.HLC
	n.Status = to
	switch b := e.Body.(type) {
	case *WorkflowLeased:
		if b.LeaseFence <= w.LeaseFence {
			return nil, &FenceError{Subject: w.ID, Fence: b.LeaseFence, Current: w.LeaseFence}
		}
		if !workerActive {
			return nil, fmt.Errorf("workflow %s: lease to %s: %w", w.ID, b.Worker, ErrUnknownWorker)
		}
		n.Worker, n.LeaseUntilMs, n.LeaseFence = b.Worker, b.LeaseUntilMs, b.LeaseFence
	case *WorkflowRescheduled:
		if b.FromWorker != w.Worker {
			return nil, fmt.Errorf("workflow %s: reschedule from %s, lease held by %s: %w", w.ID, b.FromWorker, w.Worker, ErrWorkerMismatch)
		}
		n.Worker, n.LeaseUntilMs = "", 0
		n.Reschedules++
	case *WorkflowProgress, *WorkflowCompleted, *WorkflowFailed:
		if e.Fence != w.LeaseFence {
			return nil, &FenceError{Subject: w.ID, Fence: e.Fence, Current: w.LeaseFence}
		}
		applyReport(&n, b)
	case *WorkflowCancelled:
		n.Worker, n.LeaseUntilMs = "", 0
	case *WorkflowRetryScheduled:
		if err := applyRetry(&n, w, b); err != nil {
			return nil, err
		}
	}
	return &n, nil
}

func applyReport(n *WorkflowState, b Body) {
	switch b := b.(type) {
	case *WorkflowProgress:
		n.Completed = max(n.Completed, b.Completed)
		n.Failed = max(n.Failed, b.Failed)
		if statsWouldChange(n.Stats, b.Stats) {
			n.Stats = mergeMax(n.Stats, b.Stats)
		}
	case *WorkflowFailed:
		n.Error = b.Error
		n.Worker, n.LeaseUntilMs = "", 0
	case *WorkflowCompleted:
		n.Worker, n.LeaseUntilMs = "", 0
	}
}

// workflowLegal is the workflow transition table.
func workflowLegal(from WorkflowStatus, t EventType) bool {
	switch t {
	case TypeWorkflowLeased:
		return from == WorkflowStatusDispatched
	case TypeWorkflowProgress, TypeWorkflowCompleted, TypeWorkflowFailed, TypeWorkflowRescheduled:
		return from == WorkflowStatusLeased
	case TypeWorkflowCancelled:
		return from == WorkflowStatusDispatched || from == WorkflowStatusLeased
	case TypeWorkflowRetryScheduled:
		return from == WorkflowStatusFailed
	}
	return false // a second dispatch is ErrWorkflowExists, checked earlier
}

func workflowTarget(t EventType) WorkflowStatus {
	switch t {
	case TypeWorkflowLeased, TypeWorkflowProgress:
		return WorkflowStatusLeased
	case TypeWorkflowCompleted:
		return WorkflowStatusCompleted
	case TypeWorkflowFailed:
		return WorkflowStatusFailed
	case TypeWorkflowCancelled:
		return WorkflowStatusCancelled
	}
	return WorkflowStatusDispatched
}

// applyWorker returns the worker after a join or leave, or why it is
// illegal. w is nil for a worker never seen.
func applyWorker(w *WorkerState, e *Event) (*WorkerState, error) {
	switch b := e.Body.(type) {
	case *WorkerJoined:
		if w != nil && w.Active {
			return nil, fmt.Errorf("worker %s: %w", b.Worker, ErrWorkerExists)
		}
		return &WorkerState{ID: b.Worker, Region: e.Region, Capacity: b.Capacity, Active: true, HLC: e.HLC}, nil
	case *WorkerLeft:
		if w == nil || !w.Active {
			return nil, fmt.Errorf("worker %s: %w", b.Worker, ErrUnknownWorker)
		}
		n := *w
		n.Active, n.Reason, n.HLC = false, b.Reason, e.HLC
		return &n, nil
	}
	return nil, fmt.Errorf("%w: %s is not a worker event", ErrInvalidEvent, e.Type)
}
