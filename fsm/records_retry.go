package fsm

// The retry extension of a workflow record (fsm/DESIGN.md, "Records"): an
// optional tail after the record's HLC, present only when the workflow was
// retried, so every record written before retries existed still decodes,
// and re-encodes to the same bytes.
//
//	ext version (1) = 1
//	retries (uvarint), not_before (varint), prior_completed, prior_failed (uvarint)
//	history count (uvarint, ≤ MaxWorkflowAttempts), then per entry:
//	  attempt (uvarint), cause (str ≤ MaxNameBytes), error (str ≤ MaxRetryErrorBytes),
//	  completed, failed (uvarint), failed_at (hlc), retry_not_before (varint)
//
// An extension whose fields are all zero is refused: it is never written,
// so accepting it would give one workflow two encodings.

const workflowRetryExtV1 = 1

// minWorkflowAttemptBytes is the smallest history entry.
const minWorkflowAttemptBytes = 1 + 1 + 1 + 1 + 1 + 16 + 1

func hasRetries(w *WorkflowState) bool {
	return w.Retries != 0 || w.NotBeforeMs != 0 || w.PriorCompleted != 0 || w.PriorFailed != 0 || len(w.RetryHistory) != 0
}

func (e *encoder) workflowRetries(w *WorkflowState) {
	if !hasRetries(w) {
		return
	}
	e.u8(workflowRetryExtV1)
	e.u32(w.Retries)
	e.varint(w.NotBeforeMs)
	e.uvarint(w.PriorCompleted)
	e.uvarint(w.PriorFailed)
	e.count("retry_history", len(w.RetryHistory), MaxWorkflowAttempts)
	for i := range w.RetryHistory {
		a := &w.RetryHistory[i]
		e.u32(a.Attempt)
		e.str("retry_history.cause", a.Cause, MaxNameBytes)
		e.str("retry_history.error", a.Error, MaxRetryErrorBytes)
		e.uvarint(a.Completed)
		e.uvarint(a.Failed)
		e.hlc(a.FailedAt)
		e.varint(a.NotBeforeMs)
	}
}

func (r *reader) workflowRetries(w *WorkflowState) {
	if r.err != nil || r.rest() == 0 {
		return
	}
	if v := r.u8("retry extension"); v != workflowRetryExtV1 {
		r.fail("retry extension version")
		return
	}
	w.Retries = r.u32("retries")
	w.NotBeforeMs = r.varint("not_before")
	w.PriorCompleted = r.uvarint("prior_completed")
	w.PriorFailed = r.uvarint("prior_failed")
	n := r.count("retry_history", MaxWorkflowAttempts, minWorkflowAttemptBytes)
	if n > 0 {
		w.RetryHistory = make([]WorkflowAttempt, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		a := &w.RetryHistory[i]
		a.Attempt = r.u32("retry_history.attempt")
		a.Cause = r.str("retry_history.cause", MaxNameBytes)
		a.Error = r.str("retry_history.error", MaxRetryErrorBytes)
		a.Completed = r.uvarint("retry_history.completed")
		a.Failed = r.uvarint("retry_history.failed")
		a.FailedAt = r.hlc("retry_history.failed_at")
		a.NotBeforeMs = r.varint("retry_history.retry_not_before")
	}
	if r.err == nil && !hasRetries(w) {
		r.fail("empty retry extension")
	}
}
