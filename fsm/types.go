package fsm

import "fmt"

// EventType is an event's type. Its value is the one-byte wire code used in
// the binary encoding and in the audit chain. Never change or reuse a code.
type EventType uint8

// Job events (global ledger).
const (
	TypeJobCreated               EventType = 1
	TypeJobAccepted              EventType = 2
	TypeJobProgressReported      EventType = 3
	TypeJobCancellationRequested EventType = 4
	TypeJobCancellationAcked     EventType = 5
	TypeJobCompleted             EventType = 6
	TypeJobFailed                EventType = 7
	TypeJobTimedOut              EventType = 8
)

// Job events of the governance extension (issue 18). Codes 9–15 are
// gov-global's (admission, replay); never reuse one.
const (
	// TypeJobAdmitted admits a held job (JobSpec.Held): it may be
	// dispatched from then on.
	TypeJobAdmitted EventType = 9
)

// Governance events (issue 18): operator and policy changes kept as the
// ledger's governance state (Store.Policy). Codes 80–95 are gov-global's
// (quotas, throttles), 96–111 gov-regional's (breakers, maintenance,
// retries). PolicySet and PolicyDeleted are generic: any feature may keep
// its records with them, in either ledger. They carry no job; a change
// that belongs to a tenant carries it (and joins that tenant's audit
// chain), a fleet-wide one the empty tenant.
const (
	TypePolicySet     EventType = 80
	TypePolicyDeleted EventType = 81
)

// Workflow and worker events (regional ledger).
const (
	TypeWorkflowDispatched  EventType = 32
	TypeWorkflowLeased      EventType = 33
	TypeWorkflowProgress    EventType = 34
	TypeWorkflowCompleted   EventType = 35
	TypeWorkflowFailed      EventType = 36
	TypeWorkflowRescheduled EventType = 37
	TypeWorkflowCancelled   EventType = 38
	TypeWorkerJoined        EventType = 64
	TypeWorkerLeft          EventType = 65
)

// The regional forwarder's replicated position (regional ledger, DESIGN §4).
const TypeForwardMark EventType = 66

var typeNames = [...]string{
	TypeJobCreated:               "JobCreated",
	TypeJobAccepted:              "JobAccepted",
	TypeJobProgressReported:      "JobProgressReported",
	TypeJobCancellationRequested: "JobCancellationRequested",
	TypeJobCancellationAcked:     "JobCancellationAcked",
	TypeJobCompleted:             "JobCompleted",
	TypeJobFailed:                "JobFailed",
	TypeJobTimedOut:              "JobTimedOut",
	TypeWorkflowDispatched:       "WorkflowDispatched",
	TypeWorkflowLeased:           "WorkflowLeased",
	TypeWorkflowProgress:         "WorkflowProgress",
	TypeWorkflowCompleted:        "WorkflowCompleted",
	TypeWorkflowFailed:           "WorkflowFailed",
	TypeWorkflowRescheduled:      "WorkflowRescheduled",
	TypeWorkflowCancelled:        "WorkflowCancelled",
	TypeWorkerJoined:             "WorkerJoined",
	TypeWorkerLeft:               "WorkerLeft",
	TypeForwardMark:              "ForwardMark",
	TypeJobAdmitted:              "JobAdmitted",
	TypePolicySet:                "PolicySet",
	TypePolicyDeleted:            "PolicyDeleted",
}

// EventTypes lists every known type in code order.
func EventTypes() []EventType {
	var ts []EventType
	for t, n := range typeNames {
		if n != "" {
			ts = append(ts, EventType(t))
		}
	}
	return ts
}

// Known reports whether t is a type of this version.
func (t EventType) Known() bool { return int(t) < len(typeNames) && typeNames[t] != "" }

// String returns the type's name ("JobCreated").
func (t EventType) String() string {
	if t.Known() {
		return typeNames[t]
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// IsJob reports whether t is a job event (folded into a job's state).
func (t EventType) IsJob() bool {
	return t >= TypeJobCreated && t <= TypeJobTimedOut || t == TypeJobAdmitted
}

// IsGovernance reports whether t is a governance event (codes 80–111):
// no job, an optional tenant, applied to the governance state.
func (t EventType) IsGovernance() bool { return t >= 80 && t <= 111 && t.Known() }

// IsWorkflow reports whether t is a workflow event.
func (t EventType) IsWorkflow() bool {
	return t >= TypeWorkflowDispatched && t <= TypeWorkflowCancelled
}

// IsWorker reports whether t is a worker registry event.
func (t EventType) IsWorker() bool { return t == TypeWorkerJoined || t == TypeWorkerLeft }

// IsJobless reports whether events of type t carry no job and no tenant:
// worker events and ForwardMark. They form the audit chain of the empty
// tenant.
func (t EventType) IsJobless() bool { return t.IsWorker() || t == TypeForwardMark }

// IsControl reports whether t is a control operation on a job: its fence
// is checked and, when it takes effect, raises the job's fence.
func (t EventType) IsControl() bool { return t == TypeJobCreated || t.IsDecisive() }

// IsDecisive reports whether t decides a job's outcome: the events among
// which conflicts are resolved (cancel requested, completed, failed, timed
// out).
func (t EventType) IsDecisive() bool {
	switch t {
	case TypeJobCancellationRequested, TypeJobCompleted, TypeJobFailed, TypeJobTimedOut:
		return true
	}
	return false
}

// MarshalText implements encoding.TextMarshaler (JSON: the type's name).
func (t EventType) MarshalText() ([]byte, error) {
	if !t.Known() {
		return nil, fmt.Errorf("%w: unknown event type %d", ErrInvalidEvent, uint8(t))
	}
	return []byte(typeNames[t]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (t *EventType) UnmarshalText(b []byte) error {
	p, err := ParseEventType(string(b))
	if err != nil {
		return err
	}
	*t = p
	return nil
}

// ParseEventType reads a type's name.
func ParseEventType(s string) (EventType, error) {
	for i, n := range typeNames {
		if n != "" && n == s {
			return EventType(i), nil
		}
	}
	return 0, fieldErr("type", fmt.Sprintf("unknown event type %q", s))
}

// newBody returns a zero body of type t, or nil for an unknown type.
func newBody(t EventType) Body {
	switch t {
	case TypeJobCreated:
		return new(JobCreated)
	case TypeJobAccepted:
		return new(JobAccepted)
	case TypeJobProgressReported:
		return new(JobProgressReported)
	case TypeJobCancellationRequested:
		return new(JobCancellationRequested)
	case TypeJobCancellationAcked:
		return new(JobCancellationAcked)
	case TypeJobCompleted:
		return new(JobCompleted)
	case TypeJobFailed:
		return new(JobFailed)
	case TypeJobTimedOut:
		return new(JobTimedOut)
	case TypeWorkflowDispatched:
		return new(WorkflowDispatched)
	case TypeWorkflowLeased:
		return new(WorkflowLeased)
	case TypeWorkflowProgress:
		return new(WorkflowProgress)
	case TypeWorkflowCompleted:
		return new(WorkflowCompleted)
	case TypeWorkflowFailed:
		return new(WorkflowFailed)
	case TypeWorkflowRescheduled:
		return new(WorkflowRescheduled)
	case TypeWorkflowCancelled:
		return new(WorkflowCancelled)
	case TypeWorkerJoined:
		return new(WorkerJoined)
	case TypeWorkerLeft:
		return new(WorkerLeft)
	case TypeForwardMark:
		return new(ForwardMark)
	case TypeJobAdmitted:
		return new(JobAdmitted)
	case TypePolicySet:
		return new(PolicySet)
	case TypePolicyDeleted:
		return new(PolicyDeleted)
	}
	return nil
}
