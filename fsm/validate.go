package fsm

import (
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Validate checks e against the rules of its fields and the limits: a
// non-zero id and HLC, a known type with a body of that type, well-formed
// identifiers, and the body's own rules. It returns a *FieldError or a
// *LimitError (both errors.Is ErrInvalidEvent). It does not consult any
// state: whether the event is legal now is the Ledger's question.
func (e *Event) Validate() error {
	var v validator
	return e.validate(&v)
}

// validate is Validate with a validator of the caller's. The interface
// call takes the validator's address, which moves a local one to the
// heap: the applier keeps one and saves that allocation per event.
func (e *Event) validate(v *validator) error {
	*v = validator{}
	v.envelope(e)
	if v.err == nil {
		e.Body.validate(v)
	}
	err := v.err
	*v = validator{}
	return err
}

// validator collects the first rule an event breaks.
type validator struct {
	e   *Event
	err error
}

func (v *validator) fail(field, reason string) {
	if v.err == nil {
		v.err = fieldErr(field, reason)
	}
}

func (v *validator) limit(field string, limit, got int) {
	if v.err == nil {
		v.err = &LimitError{Field: field, Limit: limit, Got: got}
	}
}

func (v *validator) envelope(e *Event) {
	v.e = e
	switch {
	case e.ID.IsZero():
		v.fail("id", "zero")
	case !e.Type.Known():
		v.fail("type", fmt.Sprintf("unknown event type %d", uint8(e.Type)))
	case e.Body == nil:
		v.fail("body", "missing")
	case e.Body.EventType() != e.Type:
		v.fail("body", fmt.Sprintf("%s body in a %s event", e.Body.EventType(), e.Type))
	case e.HLC.IsZero():
		v.fail("hlc", "zero")
	}
	v.region("region", e.Region)
	v.name("node", e.Node)
	if e.Type.IsGovernance() {
		if e.JobID != "" {
			v.fail("job_id", fmt.Sprintf("%s events carry no job", e.Type))
		}
		if e.Tenant != "" {
			v.name("tenant", e.Tenant)
		}
		return
	}
	if e.Type.IsJobless() {
		if e.JobID != "" || e.Tenant != "" {
			v.fail("job_id", fmt.Sprintf("%s events carry no job and no tenant", e.Type))
		}
		return
	}
	if _, err := ParseJobID(e.JobID); err != nil && v.err == nil {
		v.fail("job_id", err.Error())
	}
	v.name("tenant", e.Tenant)
	if e.Type.IsControl() && e.Fence == 0 {
		v.fail("fence", "a control event needs a fence of at least 1")
	}
}

// region checks a region code: 1 to MaxRegionBytes lowercase letters and
// digits, starting with a letter (it is part of job ids).
func (v *validator) region(field, s string) {
	if v.err != nil {
		return
	}
	if len(s) > MaxRegionBytes {
		v.limit(field, MaxRegionBytes, len(s))
		return
	}
	if !IsRegion(s) {
		v.fail(field, fmt.Sprintf("%q is not a region code", s))
	}
}

// IsRegion reports whether s is a region code: 1 to MaxRegionBytes
// lowercase letters and digits, starting with a letter.
func IsRegion(s string) bool {
	if len(s) == 0 || len(s) > MaxRegionBytes || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// name checks an identifier: 1 to MaxNameBytes of [A-Za-z0-9._-].
func (v *validator) name(field, s string) {
	if v.err != nil {
		return
	}
	if len(s) > MaxNameBytes {
		v.limit(field, MaxNameBytes, len(s))
		return
	}
	if !IsName(s) {
		v.fail(field, fmt.Sprintf("%q is not a name of [A-Za-z0-9._-]", s))
	}
}

// nameChars is the set [A-Za-z0-9._-] as a 128-bit mask (bit c set for
// ASCII byte c): low word bytes 0-63, high word bytes 64-127.
const (
	nameCharsLo = 0x03ff_6000_0000_0000 // '-' 45, '.' 46, '0'-'9' 48-57
	nameCharsHi = 0x07ff_fffe_87ff_fffe // 'A'-'Z' 65-90, '_' 95, 'a'-'z' 97-122
)

// IsName reports whether s is an identifier (tenant, workflow, worker):
// 1 to MaxNameBytes of [A-Za-z0-9._-].
func IsName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c < 64:
			if nameCharsLo>>c&1 == 0 {
				return false
			}
		case c < 128:
			if nameCharsHi>>(c-64)&1 == 0 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// text checks free text: valid UTF-8 of at most max bytes, may be empty.
func (v *validator) text(field, s string, max int) {
	if v.err != nil {
		return
	}
	if len(s) > max {
		v.limit(field, max, len(s))
		return
	}
	if !utf8.ValidString(s) {
		v.fail(field, "not UTF-8")
	}
}

func (v *validator) stats(field string, s Stats) {
	if len(s) > MaxStats {
		v.limit(field, MaxStats, len(s))
		return
	}
	for i, st := range s {
		v.name(field, st.Name)
		if i > 0 && s[i-1].Name >= st.Name {
			v.fail(field, "names not sorted and unique")
		}
	}
}

func (v *validator) regions(field string, rs []string, min int) {
	if len(rs) > MaxRegionsPerJob {
		v.limit(field, MaxRegionsPerJob, len(rs))
		return
	}
	if len(rs) < min {
		v.fail(field, "empty")
	}
	for i, r := range rs {
		v.region(field, r)
		for _, prev := range rs[:i] {
			if prev == r {
				v.fail(field, fmt.Sprintf("region %q listed twice", r))
			}
		}
	}
}

func (v *validator) workflowSpec(field string, w *WorkflowSpec) {
	if len(w.Name) > MaxNameBytes || !IsName(w.Name) { // the field's name is built only for the error
		v.name(field+".name", w.Name)
	}
	switch {
	case w.Count > MaxWorkflowCount:
		v.limit(field+".count", MaxWorkflowCount, int(w.Count))
	case w.Count == 0:
		v.fail(field+".count", "must be at least 1")
	case w.Duration <= 0:
		v.fail(field+".duration", "must be positive")
	case math.IsNaN(w.Rate) || math.IsInf(w.Rate, 0) || w.Rate < 0:
		v.fail(field+".rate", "must be a finite number >= 0")
	case !(w.FailureRatio >= 0 && w.FailureRatio <= 1):
		v.fail(field+".failure_ratio", "must be in [0, 1]")
	}
}

func (v *validator) jobSpec(s *JobSpec) {
	v.name("spec.tenant", s.Tenant)
	if v.err == nil && s.Tenant != v.e.Tenant {
		v.fail("spec.tenant", "differs from the event's tenant")
	}
	v.text("spec.idempotency_key", s.IdempotencyKey, MaxTextBytes)
	v.regions("spec.regions", s.Regions, 1)
	if s.Timeout <= 0 {
		v.fail("spec.timeout", "must be positive")
	}
	if len(s.Workflows) > MaxWorkflowsPerJob {
		v.limit("spec.workflows", MaxWorkflowsPerJob, len(s.Workflows))
		return
	}
	if len(s.Workflows) == 0 {
		v.fail("spec.workflows", "empty")
	}
	seen := make(map[string]struct{}, len(s.Workflows))
	for i := range s.Workflows {
		v.workflowSpec("spec.workflows", &s.Workflows[i])
		if _, dup := seen[s.Workflows[i].Name]; dup {
			v.fail("spec.workflows", fmt.Sprintf("workflow %q listed twice", s.Workflows[i].Name))
		}
		seen[s.Workflows[i].Name] = struct{}{}
	}
	v.specExt(s)
}

// workflowRef checks a workflow id: within bounds and under the event's job.
func (v *validator) workflowRef(id string) {
	if v.err != nil {
		return
	}
	if len(id) > MaxWorkflowIDBytes {
		v.limit("workflow", MaxWorkflowIDBytes, len(id))
		return
	}
	job := v.e.JobID
	if len(id) <= len(job)+1 || id[len(job)] != '/' || !strings.HasPrefix(id, job) || !utf8.ValidString(id) {
		v.fail("workflow", fmt.Sprintf("%q is not a workflow of job %s", id, v.e.JobID))
	}
}

func (b *JobCreated) validate(v *validator) {
	v.jobSpec(&b.Spec)
	v.regions("assigned_regions", b.AssignedRegions, 1)
	for _, r := range b.AssignedRegions {
		if !contains(b.Spec.Regions, r) {
			v.fail("assigned_regions", fmt.Sprintf("region %q is not in the spec", r))
		}
	}
}

func (b *JobAccepted) validate(v *validator) { v.region("region", b.Region) }

func (b *JobProgressReported) validate(v *validator) {
	v.region("region", b.Region)
	v.stats("stats", b.Stats)
}

func (b *JobCancellationRequested) validate(v *validator) {
	v.text("reason", b.Reason, MaxTextBytes)
	v.text("requestor", b.Requestor, MaxTextBytes)
}

func (b *JobCancellationAcked) validate(v *validator) { v.region("region", b.Region) }

func (b *JobCompleted) validate(v *validator) {
	v.name("final_status", b.FinalStatus)
	v.stats("aggregate.stats", b.Aggregate.Stats)
}

func (b *JobFailed) validate(v *validator) {
	v.text("error", b.Error, MaxTextBytes)
	if b.FailedRegion != "" {
		v.region("failed_region", b.FailedRegion)
	}
}

func (b *JobTimedOut) validate(v *validator) { v.name("timeout_type", b.TimeoutType) }

func (b *WorkflowDispatched) validate(v *validator) {
	v.name("name", b.Name)
	v.workflowSpec("spec", &b.Spec)
	if v.err == nil && b.Spec.Name != b.Name {
		v.fail("spec.name", "differs from the workflow's name")
	}
	if v.err == nil && !isWorkflowID(b.Workflow, v.e.JobID, v.e.Region, b.Name, b.Instance) {
		v.fail("workflow", fmt.Sprintf("%q, want %q", b.Workflow, WorkflowID(v.e.JobID, v.e.Region, b.Name, b.Instance)))
	}
}

func (b *WorkflowLeased) validate(v *validator) {
	v.workflowRef(b.Workflow)
	v.name("worker", b.Worker)
	if b.LeaseFence == 0 {
		v.fail("lease_fence", "must be at least 1")
	}
	if b.LeaseUntilMs < 0 {
		v.fail("lease_until", "negative")
	}
}

func (b *WorkflowProgress) validate(v *validator) {
	v.workflowRef(b.Workflow)
	v.stats("stats", b.Stats)
}

func (b *WorkflowCompleted) validate(v *validator) { v.workflowRef(b.Workflow) }

func (b *WorkflowFailed) validate(v *validator) {
	v.workflowRef(b.Workflow)
	v.text("error", b.Error, MaxTextBytes)
}

func (b *WorkflowRescheduled) validate(v *validator) {
	v.workflowRef(b.Workflow)
	v.name("from_worker", b.FromWorker)
	v.text("reason", b.Reason, MaxTextBytes)
}

func (b *WorkflowCancelled) validate(v *validator) { v.workflowRef(b.Workflow) }

func (b *WorkerJoined) validate(v *validator) {
	v.name("worker", b.Worker)
	if b.Capacity == 0 {
		v.fail("capacity", "must be at least 1")
	}
}

func (b *WorkerLeft) validate(v *validator) {
	v.name("worker", b.Worker)
	v.text("reason", b.Reason, MaxTextBytes)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
