package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// govJob is an accepted job of one workflow instance in use1, in state
// st, with a live worker of room 4.
func govJob(st fsm.WorkflowStatus, mutate func(w *fsm.WorkflowState)) (*fsm.JobState, map[string]*fsm.WorkflowState, *RegionPass) {
	spec := fsm.JobSpec{Tenant: "acme", Regions: []string{"use1"}, Timeout: fsm.Duration(time.Hour),
		Workflows: []fsm.WorkflowSpec{{Name: "checkout", Count: 1, Duration: fsm.Duration(time.Second), Rate: 10}}}
	s := &fsm.JobState{JobID: "use1-1704931200000-gate42-00001", Tenant: "acme", Status: fsm.JobStatusRunning, Fence: 1, Spec: spec,
		Regions: []fsm.RegionState{{Region: "use1", Accepted: true}}}
	id := fsm.WorkflowID(s.JobID, "use1", "checkout", 0)
	w := &fsm.WorkflowState{ID: id, JobID: s.JobID, Tenant: "acme", Region: "use1", Name: "checkout", Spec: spec.Workflows[0],
		Status: st, LeaseFence: 1, Error: "every simulated request failed"}
	if mutate != nil {
		mutate(w)
	}
	p := NewRegionPass("use1", 10_000, 5_000, []*WorkerSlot{{ID: "w1", Capacity: 4, Live: true}})
	return s, map[string]*fsm.WorkflowState{id: w}, p
}

func types(evs []fsm.Event) []string {
	var ts []string
	for _, e := range evs {
		ts = append(ts, e.Type.String())
	}
	return ts
}

func TestRegionJob_Governance(t *testing.T) {
	retryAs := func(attempt uint32) func(*fsm.JobState, *fsm.WorkflowState) (*fsm.WorkflowRetryScheduled, string) {
		return func(_ *fsm.JobState, w *fsm.WorkflowState) (*fsm.WorkflowRetryScheduled, string) {
			return &fsm.WorkflowRetryScheduled{Workflow: w.ID, Attempt: attempt, Cause: "error", NotBeforeMs: 12_000}, ""
		}
	}
	never := func(*fsm.JobState, *fsm.WorkflowState) (*fsm.WorkflowRetryScheduled, string) {
		return nil, "attempts exhausted (3 of 3)"
	}
	tests := []struct {
		name   string
		st     fsm.WorkflowStatus
		mutate func(*fsm.WorkflowState)
		gov    *Governance
		want   string // event types planned, comma-separated
	}{
		{"no governance leases", fsm.WorkflowStatusDispatched, nil, nil, "WorkflowLeased"},
		{"maintenance grants no lease", fsm.WorkflowStatusDispatched, nil, &Governance{Maintenance: true}, ""},
		{"an open breaker grants no lease", fsm.WorkflowStatusDispatched, nil,
			&Governance{Admit: func(*fsm.JobState) int { return 0 }}, ""},
		{"a half-open breaker with room leases", fsm.WorkflowStatusDispatched, nil,
			&Governance{Admit: func(*fsm.JobState) int { return 1 }}, "WorkflowLeased"},
		{"backoff not over", fsm.WorkflowStatusDispatched, func(w *fsm.WorkflowState) { w.NotBeforeMs = 10_001 }, nil, ""},
		{"backoff over", fsm.WorkflowStatusDispatched, func(w *fsm.WorkflowState) { w.NotBeforeMs = 10_000 }, nil, "WorkflowLeased"},
		{"maintenance still takes a lease back from a gone worker", fsm.WorkflowStatusLeased,
			func(w *fsm.WorkflowState) { w.Worker = "gone" }, &Governance{Maintenance: true}, "WorkflowRescheduled"},
		{"a retryable failure is retried, the region does not fail", fsm.WorkflowStatusFailed, nil,
			&Governance{Retry: retryAs(2)}, "WorkflowRetryScheduled"},
		{"no retry policy fails the region", fsm.WorkflowStatusFailed, nil, nil, "JobFailed"},
		{"attempts exhausted fail the region", fsm.WorkflowStatusFailed, func(w *fsm.WorkflowState) { w.Retries = 2 },
			&Governance{Retry: never}, "JobFailed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, wfs, p := govJob(tc.st, tc.mutate)
			p.Gov = tc.gov
			got := RegionJob(s, wfs, p, false)
			if g := strings.Join(types(got), ","); g != tc.want {
				t.Fatalf("planned %q, want %q", g, tc.want)
			}
			for _, e := range got {
				if f, ok := e.Body.(*fsm.JobFailed); ok && tc.gov != nil && !strings.Contains(f.Error, "attempt 3, attempts exhausted") {
					t.Fatalf("failure text %q does not say why it was not retried", f.Error)
				}
			}
		})
	}
}

func TestRegionJob_RetryIDIsStablePerAttempt(t *testing.T) {
	gov := &Governance{Retry: func(_ *fsm.JobState, w *fsm.WorkflowState) (*fsm.WorkflowRetryScheduled, string) {
		return &fsm.WorkflowRetryScheduled{Workflow: w.ID, Attempt: w.Attempt() + 1, Cause: "error"}, ""
	}}
	plan := func(retries uint32) fsm.EventID {
		s, wfs, p := govJob(fsm.WorkflowStatusFailed, func(w *fsm.WorkflowState) { w.Retries = retries })
		p.Gov = gov
		evs := RegionJob(s, wfs, p, false)
		if len(evs) != 1 {
			t.Fatalf("planned %v", types(evs))
		}
		return evs[0].ID
	}
	first, again := plan(0), plan(0)
	if first != again {
		t.Fatal("the same retry planned twice got two ids")
	}
	if plan(0) == plan(1) {
		t.Fatal("two attempts' retries share an id")
	}
}

func TestRegionJob_HalfOpenAdmitsOnlyItsProbes(t *testing.T) {
	spec := fsm.JobSpec{Tenant: "acme", Regions: []string{"use1"}, Timeout: fsm.Duration(time.Hour),
		Workflows: []fsm.WorkflowSpec{{Name: "checkout", Count: 5, Duration: fsm.Duration(time.Second), Rate: 10}}}
	s := &fsm.JobState{JobID: "use1-1704931200000-gate42-00001", Tenant: "acme", Status: fsm.JobStatusRunning, Fence: 1, Spec: spec,
		Regions: []fsm.RegionState{{Region: "use1", Accepted: true}}}
	wfs := map[string]*fsm.WorkflowState{}
	for i := range uint32(5) {
		id := fsm.WorkflowID(s.JobID, "use1", "checkout", i)
		wfs[id] = &fsm.WorkflowState{ID: id, JobID: s.JobID, Tenant: "acme", Region: "use1", Name: "checkout", Instance: i,
			Spec: spec.Workflows[0], Status: fsm.WorkflowStatusDispatched}
	}
	room := 2
	p := NewRegionPass("use1", 10_000, 5_000, []*WorkerSlot{{ID: "w1", Capacity: 10, Live: true}})
	p.Gov = &Governance{Admit: func(*fsm.JobState) int { return room }, Leased: func(*fsm.JobState) { room-- }}
	if got := types(RegionJob(s, wfs, p, false)); len(got) != 2 {
		t.Fatalf("half-open with 2 probes planned %v", got)
	}
}
