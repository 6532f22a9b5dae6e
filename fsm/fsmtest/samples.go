package fsmtest

import (
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// SampleJobID is the job of SampleEvents.
const SampleJobID = "use1-1704931200000-gate42-00001"

// SampleEvents returns one valid event of every type, with every field
// set, for round-trip tests and fuzz corpora. Job events belong to
// SampleJobID (tenant "acme", regions use1 and euw1).
func SampleEvents() []fsm.Event {
	ts := func(n uint32) hlc.Timestamp { return TS(1704931200000+int64(n), n, 1) }
	wf := fsm.WorkflowID(SampleJobID, "use1", "checkout", 3)
	stats := fsm.Stats{{Name: "errors", Value: 3}, {Name: "requests", Value: 1200}}
	spec := Spec("acme", "use1", "euw1")
	spec.IdempotencyKey = "k1"
	bodies := []fsm.Body{
		&fsm.JobCreated{Spec: spec, AssignedRegions: []string{"use1", "euw1"}},
		&fsm.JobAccepted{Region: "use1", WorkerCount: 12},
		&fsm.JobProgressReported{Region: "use1", Completed: 1 << 40, Failed: 7, Stats: stats, Done: true},
		&fsm.JobCancellationRequested{Reason: "operator asked ✓", Requestor: "alice@example.com"},
		&fsm.JobCancellationAcked{Region: "euw1", WorkflowsCancelled: 4},
		&fsm.JobCompleted{FinalStatus: "SUCCEEDED", Aggregate: fsm.Aggregate{Completed: 10, Failed: 1, Stats: stats}},
		&fsm.JobFailed{Error: "region lost", FailedRegion: "euw1"},
		&fsm.JobTimedOut{TimeoutType: "progress", LastProgressHLC: ts(9)},
		&fsm.WorkflowDispatched{Workflow: wf, Name: "checkout", Instance: 3, Spec: spec.Workflows[0]},
		&fsm.WorkflowLeased{Workflow: wf, Worker: "w-17", LeaseUntilMs: 1704931205000, LeaseFence: 4},
		&fsm.WorkflowProgress{Workflow: wf, Completed: 99, Failed: 1, Stats: stats},
		&fsm.WorkflowCompleted{Workflow: wf},
		&fsm.WorkflowFailed{Workflow: wf, Error: "oom"},
		&fsm.WorkflowRescheduled{Workflow: wf, FromWorker: "w-17", Reason: "lease expired"},
		&fsm.WorkflowCancelled{Workflow: wf},
		&fsm.WorkerJoined{Worker: "w-17", Capacity: 8},
		&fsm.WorkerLeft{Worker: "w-17", Reason: "drain"},
		&fsm.ForwardMark{Marks: []fsm.ForwardPosition{{Tenant: "acme", Seq: 12}, {Tenant: "globex", Seq: 1 << 33}}},
		&fsm.JobAdmitted{Reason: "capacity freed"},
		&fsm.PolicySet{Kind: "quota", Key: "acme/render", Value: []byte(`{"max_active":3}`),
			Reason: "launch week", Ticket: "OPS-12", Requestor: "alice@example.com"},
		&fsm.PolicyDeleted{Kind: "quota", Key: "acme/render", Reason: "done", Ticket: "OPS-13", Requestor: "bob"},
	}
	events := make([]fsm.Event, len(bodies))
	for i, b := range bodies {
		jobID, tenant := SampleJobID, "acme"
		if b.EventType().IsJobless() {
			jobID, tenant = "", ""
		}
		if b.EventType().IsGovernance() {
			jobID = ""
		}
		events[i] = NewEvent(ID(uint64(i+1)), jobID, tenant, "use1", "gate42", ts(uint32(i+1)), uint64(i%3+1), b)
	}
	return events
}

// ExtendedSpec returns a job spec with every field of the spec extension
// set (type, priority, retry, admission, replay, held).
func ExtendedSpec(tenant string, regions ...string) fsm.JobSpec {
	s := Spec(tenant, regions...)
	d := fsm.Hash{1, 2, 3}
	s.Type = "render"
	s.Priority = -7
	s.Retry = &fsm.RetryPolicy{MaxAttempts: 3, InitialBackoff: fsm.Duration(1e9), MaxBackoff: fsm.Duration(30e9),
		RetryOn: []string{"lease_expired", "worker_error"}}
	s.Admission = fsm.AdmissionQueue
	s.ReplayOf = "use1-1704931100000-gate42-00009"
	s.ReplayDigest = &d
	s.Held = true
	s.EligibleAtMs = 1704931260000
	return s
}
