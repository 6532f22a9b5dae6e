package fsm

import "github.com/strata-ledger/strata/hlc"

// JobEnd is one job's move from a live status (PENDING, RUNNING,
// CANCELLING) into a terminal one (COMPLETED, FAILED, CANCELLED,
// TIMED_OUT), as an applied batch made it. Config.Ended hears of each,
// so a node can count jobs and their latency where the ledger decides
// them, without reading any job back (issue 18 §4).
//
// A job normally ends once. A cancellation that wins over a concurrent
// completion after the job showed COMPLETED (fsm/DESIGN.md, "Consequences
// worth knowing") takes it to CANCELLING and then CANCELLED: that job
// ends twice. A move between two terminal statuses is not an end.
type JobEnd struct {
	JobID, Tenant string
	// JobType is the spec's type ("" if none).
	JobType string
	// Status is the terminal status the job entered.
	Status JobStatus
	// Created is its JobCreated's HLC; At the HLC of the event whose
	// apply ended it (the decision, or for a cancellation the last
	// region's acknowledgement). Both are ledger times, the same on
	// every replica.
	Created, At hlc.Timestamp
	// Decision is the decision in force when it ended (its Body is
	// read-only): the JobFailed or JobTimedOut says why it failed.
	Decision Decision
}

// jobEnd returns s's end if folding event e moved it from status from
// into a terminal status.
func jobEnd(from JobStatus, s *JobState, e *Event) (JobEnd, bool) {
	if from.Terminal() || !s.Status.Terminal() {
		return JobEnd{}, false
	}
	return JobEnd{JobID: s.JobID, Tenant: s.Tenant, JobType: s.Spec.Type, Status: s.Status,
		Created: s.Created.HLC, At: e.HLC, Decision: s.Decision}, true
}
