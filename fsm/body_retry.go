package fsm

import (
	"fmt"
	"unicode/utf8"

	"github.com/strata-ledger/strata/hlc"
)

// Retry limits (issue 18 §3).
const (
	// MaxWorkflowAttempts bounds a workflow's attempts (its first run and
	// its retries), and so its retry history.
	MaxWorkflowAttempts = 100
	// MaxRetryErrorBytes bounds the error each retry history entry keeps
	// of its failed attempt, so a full history stays far under
	// MaxRecordBytes (100 × ~400 bytes).
	MaxRetryErrorBytes = 256
)

// WorkflowRetryScheduled returns a FAILED workflow to DISPATCHED for
// another attempt under its job's retry policy: the regional leader
// decided that the failure (of cause Cause) is retryable and attempts
// remain. Attempt is the attempt about to run (2 for the first retry)
// and must be one more than the workflow's attempts so far; no lease is
// planned before NotBeforeMs (Unix ms, the end of the backoff). The
// failed attempt's counters move to the workflow's prior counters, so
// the next attempt runs its load from the start.
type WorkflowRetryScheduled struct {
	Workflow    string `json:"workflow"`
	Attempt     uint32 `json:"attempt"`
	Cause       string `json:"cause"`
	NotBeforeMs int64  `json:"not_before"`
}

// WorkflowAttempt is one failed attempt of a workflow that was retried:
// the history GET /v1/jobs/{id}/workflows shows.
type WorkflowAttempt struct {
	Attempt     uint32        `json:"attempt"`
	Cause       string        `json:"cause"`
	Error       string        `json:"error,omitempty"`
	Completed   uint64        `json:"completed"`
	Failed      uint64        `json:"failed"`
	FailedAt    hlc.Timestamp `json:"failed_at"`
	NotBeforeMs int64         `json:"retry_not_before"`
}

// EventType implements Body.
func (*WorkflowRetryScheduled) EventType() EventType { return TypeWorkflowRetryScheduled }

func (b *WorkflowRetryScheduled) encode(e *encoder) {
	e.str("workflow", b.Workflow, MaxWorkflowIDBytes)
	e.u32(b.Attempt)
	e.str("cause", b.Cause, MaxNameBytes)
	e.varint(b.NotBeforeMs)
}

func (b *WorkflowRetryScheduled) decode(r *reader) {
	b.Workflow = r.str("workflow", MaxWorkflowIDBytes)
	b.Attempt = r.u32("attempt")
	b.Cause = r.str("cause", MaxNameBytes)
	b.NotBeforeMs = r.varint("not_before")
}

func (b *WorkflowRetryScheduled) validate(v *validator) {
	v.workflowRef(b.Workflow)
	v.name("cause", b.Cause)
	if b.Attempt < 2 || b.Attempt > MaxWorkflowAttempts {
		v.fail("attempt", fmt.Sprintf("%d outside [2, %d]", b.Attempt, MaxWorkflowAttempts))
	}
	if b.NotBeforeMs < 0 {
		v.fail("not_before", "negative")
	}
}

// applyRetry returns n (a copy of FAILED workflow w) after b.
func applyRetry(n, w *WorkflowState, b *WorkflowRetryScheduled) error {
	if want := w.Retries + 2; b.Attempt != want {
		return fmt.Errorf("workflow %s: retry as attempt %d, want %d: %w", w.ID, b.Attempt, want, ErrInvalidEvent)
	}
	n.RetryHistory = append(w.RetryHistory[:len(w.RetryHistory):len(w.RetryHistory)], WorkflowAttempt{
		Attempt: b.Attempt - 1, Cause: b.Cause, Error: truncateUTF8(w.Error, MaxRetryErrorBytes),
		Completed: w.Completed, Failed: w.Failed, FailedAt: w.HLC, NotBeforeMs: b.NotBeforeMs})
	n.Retries++
	n.NotBeforeMs = b.NotBeforeMs
	n.PriorCompleted += w.Completed
	n.PriorFailed += w.Failed
	n.Completed, n.Failed, n.Error = 0, 0, ""
	return nil
}

// Attempt returns the workflow's current attempt, 1 for its first run.
func (w *WorkflowState) Attempt() uint32 { return w.Retries + 1 }

// TotalCompleted and TotalFailed count every attempt's simulated
// requests: the job-level progress a region reports.
func (w *WorkflowState) TotalCompleted() uint64 { return w.PriorCompleted + w.Completed }

// TotalFailed: see TotalCompleted.
func (w *WorkflowState) TotalFailed() uint64 { return w.PriorFailed + w.Failed }

// truncateUTF8 cuts s to at most n bytes on a rune boundary (s is valid
// UTF-8: the validator checked the error it comes from).
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
