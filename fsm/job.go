package fsm

import (
	"fmt"
	"slices"

	"github.com/strata-ledger/strata/hlc"
)

// JobStatus is a job's state (DESIGN §3). The values are stored in
// records: never change them.
type JobStatus uint8

// Job states. PENDING -> RUNNING -> (CANCELLING) -> COMPLETED | FAILED |
// CANCELLED | TIMED_OUT.
const (
	JobStatusUnknown    JobStatus = 0 // no job: never stored
	JobStatusPending    JobStatus = 1
	JobStatusRunning    JobStatus = 2
	JobStatusCancelling JobStatus = 3
	JobStatusCompleted  JobStatus = 4
	JobStatusFailed     JobStatus = 5
	JobStatusCancelled  JobStatus = 6
	JobStatusTimedOut   JobStatus = 7
)

var jobStatusNames = [...]string{
	JobStatusUnknown:    "UNKNOWN",
	JobStatusPending:    "PENDING",
	JobStatusRunning:    "RUNNING",
	JobStatusCancelling: "CANCELLING",
	JobStatusCompleted:  "COMPLETED",
	JobStatusFailed:     "FAILED",
	JobStatusCancelled:  "CANCELLED",
	JobStatusTimedOut:   "TIMED_OUT",
}

// String returns the API name ("RUNNING").
func (s JobStatus) String() string {
	if int(s) < len(jobStatusNames) {
		return jobStatusNames[s]
	}
	return fmt.Sprintf("JobStatus(%d)", uint8(s))
}

// Terminal reports whether s is final: COMPLETED, FAILED, CANCELLED or
// TIMED_OUT. Terminal states absorb later events except conflict
// resolution between decisive events (fsm/DESIGN.md).
func (s JobStatus) Terminal() bool { return s >= JobStatusCompleted && s <= JobStatusTimedOut }

// MarshalText implements encoding.TextMarshaler.
func (s JobStatus) MarshalText() ([]byte, error) {
	if s == JobStatusUnknown || int(s) >= len(jobStatusNames) {
		return nil, fmt.Errorf("fsm: job status %d has no name", uint8(s))
	}
	return []byte(jobStatusNames[s]), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *JobStatus) UnmarshalText(b []byte) error {
	p, err := ParseJobStatus(string(b))
	if err != nil {
		return err
	}
	*s = p
	return nil
}

// ParseJobStatus reads a status name ("RUNNING").
func ParseJobStatus(name string) (JobStatus, error) {
	for i, n := range jobStatusNames {
		if i > 0 && n == name {
			return JobStatus(i), nil
		}
	}
	return 0, fmt.Errorf("fsm: unknown job status %q", name)
}

// RegionState is what the ledger knows of one assigned region of a job.
type RegionState struct {
	Region      string
	Accepted    bool
	WorkerCount uint32 // the most any JobAccepted of the region reported
	Completed   uint64 // cumulative: the maximum reported
	Failed      uint64 // cumulative: the maximum reported
	// Stats holds, per name, the maximum reported value; at most MaxStats
	// names (the smallest in name order) are kept.
	Stats Stats
	Done  bool // some report said the region finished
	// CancelAcked: the region acked (JobCancellationAcked) that it stopped
	// its workflows, whatever the decision in force (regions ack the
	// cancellations, failures and time-outs sent to them);
	// WorkflowsCancelled is the most it reported.
	CancelAcked        bool
	WorkflowsCancelled uint32
}

// Status names the region's phase for the API: PENDING, RUNNING, DONE or
// CANCELLED. CANCELLED means the region cancelled its workflows and
// acked it, whatever the decision that asked (a cancellation, a failure,
// a time-out): the job's own status says which.
func (r *RegionState) Status() string {
	switch {
	case r.CancelAcked:
		return "CANCELLED"
	case r.Done:
		return "DONE"
	case r.Accepted:
		return "RUNNING"
	}
	return "PENDING"
}

// Decision is the decisive event in force (cancel requested, completed,
// failed or timed out). Type 0 means none.
type Decision struct {
	Type    EventType
	EventID EventID
	HLC     hlc.Timestamp
	Fence   uint64
	Node    string
	Body    Body // the event's body; read-only
}

// JobState is a job as the ledger folds it from the set of its stored
// events (fsm/DESIGN.md). Values handed out by a Store or the Ledger are
// shared and read-only.
type JobState struct {
	JobID  string
	Tenant string
	Status JobStatus
	// Fence is the decision's fence, the JobCreated's without a decision.
	Fence uint64
	Spec  JobSpec
	// Regions holds one entry per assigned region, sorted by name.
	Regions []RegionState
	// Created is the canonical position of the job's JobCreated, the
	// first event of its history.
	Created EventKey
	// HLC is the greatest HLC among the job's stored job events.
	HLC      hlc.Timestamp
	Decision Decision
	// Pending is the best-ranked JobCompleted (fsm/DESIGN.md, "Job
	// rules") while no region has accepted, which makes it ineligible;
	// the first acceptance lets it compete for the decision. Type 0 once
	// a region accepted, or if there is none.
	Pending Decision
	// Last is the greatest canonical position among the job's stored job
	// events; Events counts them (absorbed ones included).
	Last   EventKey
	Events uint32
	// Admitted: a JobAdmitted of the job is stored (an OR). A held job
	// (Spec.Held) waits, PENDING and not dispatched, until it is.
	Admitted bool
}

// Queued reports whether the job waits for admission: held by the gate
// over its quota and not admitted yet.
func (s *JobState) Queued() bool { return s.Spec.Held && !s.Admitted }

// Region returns the state of an assigned region, or nil.
func (s *JobState) Region(region string) *RegionState {
	if i := s.regionIndex(region); i >= 0 {
		return &s.Regions[i]
	}
	return nil
}

func (s *JobState) regionIndex(region string) int {
	for i := range s.Regions {
		if s.Regions[i].Region == region {
			return i
		}
	}
	return -1
}

// Clone returns a copy of s that may be changed without affecting s. Stats
// slices and bodies stay shared: they are never changed in place.
func (s *JobState) Clone() *JobState {
	c := *s
	c.Regions = slices.Clone(s.Regions)
	return &c
}
