package fsm

import (
	"fmt"
	"math"
	"strings"
)

// The job spec extension (issue 18, governance): the job type, its
// priority, its retry policy, and what the gate records of admission and
// replay. Every field is optional; a spec with none of them set encodes
// exactly as before the extension existed (no bytes), so every old
// encoding stays valid and canonical. With some set, one extension block
// follows the structure that holds the spec (fsm/DESIGN.md, "Spec
// extension"): after JobCreated's assigned_regions, after the job state
// record's optional pending completion.

// Limits of the spec extension. Never lower one on a running cluster.
const (
	// MinPriority and MaxPriority bound JobSpec.Priority; higher is
	// admitted first. 0 is the default.
	MinPriority = -1000
	MaxPriority = 1000
	// ReplayPriority is the priority of a replayed job ("high priority").
	ReplayPriority = 900
	// MaxRetryAttempts bounds RetryPolicy.MaxAttempts (the first attempt
	// included).
	MaxRetryAttempts = 100
	// MaxRetryBackoff bounds RetryPolicy.InitialBackoff and MaxBackoff.
	MaxRetryBackoff = Duration(24 * 3600 * 1e9)
	// MaxRetryOn bounds RetryPolicy.RetryOn.
	MaxRetryOn = 16
	// MaxTraceparentBytes bounds JobSpec.Traceparent: a W3C traceparent
	// of version 00 is 55 bytes; later versions may append fields.
	MaxTraceparentBytes = 128
)

// specExtTag starts the extension block. It is not a decision type (a
// job state record's pending completion starts with TypeJobCompleted),
// so the job record's optional trailers never read as each other.
const specExtTag = 0xE5

// Admission modes a client may ask for when the job is over its quota.
const (
	// AdmissionReject (the default): a submit over quota is refused (429).
	AdmissionReject = ""
	// AdmissionQueue: a submit over quota is accepted as PENDING, held,
	// and admitted (JobAdmitted) when capacity frees, in priority order.
	AdmissionQueue = "queue"
)

// RetryPolicy is a job's per-job retry policy (issue 18 §3): the fields
// only; how a failed workflow is retried is the regional ledger's
// business.
type RetryPolicy struct {
	// MaxAttempts counts every attempt, the first included: 1..MaxRetryAttempts.
	MaxAttempts    uint32   `json:"max_attempts"`
	InitialBackoff Duration `json:"initial_backoff"`
	MaxBackoff     Duration `json:"max_backoff"`
	// RetryOn names the failure causes that are retried ([A-Za-z0-9._-]
	// names, sorted and unique); empty retries every failure.
	RetryOn []string `json:"retry_on,omitempty"`
}

// hasExt reports whether s has any field of the extension set.
func (s *JobSpec) hasExt() bool {
	return s.Type != "" || s.Priority != 0 || s.Retry != nil || s.ReplayOf != "" ||
		s.ReplayDigest != nil || s.Admission != "" || s.Held || s.EligibleAtMs != 0 || s.Traceparent != "" || s.ReplayReason != ""
}

func admissionCode(a string) uint8 {
	if a == AdmissionQueue {
		return 1
	}
	return 0
}

// specExt writes the extension fields of s (the block's body).
func (e *encoder) specExt(s *JobSpec) {
	e.str("spec.type", s.Type, MaxNameBytes)
	e.varint(int64(s.Priority))
	e.boolean(s.Retry != nil)
	if p := s.Retry; p != nil {
		e.u32(p.MaxAttempts)
		e.duration(p.InitialBackoff)
		e.duration(p.MaxBackoff)
		e.strings("spec.retry.retry_on", p.RetryOn, MaxRetryOn, MaxNameBytes)
	}
	e.str("spec.replay_of", s.ReplayOf, MaxJobIDBytes)
	e.boolean(s.ReplayDigest != nil)
	if s.ReplayDigest != nil {
		e.hash(*s.ReplayDigest)
	}
	if s.Admission != AdmissionReject && s.Admission != AdmissionQueue {
		e.fail(fieldErr("spec.admission", fmt.Sprintf("unknown mode %q", s.Admission)))
	}
	e.u8(admissionCode(s.Admission))
	e.boolean(s.Held)
	e.varint(s.EligibleAtMs)
	e.str("spec.traceparent", s.Traceparent, MaxTraceparentBytes)
	e.str("spec.replay_reason", s.ReplayReason, MaxTextBytes)
}

func (r *reader) specExt(s *JobSpec) {
	s.Type = r.str("spec.type", MaxNameBytes)
	p := r.varint("spec.priority")
	if r.err == nil && (p < math.MinInt32 || p > math.MaxInt32) {
		r.fail("spec.priority: overflows int32")
	}
	s.Priority = int32(p)
	if r.boolean("spec.retry") {
		s.Retry = &RetryPolicy{
			MaxAttempts:    r.u32("spec.retry.max_attempts"),
			InitialBackoff: r.duration("spec.retry.initial_backoff"),
			MaxBackoff:     r.duration("spec.retry.max_backoff"),
			RetryOn:        r.strings("spec.retry.retry_on", MaxRetryOn, MaxNameBytes),
		}
	}
	s.ReplayOf = r.str("spec.replay_of", MaxJobIDBytes)
	if r.boolean("spec.replay_digest") {
		h := r.hash("spec.replay_digest")
		s.ReplayDigest = &h
	}
	switch a := r.u8("spec.admission"); a {
	case 0:
	case 1:
		s.Admission = AdmissionQueue
	default:
		r.fail(fmt.Sprintf("spec.admission: mode %d", a))
	}
	s.Held = r.boolean("spec.held")
	s.EligibleAtMs = r.varint("spec.eligible_at_ms")
	s.Traceparent = r.str("spec.traceparent", MaxTraceparentBytes)
	s.ReplayReason = r.str("spec.replay_reason", MaxTextBytes)
}

// specExtBlock writes the block (tag, then the fields) if s has any
// extension field, nothing otherwise.
func (e *encoder) specExtBlock(s *JobSpec) {
	if !s.hasExt() {
		return
	}
	e.u8(specExtTag)
	e.specExt(s)
}

// specExtBlock reads a block if the input has one left at this point; a
// block that sets nothing is not canonical (the encoder writes none).
func (r *reader) specExtBlock(s *JobSpec) {
	if r.err != nil || r.rest() == 0 {
		return
	}
	if t := r.u8("spec extension"); t != specExtTag {
		r.fail(fmt.Sprintf("spec extension tag %#x", t))
		return
	}
	r.specExt(s)
	if r.err == nil && !s.hasExt() {
		r.fail("spec extension sets no field")
	}
}

// specExt checks the extension fields. replay_of and held are the gate's
// (a client sending them is refused at the API, not here: the ledger
// stores what the gate proposed).
func (v *validator) specExt(s *JobSpec) {
	if s.Type != "" {
		v.name("spec.type", s.Type)
	}
	if s.Priority < MinPriority || s.Priority > MaxPriority {
		v.fail("spec.priority", fmt.Sprintf("%d is outside [%d, %d]", s.Priority, MinPriority, MaxPriority))
	}
	if p := s.Retry; p != nil {
		v.retryPolicy(p)
	}
	if s.ReplayOf != "" {
		if _, err := ParseJobID(s.ReplayOf); err != nil {
			v.fail("spec.replay_of", err.Error())
		}
	}
	if s.ReplayDigest != nil && s.ReplayOf == "" {
		v.fail("spec.replay_digest", "set without replay_of")
	}
	if s.ReplayReason != "" {
		v.text("spec.replay_reason", s.ReplayReason, MaxTextBytes)
		if s.ReplayOf == "" {
			v.fail("spec.replay_reason", "set without replay_of")
		}
	}
	if s.Admission != AdmissionReject && s.Admission != AdmissionQueue {
		v.fail("spec.admission", fmt.Sprintf("%q is not \"\" or %q", s.Admission, AdmissionQueue))
	}
	if s.EligibleAtMs < 0 || s.EligibleAtMs != 0 && !s.Held {
		v.fail("spec.eligible_at_ms", "set only on a held job, at or after 1970")
	}
	if strings.Trim(s.Traceparent, "0123456789abcdef-") != "" {
		v.fail("spec.traceparent", "not a W3C traceparent (lowercase hex and dashes)")
	}
}

func (v *validator) retryPolicy(p *RetryPolicy) {
	switch {
	case p.MaxAttempts == 0:
		v.fail("spec.retry.max_attempts", "must be at least 1")
	case p.MaxAttempts > MaxRetryAttempts:
		v.limit("spec.retry.max_attempts", MaxRetryAttempts, int(p.MaxAttempts))
	case p.InitialBackoff < 0 || p.InitialBackoff > MaxRetryBackoff:
		v.fail("spec.retry.initial_backoff", fmt.Sprintf("must be in [0, %s]", MaxRetryBackoff))
	case p.MaxBackoff < p.InitialBackoff || p.MaxBackoff > MaxRetryBackoff:
		v.fail("spec.retry.max_backoff", fmt.Sprintf("must be in [initial_backoff, %s]", MaxRetryBackoff))
	case len(p.RetryOn) > MaxRetryOn:
		v.limit("spec.retry.retry_on", MaxRetryOn, len(p.RetryOn))
	}
	for i, c := range p.RetryOn {
		v.name("spec.retry.retry_on", c)
		if i > 0 && p.RetryOn[i-1] >= c {
			v.fail("spec.retry.retry_on", "names not sorted and unique")
		}
	}
}

// GateOnlyField names a field of s that only the gate sets ("" if none
// is set): a client's submit carrying one is refused (400), so a client
// can neither claim to be a replay nor hold its own job.
func (s *JobSpec) GateOnlyField() string {
	switch {
	case s.ReplayOf != "":
		return "replay_of"
	case s.ReplayDigest != nil:
		return "replay_digest"
	case s.Held:
		return "held"
	case s.EligibleAtMs != 0:
		return "eligible_at_ms"
	case s.Traceparent != "":
		return "traceparent"
	case s.ReplayReason != "":
		return "replay_reason"
	}
	return ""
}

// ClientSpec returns s without the fields the gate sets (held, replay):
// what the client asked for, which an idempotent repeat is compared with.
func (s JobSpec) ClientSpec() JobSpec {
	s.Held, s.EligibleAtMs, s.ReplayOf, s.ReplayDigest, s.Traceparent, s.ReplayReason = false, 0, "", nil, "", ""
	return s
}
