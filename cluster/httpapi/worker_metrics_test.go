package httpapi

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

func TestHeldLeases_CountsEachLeaseTheWorkerStillHoldsOnce(t *testing.T) {
	leased := func(worker string, fence uint64) *fsm.WorkflowState {
		return &fsm.WorkflowState{Status: fsm.WorkflowStatusLeased, Worker: worker, LeaseFence: fence}
	}
	wfs := map[string]*fsm.WorkflowState{
		"mine":        leased("w1", 3),
		"mine2":       leased("w1", 4),
		"other":       leased("w2", 3),
		"rescheduled": {Status: fsm.WorkflowStatusDispatched, LeaseFence: 3},
		"completed":   {Status: fsm.WorkflowStatusCompleted, Worker: "w1", LeaseFence: 3},
	}
	rw := func(id string, fence uint64) api.RunningWorkflow {
		return api.RunningWorkflow{Workflow: id, LeaseFence: fence}
	}
	tests := []struct {
		name    string
		running []api.RunningWorkflow
		want    int
	}{
		{"nothing running", nil, 0},
		{"two held leases", []api.RunningWorkflow{rw("mine", 3), rw("mine2", 4)}, 2},
		{"a workflow named twice counts once", []api.RunningWorkflow{rw("mine", 3), rw("mine", 3)}, 1},
		{"a stale fence is no longer the worker's", []api.RunningWorkflow{rw("mine", 2)}, 0},
		{"lost, ended, another's or unknown leases are not renewed",
			[]api.RunningWorkflow{rw("other", 3), rw("rescheduled", 3), rw("completed", 3), rw("nowhere", 1)}, 0},
		{"a mix", []api.RunningWorkflow{rw("other", 3), rw("mine2", 4), rw("nowhere", 1)}, 1},
	}
	for _, tt := range tests {
		if got := heldLeases("w1", tt.running, wfs); got != tt.want {
			t.Errorf("%s: %d held leases, want %d", tt.name, got, tt.want)
		}
	}
}

func TestReportedFailures_CountAppliedOrPendingFailuresByCause(t *testing.T) {
	fail := func(msg string) report {
		return report{workflow: "w", fence: 1, end: &fsm.WorkflowFailed{Workflow: "w", Error: msg}}
	}
	done := report{workflow: "d", fence: 1, end: &fsm.WorkflowCompleted{Workflow: "d"}}
	progress := report{workflow: "p", fence: 1, progress: &fsm.WorkflowProgress{Workflow: "p", Completed: 1}}
	result := func(outcome fsm.Outcome) api.WorkerReportResult {
		if outcome == 0 {
			return api.WorkerReportResult{} // acknowledged below the tier
		}
		return api.WorkerReportResult{Outcome: outcome.String()}
	}
	reps := []report{
		fail("every simulated request failed"), fail("request timed out"), fail("permanent: bad script"),
		fail("boom"), fail("refused"), fail("repeated"), done, progress,
	}
	results := []api.WorkerReportResult{
		result(fsm.OutcomeApplied), result(fsm.OutcomeApplied), result(fsm.OutcomeApplied),
		result(0), result(fsm.OutcomeRejected), result(fsm.OutcomeDuplicate), result(fsm.OutcomeApplied), result(fsm.OutcomeApplied),
	}
	got := reportedFailures(reps, results)
	want := []govern.Cause{govern.CauseError, govern.CauseTimeout, govern.CausePermanent, govern.CauseError}
	if !slices.Equal(got, want) {
		t.Fatalf("causes %v, want %v", got, want)
	}

	reg := prometheus.NewRegistry()
	m := newWorkerMetrics(reg, true)
	m.countFailures(reps, results)
	for cause, n := range map[govern.Cause]float64{govern.CauseError: 2, govern.CauseTimeout: 1, govern.CausePermanent: 1} {
		var d dto.Metric
		if err := m.failures.WithLabelValues(string(cause)).Write(&d); err != nil {
			t.Fatal(err)
		}
		if d.GetCounter().GetValue() != n {
			t.Errorf("cause %s counted %v, want %v", cause, d.GetCounter().GetValue(), n)
		}
	}
}

func TestWorkerMetrics_OnlyManagersServeThem(t *testing.T) {
	for _, manager := range []bool{false, true} {
		reg := prometheus.NewRegistry()
		newWorkerMetrics(reg, manager)
		fams, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range fams {
			names = append(names, f.GetName())
		}
		want := []string(nil)
		if manager {
			want = []string{"strata_worker_lease_extensions_total", "strata_workflow_failures_total"}
		}
		if !slices.Equal(names, want) {
			t.Errorf("manager=%v serves %v, want %v", manager, names, want)
		}
	}
}
