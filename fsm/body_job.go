package fsm

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/strata-ledger/strata/hlc"
)

// Duration is a time.Duration that reads and writes as a Go duration
// string in JSON ("10m", "30s") and as nanoseconds in binary.
type Duration time.Duration

// String renders d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	if len(b) > 64 {
		return fieldErr("duration", "too long")
	}
	p, err := time.ParseDuration(string(b))
	if err != nil {
		return fieldErr("duration", err.Error())
	}
	*d = Duration(p)
	return nil
}

func (e *encoder) duration(d Duration) { e.uvarint(uint64(d)) } // validated >= 0

func (r *reader) duration(what string) Duration {
	v := r.uvarint(what)
	if v > math.MaxInt64 {
		r.fail(what + ": overflows int64")
		return 0
	}
	return Duration(v)
}

// Stat is one named cumulative counter of a progress report.
type Stat struct {
	Name  string
	Value uint64
}

// Stats are cumulative counters, sorted by name, names unique. In JSON they
// are an object {"requests": 120, ...}. Merging two reports takes the
// maximum per name, so a lost or repeated report is harmless.
type Stats []Stat

// Get returns the value of name, 0 if absent.
func (s Stats) Get(name string) uint64 {
	i, ok := slices.BinarySearchFunc(s, name, func(x Stat, n string) int { return strings.Compare(x.Name, n) })
	if !ok {
		return 0
	}
	return s[i].Value
}

// MarshalJSON writes an object with names in order.
func (s Stats) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, st := range s {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(st.Name)
		if err != nil {
			return nil, err
		}
		b = append(b, k...)
		b = append(b, ':')
		b = fmt.Appendf(b, "%d", st.Value)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads an object; the result is sorted by name.
func (s *Stats) UnmarshalJSON(b []byte) error {
	var m map[string]uint64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if len(m) > MaxStats {
		return &LimitError{Field: "stats", Limit: MaxStats, Got: len(m)}
	}
	out := make(Stats, 0, len(m))
	for k, v := range m {
		out = append(out, Stat{Name: k, Value: v})
	}
	slices.SortFunc(out, func(a, b Stat) int { return strings.Compare(a.Name, b.Name) })
	if len(out) == 0 {
		out = nil
	}
	*s = out
	return nil
}

func (e *encoder) stats(field string, s Stats) {
	e.count(field, len(s), MaxStats)
	for _, st := range s {
		e.str(field, st.Name, MaxNameBytes)
		e.uvarint(st.Value)
	}
}

func (r *reader) stats(what string) Stats {
	n := r.count(what, MaxStats, 2)
	if n == 0 {
		return nil
	}
	s := make(Stats, n)
	for i := range s {
		s[i] = Stat{Name: r.str(what, MaxNameBytes), Value: r.uvarint(what)}
	}
	return s
}

// WorkflowSpec is one workflow of a job (DESIGN §9): dispatched to every
// region of the job, Count instances per region.
type WorkflowSpec struct {
	Name         string   `json:"name"`
	Count        uint32   `json:"count"`
	Duration     Duration `json:"duration"`
	Rate         float64  `json:"rate"`          // simulated requests per second
	FailureRatio float64  `json:"failure_ratio"` // in [0, 1]
}

// minWorkflowSpecBytes is the smallest encoding of a WorkflowSpec.
const minWorkflowSpecBytes = 1 + 1 + 1 + 8 + 8

func (e *encoder) workflowSpec(w *WorkflowSpec) {
	e.str("workflow.name", w.Name, MaxNameBytes)
	e.u32(w.Count)
	e.duration(w.Duration)
	e.f64(w.Rate)
	e.f64(w.FailureRatio)
}

func (r *reader) workflowSpec(w *WorkflowSpec) {
	w.Name = r.str("workflow.name", MaxNameBytes)
	w.Count = r.u32("workflow.count")
	w.Duration = r.duration("workflow.duration")
	w.Rate = r.f64("workflow.rate")
	w.FailureRatio = r.f64("workflow.failure_ratio")
}

// JobSpec is what a client submits (DESIGN §9).
type JobSpec struct {
	Tenant         string         `json:"tenant"`
	IdempotencyKey string         `json:"idempotency_key,omitempty"`
	Regions        []string       `json:"regions"`
	Timeout        Duration       `json:"timeout"`
	Workflows      []WorkflowSpec `json:"workflows"`

	// The extension (spec_ext.go): optional, absent from the encoding
	// when none is set.

	// Type is the job type ([A-Za-z0-9._-], empty: none): quotas,
	// throttles and breakers may apply per type.
	Type string `json:"type,omitempty"`
	// Priority orders held jobs for admission, higher first.
	Priority int32        `json:"priority,omitempty"`
	Retry    *RetryPolicy `json:"retry,omitempty"`
	// Admission is what the client asked for when over quota:
	// AdmissionReject ("") or AdmissionQueue.
	Admission string `json:"admission,omitempty"`
	// ReplayOf and ReplayDigest are set by the gate only (a replay of
	// that job, whose state digest was that at the replay).
	ReplayOf     string `json:"replay_of,omitempty"`
	ReplayDigest *Hash  `json:"replay_digest,omitempty"`
	// Held is set by the gate only: the job was over quota when it was
	// submitted with AdmissionQueue; it waits, PENDING, for a
	// JobAdmitted.
	Held bool `json:"held,omitempty"`
	// EligibleAtMs is set by the gate only, on a held job: the Unix ms
	// before which it may not be admitted (a submit rate limit's next
	// token); 0: any time.
	EligibleAtMs int64 `json:"eligible_at_ms,omitempty"`
	// Traceparent is set by the gate only: the W3C trace context the job
	// was submitted under, so the spans of its dispatch, leases,
	// execution and completion join the submitter's trace
	// (cluster/tracing). Not part of an idempotent repeat's comparison.
	Traceparent string `json:"traceparent,omitempty"`
	// ReplayReason is set by the gate only, on a replay: why the operator
	// or tenant replayed the job (the replay call's reason), kept with the
	// link for the auditor who follows the chain of replays.
	ReplayReason string `json:"replay_reason,omitempty"`
}

func (e *encoder) jobSpec(s *JobSpec) {
	e.str("spec.tenant", s.Tenant, MaxNameBytes)
	e.str("spec.idempotency_key", s.IdempotencyKey, MaxTextBytes)
	e.strings("spec.regions", s.Regions, MaxRegionsPerJob, MaxRegionBytes)
	e.duration(s.Timeout)
	e.count("spec.workflows", len(s.Workflows), MaxWorkflowsPerJob)
	for i := range s.Workflows {
		e.workflowSpec(&s.Workflows[i])
	}
}

func (r *reader) jobSpec(s *JobSpec) {
	s.Tenant = r.str("spec.tenant", MaxNameBytes)
	s.IdempotencyKey = r.str("spec.idempotency_key", MaxTextBytes)
	s.Regions = r.strings("spec.regions", MaxRegionsPerJob, MaxRegionBytes)
	s.Timeout = r.duration("spec.timeout")
	if n := r.count("spec.workflows", MaxWorkflowsPerJob, minWorkflowSpecBytes); n > 0 {
		s.Workflows = make([]WorkflowSpec, n)
		for i := range s.Workflows {
			r.workflowSpec(&s.Workflows[i])
		}
	}
}

func (e *encoder) strings(field string, ss []string, maxCount, maxLen int) {
	e.count(field, len(ss), maxCount)
	for _, s := range ss {
		e.str(field, s, maxLen)
	}
}

func (r *reader) strings(what string, maxCount, maxLen int) []string {
	n := r.count(what, maxCount, 1)
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = r.str(what, maxLen)
	}
	return ss
}

// JobCreated creates a job: PENDING. The first event of every job.
type JobCreated struct {
	Spec            JobSpec  `json:"spec"`
	AssignedRegions []string `json:"assigned_regions"`
}

// JobAccepted: a region accepted the job (PENDING -> RUNNING).
type JobAccepted struct {
	Region      string `json:"region"`
	WorkerCount uint32 `json:"worker_count"`
}

// JobProgressReported carries a region's cumulative counters. Done means
// the region finished all its workflows.
type JobProgressReported struct {
	Region    string `json:"region"`
	Completed uint64 `json:"completed"`
	Failed    uint64 `json:"failed"`
	Stats     Stats  `json:"stats,omitempty"`
	Done      bool   `json:"done,omitempty"`
}

// JobCancellationRequested asks for the job to stop (-> CANCELLING).
type JobCancellationRequested struct {
	Reason    string `json:"reason"`
	Requestor string `json:"requestor"`
}

// JobCancellationAcked: a region stopped the job's workflows.
type JobCancellationAcked struct {
	Region             string `json:"region"`
	WorkflowsCancelled uint32 `json:"workflows_cancelled"`
}

// Aggregate is the job-wide total of a completed job.
type Aggregate struct {
	Completed uint64 `json:"completed"`
	Failed    uint64 `json:"failed"`
	Stats     Stats  `json:"stats,omitempty"`
}

// JobCompleted: the job finished (RUNNING -> COMPLETED).
type JobCompleted struct {
	FinalStatus string    `json:"final_status"`
	Aggregate   Aggregate `json:"aggregate"`
}

// JobFailed: the job failed (-> FAILED). FailedRegion may be empty.
type JobFailed struct {
	Error        string `json:"error"`
	FailedRegion string `json:"failed_region,omitempty"`
}

// JobTimedOut: a timeout fired (-> TIMED_OUT).
type JobTimedOut struct {
	TimeoutType     string        `json:"timeout_type"`
	LastProgressHLC hlc.Timestamp `json:"last_progress_hlc"`
}

// EventType implementations.
func (*JobCreated) EventType() EventType               { return TypeJobCreated }
func (*JobAccepted) EventType() EventType              { return TypeJobAccepted }
func (*JobProgressReported) EventType() EventType      { return TypeJobProgressReported }
func (*JobCancellationRequested) EventType() EventType { return TypeJobCancellationRequested }
func (*JobCancellationAcked) EventType() EventType     { return TypeJobCancellationAcked }
func (*JobCompleted) EventType() EventType             { return TypeJobCompleted }
func (*JobFailed) EventType() EventType                { return TypeJobFailed }
func (*JobTimedOut) EventType() EventType              { return TypeJobTimedOut }

// Binary bodies: fields in declaration order (fsm/DESIGN.md).

func (b *JobCreated) encode(e *encoder) {
	e.jobSpec(&b.Spec)
	e.strings("assigned_regions", b.AssignedRegions, MaxRegionsPerJob, MaxRegionBytes)
	e.specExtBlock(&b.Spec) // optional, last
}

func (b *JobCreated) decode(r *reader) {
	r.jobSpec(&b.Spec)
	b.AssignedRegions = r.strings("assigned_regions", MaxRegionsPerJob, MaxRegionBytes)
	r.specExtBlock(&b.Spec)
}

func (b *JobAccepted) encode(e *encoder) {
	e.str("region", b.Region, MaxRegionBytes)
	e.u32(b.WorkerCount)
}

func (b *JobAccepted) decode(r *reader) {
	b.Region = r.str("region", MaxRegionBytes)
	b.WorkerCount = r.u32("worker_count")
}

func (b *JobProgressReported) encode(e *encoder) {
	e.str("region", b.Region, MaxRegionBytes)
	e.uvarint(b.Completed)
	e.uvarint(b.Failed)
	e.stats("stats", b.Stats)
	e.boolean(b.Done)
}

func (b *JobProgressReported) decode(r *reader) {
	b.Region = r.str("region", MaxRegionBytes)
	b.Completed = r.uvarint("completed")
	b.Failed = r.uvarint("failed")
	b.Stats = r.stats("stats")
	b.Done = r.boolean("done")
}

func (b *JobCancellationRequested) encode(e *encoder) {
	e.str("reason", b.Reason, MaxTextBytes)
	e.str("requestor", b.Requestor, MaxTextBytes)
}

func (b *JobCancellationRequested) decode(r *reader) {
	b.Reason = r.str("reason", MaxTextBytes)
	b.Requestor = r.str("requestor", MaxTextBytes)
}

func (b *JobCancellationAcked) encode(e *encoder) {
	e.str("region", b.Region, MaxRegionBytes)
	e.u32(b.WorkflowsCancelled)
}

func (b *JobCancellationAcked) decode(r *reader) {
	b.Region = r.str("region", MaxRegionBytes)
	b.WorkflowsCancelled = r.u32("workflows_cancelled")
}

func (b *JobCompleted) encode(e *encoder) {
	e.str("final_status", b.FinalStatus, MaxNameBytes)
	e.uvarint(b.Aggregate.Completed)
	e.uvarint(b.Aggregate.Failed)
	e.stats("aggregate.stats", b.Aggregate.Stats)
}

func (b *JobCompleted) decode(r *reader) {
	b.FinalStatus = r.str("final_status", MaxNameBytes)
	b.Aggregate.Completed = r.uvarint("aggregate.completed")
	b.Aggregate.Failed = r.uvarint("aggregate.failed")
	b.Aggregate.Stats = r.stats("aggregate.stats")
}

func (b *JobFailed) encode(e *encoder) {
	e.str("error", b.Error, MaxTextBytes)
	e.str("failed_region", b.FailedRegion, MaxRegionBytes)
}

func (b *JobFailed) decode(r *reader) {
	b.Error = r.str("error", MaxTextBytes)
	b.FailedRegion = r.str("failed_region", MaxRegionBytes)
}

func (b *JobTimedOut) encode(e *encoder) {
	e.str("timeout_type", b.TimeoutType, MaxNameBytes)
	e.hlc(b.LastProgressHLC)
}

func (b *JobTimedOut) decode(r *reader) {
	b.TimeoutType = r.str("timeout_type", MaxNameBytes)
	b.LastProgressHLC = r.hlc("last_progress_hlc")
}
