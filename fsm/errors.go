package fsm

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers branch on them with errors.Is; the typed errors
// below wrap them with the details.
var (
	// ErrMalformed: bytes that do not decode (truncated, trailing bytes,
	// non-minimal varint, unknown version or type).
	ErrMalformed = errors.New("fsm: malformed encoding")
	// ErrInvalidEvent: an event that decodes but breaks a rule of its
	// fields (see FieldError). Never stored.
	ErrInvalidEvent = errors.New("fsm: invalid event")
	// ErrLimit: a count or size over a named limit (see LimitError). The
	// HTTP layer maps it to 413.
	ErrLimit = errors.New("fsm: over limit")

	// ErrEventConflict: an event id already stored for the event's tenant
	// with other content. Rejected: an id is an idempotency key, never
	// reused within a tenant (ids are scoped by tenant: another tenant's
	// event with the same id neither conflicts nor is a duplicate).
	ErrEventConflict = errors.New("fsm: event id already stored with different content")
	// ErrUnknownJob: a job event for a job with no stored JobCreated.
	ErrUnknownJob = errors.New("fsm: unknown job")
	// ErrJobExists: a second JobCreated for a stored job id. Job ids are
	// one space over all tenants, so a job id of another tenant is refused
	// too, with the same message (it names no tenant).
	ErrJobExists = errors.New("fsm: job already exists")
	// ErrUnknownRegion: a job event naming a region the job is not
	// assigned to.
	ErrUnknownRegion = errors.New("fsm: region not assigned to the job")
	// ErrTenantMismatch: an event whose tenant is not its job's or
	// workflow's tenant. A job (or workflow) event naming another tenant's
	// job (or workflow) is rejected with an error that reads exactly as an
	// unknown job's (workflow's) and matches ErrUnknownJob
	// (ErrUnknownWorkflow) first, so nothing tells the sender that the id
	// exists; errors.Is(err, ErrTenantMismatch) also holds, for callers in
	// this process. A WorkflowDispatched naming another tenant's job
	// matches ErrTenantMismatch alone, without naming that tenant.
	ErrTenantMismatch = errors.New("fsm: tenant does not match")
	// ErrPrecedesCreation: a job event that orders before its JobCreated.
	ErrPrecedesCreation = errors.New("fsm: event orders before the job's creation")

	// ErrTerminal: absorbed, the job is in a terminal state.
	ErrTerminal = errors.New("fsm: job is in a terminal state")
	// ErrIllegalTransition: the event is not allowed from the current
	// state (see TransitionError, WorkflowTransitionError).
	ErrIllegalTransition = errors.New("fsm: illegal transition")
	// ErrStaleFence: a fence lower than the current one (see FenceError).
	ErrStaleFence = errors.New("fsm: stale fence")

	// ErrUnknownWorkflow: a workflow event for a workflow never dispatched.
	ErrUnknownWorkflow = errors.New("fsm: unknown workflow")
	// ErrWorkflowExists: a second WorkflowDispatched for a workflow id.
	ErrWorkflowExists = errors.New("fsm: workflow already dispatched")
	// ErrUnknownWorker: a lease to, or a leave of, a worker that is not
	// registered and active.
	ErrUnknownWorker = errors.New("fsm: unknown worker")
	// ErrWorkerExists: a join of a worker that is already active.
	ErrWorkerExists = errors.New("fsm: worker already active")
	// ErrWorkerMismatch: a reschedule naming a worker that does not hold
	// the lease.
	ErrWorkerMismatch = errors.New("fsm: worker does not hold the lease")

	// ErrNotQueued: absorbed, a JobAdmitted of a job that is not held or
	// already admitted.
	ErrNotQueued = errors.New("fsm: job is not waiting for admission")
	// ErrOverQuota: a JobAdmitted rejected because the job's quota has
	// no room (Config.Admission).
	ErrOverQuota = errors.New("fsm: over quota")
	// ErrUnknownPolicy: a PolicyDeleted of a record that does not exist
	// (or belongs to another tenant).
	ErrUnknownPolicy = errors.New("fsm: unknown policy")

	// ErrNotFound: a read of something absent (or of another tenant).
	ErrNotFound = errors.New("fsm: not found")
	// ErrChainBroken: the audit chain does not verify (see ChainError).
	ErrChainBroken = errors.New("fsm: audit chain broken")
	// ErrSnapshot: a snapshot that is not ours, damaged or inconsistent.
	ErrSnapshot = errors.New("fsm: bad snapshot")
	// ErrInvalidJobID: a string that is not a job id.
	ErrInvalidJobID = errors.New("fsm: invalid job id")
	// ErrInvalidCursor: a list cursor this ledger did not hand out.
	ErrInvalidCursor = errors.New("fsm: invalid cursor")
	// ErrClockStalled: the job id generator's clock did not advance past
	// a millisecond whose sequence numbers were used up.
	ErrClockStalled = errors.New("fsm: clock did not advance")
)

// FieldError names the field of an event (or record) that breaks a rule.
// errors.Is(err, ErrInvalidEvent) holds.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("fsm: invalid event: %s: %s", e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidEvent) hold.
func (e *FieldError) Unwrap() error { return ErrInvalidEvent }

func fieldErr(field, reason string) error { return &FieldError{Field: field, Reason: reason} }

// LimitError reports a field over one of the named limits. errors.Is holds
// for both ErrLimit and ErrInvalidEvent.
type LimitError struct {
	Field string
	Limit int
	Got   int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("fsm: over limit: %s is %d, limit %d", e.Field, e.Got, e.Limit)
}

// Unwrap makes errors.Is hold for ErrLimit and ErrInvalidEvent.
func (e *LimitError) Unwrap() []error { return []error{ErrLimit, ErrInvalidEvent} }

// otherTenantError rejects an event naming a job or workflow (kind) of
// another tenant. Its text is the one of an unknown job or workflow,
// "<kind> <id>: <unknown's text>", and it unwraps to unknown first, so a
// result code or HTTP status derived from the first matching sentinel is
// the unknown one too; ErrTenantMismatch follows, for callers in this
// process that need to tell the two apart. Neither the other tenant nor
// the existence of the id shows (issue 17).
type otherTenantError struct {
	kind, id string
	unknown  error // ErrUnknownJob or ErrUnknownWorkflow
}

func (e *otherTenantError) Error() string { return e.kind + " " + e.id + ": " + e.unknown.Error() }

// Unwrap makes errors.Is hold for the unknown sentinel and ErrTenantMismatch.
func (e *otherTenantError) Unwrap() []error { return []error{e.unknown, ErrTenantMismatch} }

// TransitionError is an event a job's state does not allow: it names the
// state the job is in and the state the event asked for.
// errors.Is(err, ErrIllegalTransition) holds.
type TransitionError struct {
	JobID string
	From  JobStatus
	To    JobStatus
	Event EventType
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("fsm: job %s: illegal transition %s -> %s by %s", e.JobID, e.From, e.To, e.Event)
}

// Unwrap makes errors.Is(err, ErrIllegalTransition) hold.
func (e *TransitionError) Unwrap() error { return ErrIllegalTransition }

// WorkflowTransitionError is TransitionError for a workflow.
type WorkflowTransitionError struct {
	Workflow string
	From     WorkflowStatus
	To       WorkflowStatus
	Event    EventType
}

func (e *WorkflowTransitionError) Error() string {
	return fmt.Sprintf("fsm: workflow %s: illegal transition %s -> %s by %s", e.Workflow, e.From, e.To, e.Event)
}

// Unwrap makes errors.Is(err, ErrIllegalTransition) hold.
func (e *WorkflowTransitionError) Unwrap() error { return ErrIllegalTransition }

// FenceError is an event whose fence is not the one in force: a control
// event below the job's fence, or a workflow report whose lease fence is
// not the current lease's. errors.Is(err, ErrStaleFence) holds.
type FenceError struct {
	Subject string // job or workflow id
	Fence   uint64 // the event's
	Current uint64 // the one in force
}

func (e *FenceError) Error() string {
	return fmt.Sprintf("fsm: %s: stale fence %d, current %d", e.Subject, e.Fence, e.Current)
}

// Unwrap makes errors.Is(err, ErrStaleFence) hold.
func (e *FenceError) Unwrap() error { return ErrStaleFence }

// ChainError names the first link of a tenant's audit chain that does not
// verify. errors.Is(err, ErrChainBroken) holds.
type ChainError struct {
	Tenant  string
	Seq     uint64
	EventID EventID
	JobID   string
	Reason  string
}

func (e *ChainError) Error() string {
	return fmt.Sprintf("fsm: audit chain of tenant %q broken at seq %d (event %s, job %s): %s",
		e.Tenant, e.Seq, e.EventID, e.JobID, e.Reason)
}

// Unwrap makes errors.Is(err, ErrChainBroken) hold.
func (e *ChainError) Unwrap() error { return ErrChainBroken }
