package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

func TestRegionJob_Drain(t *testing.T) {
	leasedTo := func(worker string) func(*fsm.WorkflowState) {
		return func(w *fsm.WorkflowState) { w.Worker, w.LeaseFence = worker, 3 }
	}
	tests := []struct {
		name   string
		st     fsm.WorkflowStatus
		mutate func(*fsm.WorkflowState)
		gov    *Governance
		want   string // event types planned
		reason string // the reschedule's reason, if one
	}{
		{"maintenance alone lets a running workflow finish", fsm.WorkflowStatusLeased, leasedTo("w1"),
			&Governance{Maintenance: true}, "", ""},
		{"drain takes a running workflow back", fsm.WorkflowStatusLeased, leasedTo("w1"),
			&Governance{Maintenance: true, Drain: true}, "WorkflowRescheduled", DrainReason},
		{"drain without maintenance takes nothing back", fsm.WorkflowStatusLeased, leasedTo("w1"),
			&Governance{Drain: true}, "", ""},
		{"a silent worker's lease goes back as before", fsm.WorkflowStatusLeased, leasedTo("gone"),
			&Governance{Maintenance: true, Drain: true}, "WorkflowRescheduled", "worker gone left"},
		{"a waiting workflow is not leased while draining", fsm.WorkflowStatusDispatched, nil,
			&Governance{Maintenance: true, Drain: true}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, wfs, p := govJob(tc.st, tc.mutate)
			p.Workers[0].Load = 1
			p.Gov = tc.gov
			got := RegionJob(s, wfs, p, false)
			if g := strings.Join(types(got), ","); g != tc.want {
				t.Fatalf("planned %q, want %q", g, tc.want)
			}
			if tc.reason == "" {
				return
			}
			b := got[0].Body.(*fsm.WorkflowRescheduled)
			if b.Reason != tc.reason || got[0].Fence != 3 {
				t.Fatalf("reschedule %+v at fence %d, want reason %q at the lease's fence 3", b, got[0].Fence, tc.reason)
			}
			if tc.reason == DrainReason && (b.FromWorker != "w1" || p.Workers[0].Load != 0) {
				t.Fatalf("from %q, load left %d", b.FromWorker, p.Workers[0].Load)
			}
		})
	}
}

// A drain and a silent worker's reschedule of the same lease are one
// decision: the ledger keeps one of them whichever a leader plans.
func TestRegionJob_DrainSharesTheRescheduleID(t *testing.T) {
	s, wfs, p := govJob(fsm.WorkflowStatusLeased, func(w *fsm.WorkflowState) { w.Worker, w.LeaseFence = "w1", 3 })
	p.Gov = &Governance{Maintenance: true, Drain: true}
	drained := RegionJob(s, wfs, p, false)
	p.Workers[0].Live = false
	p.Gov = &Governance{Maintenance: true}
	silent := RegionJob(s, wfs, p, false)
	if len(drained) != 1 || len(silent) != 1 || drained[0].ID != silent[0].ID {
		t.Fatalf("drain %v and silent reschedule %v of one lease differ", drained, silent)
	}
}

// A pass drains at most MaxDrainPerPass leases, in the planner's order;
// the next pass takes the rest.
func TestRegionJob_DrainIsBoundedPerPass(t *testing.T) {
	const n = MaxDrainPerPass + 3
	spec := fsm.JobSpec{Tenant: "acme", Regions: []string{"use1"}, Timeout: fsm.Duration(time.Hour),
		Workflows: []fsm.WorkflowSpec{{Name: "checkout", Count: n, Duration: fsm.Duration(time.Second), Rate: 10}}}
	s := &fsm.JobState{JobID: "use1-1704931200000-gate42-00001", Tenant: "acme", Status: fsm.JobStatusRunning, Fence: 1, Spec: spec,
		Regions: []fsm.RegionState{{Region: "use1", Accepted: true}}}
	wfs := map[string]*fsm.WorkflowState{}
	for i := range uint32(n) {
		id := fsm.WorkflowID(s.JobID, "use1", "checkout", i)
		wfs[id] = &fsm.WorkflowState{ID: id, JobID: s.JobID, Tenant: "acme", Region: "use1", Name: "checkout", Instance: i,
			Spec: spec.Workflows[0], Status: fsm.WorkflowStatusLeased, Worker: "w1", LeaseFence: 1}
	}
	pass := func() []fsm.Event {
		p := NewRegionPass("use1", 10_000, 5_000, []*WorkerSlot{{ID: "w1", Capacity: n, Load: n, Live: true}})
		p.Gov = &Governance{Maintenance: true, Drain: true}
		return RegionJob(s, wfs, p, false)
	}
	first := pass()
	if len(first) != MaxDrainPerPass {
		t.Fatalf("one pass drained %d leases, want %d", len(first), MaxDrainPerPass)
	}
	for _, e := range first {
		wfs[e.Body.(*fsm.WorkflowRescheduled).Workflow].Status = fsm.WorkflowStatusDispatched
	}
	if rest := pass(); len(rest) != n-MaxDrainPerPass {
		t.Fatalf("the next pass drained %d leases, want the %d left", len(rest), n-MaxDrainPerPass)
	}
}
