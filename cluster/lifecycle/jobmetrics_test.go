package lifecycle

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/strata-ledger/strata/cluster/lifecycle/plan"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/memstore"
	"github.com/strata-ledger/strata/hlc"
)

func TestJobEnd_OutcomeCauseAndLatency(t *testing.T) {
	at := func(ms int64) hlc.Timestamp { return hlc.Timestamp{WallMs: ms} }
	failedWith := func(msg string) fsm.Decision {
		return fsm.Decision{Type: fsm.TypeJobFailed, Body: &fsm.JobFailed{Error: msg, FailedRegion: "use1"}}
	}
	tests := []struct {
		name              string
		end               fsm.JobEnd
		outcome, cause    string
		wantLatencyMillis int64
	}{
		{"completed", fsm.JobEnd{Status: fsm.JobStatusCompleted, Created: at(1_000), At: at(91_500),
			Decision: fsm.Decision{Type: fsm.TypeJobCompleted}}, OutcomeCompleted, "", 90_500},
		{"cancelled", fsm.JobEnd{Status: fsm.JobStatusCancelled, Created: at(1_000), At: at(3_000),
			Decision: fsm.Decision{Type: fsm.TypeJobCancellationRequested}}, OutcomeCancelled, "", 2_000},
		{"failed, not retried", fsm.JobEnd{Status: fsm.JobStatusFailed, Created: at(1_000), At: at(2_000),
			Decision: failedWith("workflow w failed: every simulated request failed")}, OutcomeFailed, JobFailureWorkflow, 1_000},
		{"failed on its last attempt", fsm.JobEnd{Status: fsm.JobStatusFailed, Created: at(1_000), At: at(2_000),
			Decision: failedWith("workflow w failed (attempt 3, attempts exhausted (3 of 3)): boom")}, OutcomeFailed, JobFailureRetriesExhausted, 1_000},
		{"timed out", fsm.JobEnd{Status: fsm.JobStatusTimedOut, Created: at(1_000), At: at(601_000),
			Decision: fsm.Decision{Type: fsm.TypeJobTimedOut, Body: &fsm.JobTimedOut{TimeoutType: "job"}}}, OutcomeTimedOut, JobFailureTimeout, 600_000},
		{"an end stamped before its creation (HLC of another node) is 0 s", fsm.JobEnd{Status: fsm.JobStatusCompleted,
			Created: at(5_000), At: at(4_990)}, OutcomeCompleted, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if o, ok := outcomeOf(tt.end.Status); !ok || o != tt.outcome {
				t.Errorf("outcome %q (%v), want %q", o, ok, tt.outcome)
			}
			c, ok := failureCause(tt.end)
			if c != tt.cause || ok != (tt.cause != "") {
				t.Errorf("cause %q (%v), want %q", c, ok, tt.cause)
			}
			if got := jobLatency(tt.end); got != time.Duration(tt.wantLatencyMillis)*time.Millisecond {
				t.Errorf("latency %s, want %d ms", got, tt.wantLatencyMillis)
			}
		})
	}
	for _, s := range []fsm.JobStatus{fsm.JobStatusPending, fsm.JobStatusRunning, fsm.JobStatusCancelling} {
		if o, ok := outcomeOf(s); ok {
			t.Errorf("live status %s has outcome %q", s, o)
		}
	}
}

// TestFailureCause_GovernsWordsForExhaustedAttempts runs the region's
// real chain — the reconciler's retry decision (regionGov.retry, i.e.
// cluster/govern.DecideRetry) and the planner's JobFailed — so that a
// change of their words breaks this test, not the metric.
func TestFailureCause_GovernsWordsForExhaustedAttempts(t *testing.T) {
	_, g := newGovSide(t)
	tests := []struct {
		name    string
		retry   *fsm.RetryPolicy
		retries uint32
		err     string
		want    string
	}{
		{"the last of 2 attempts failed", &fsm.RetryPolicy{MaxAttempts: 2}, 1, "boom", JobFailureRetriesExhausted},
		{"a permanent failure is not retried", &fsm.RetryPolicy{MaxAttempts: 5}, 0, "permanent: bad script", JobFailureWorkflow},
		{"no retry policy", nil, 0, "boom", JobFailureWorkflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := fsm.JobSpec{Tenant: "acme", Regions: []string{"use1"}, Timeout: fsm.Duration(time.Hour), Retry: tt.retry,
				Workflows: []fsm.WorkflowSpec{{Name: "load", Count: 1, Duration: fsm.Duration(time.Second), Rate: 10}}}
			s := &fsm.JobState{JobID: jobA, Tenant: "acme", Status: fsm.JobStatusRunning, Fence: 1, Spec: spec,
				Regions: []fsm.RegionState{{Region: "use1", Accepted: true}}}
			id := fsm.WorkflowID(jobA, "use1", "load", 0)
			w := &fsm.WorkflowState{ID: id, JobID: jobA, Tenant: "acme", Region: "use1", Name: "load", Spec: spec.Workflows[0],
				Status: fsm.WorkflowStatusFailed, LeaseFence: 1, Retries: tt.retries, Error: tt.err, HLC: hlc.Timestamp{WallMs: stepT0}}
			p := plan.NewRegionPass("use1", stepT0, 5_000, nil)
			p.Gov = g.governance(func(string) int { return 0 })
			var failure *fsm.Event
			for _, e := range plan.RegionJob(s, map[string]*fsm.WorkflowState{id: w}, p, false) {
				if e.Type == fsm.TypeJobFailed {
					failure = &e
				}
			}
			if failure == nil {
				t.Fatal("the region planned no JobFailed")
			}
			end := fsm.JobEnd{Status: fsm.JobStatusFailed, Decision: fsm.Decision{Type: fsm.TypeJobFailed, Body: failure.Body}}
			if got, _ := failureCause(end); got != tt.want {
				t.Fatalf("cause %q of %q, want %q", got, failure.Body.(*fsm.JobFailed).Error, tt.want)
			}
		})
	}
}

// switchLeader is a Leadership whose answer a test sets.
type switchLeader struct{ atomic.Bool }

func (s *switchLeader) IsLeader() bool            { return s.Load() }
func (*switchLeader) Barrier(time.Duration) error { return nil }

// counterValue reads a counter (prometheus/testutil's dependencies are
// not in go.sum).
func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// seriesCount is the number of series reg serves of family name.
func seriesCount(t *testing.T, reg *prometheus.Registry, name string) int {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return len(f.GetMetric())
		}
	}
	return 0
}

func histogramCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// gateWithEnds is a gate's Lifecycle and a ledger that tells it its job
// ends, as the node wires them.
func gateWithEnds(t *testing.T) (*Lifecycle, *switchLeader, *fsm.Ledger, *prometheus.Registry) {
	t.Helper()
	st := memstore.New()
	cfg := testConfig(true, "use1", st, nil, func() time.Time { return time.UnixMilli(stepT0) })
	reg := prometheus.NewRegistry()
	lead := &switchLeader{}
	cfg.Registerer, cfg.Leadership = reg, lead
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	led, err := fsm.New(fsm.Config{Store: st, Ended: l.JobEnded})
	if err != nil {
		t.Fatal(err)
	}
	return l, lead, led, reg
}

func TestJobMetrics_OnlyTheLeadingTermCounts(t *testing.T) {
	l, lead, led, reg := gateWithEnds(t)
	s := &stepSide{t: t, ledger: led, l: l}
	// Job n is created at stepT0 and ends 30 s later, completed (even n)
	// or failed.
	end := func(n int) {
		job := fmt.Sprintf("use1-1700000000000-g1-%05d", n+1)
		s.apply(s.created(job, 1, time.Hour, stepT0, "use1"))
		s.apply(s.ev(job, 1, stepT0+1, &fsm.JobAccepted{Region: "use1", WorkerCount: 1}))
		if n%2 == 0 {
			s.apply(s.ev(job, 2, stepT0+30_000, &fsm.JobCompleted{FinalStatus: "COMPLETED"}))
		} else {
			s.apply(s.ev(job, 2, stepT0+30_000, &fsm.JobFailed{Error: "workflow w failed: boom", FailedRegion: "use1"}))
		}
	}
	completedN := func() uint64 { return histogramCount(t, l.jobM.latency.WithLabelValues(OutcomeCompleted)) }
	failedN := func() float64 { return counterValue(t, l.jobM.failed.WithLabelValues(JobFailureWorkflow)) }

	end(0) // a follower: nothing
	lead.Store(true)
	end(2) // Raft says leader, but no term runs yet (before its barrier): nothing
	if completedN() != 0 {
		t.Fatalf("counted %d completions before the term led", completedN())
	}
	l.jobM.leading.Store(true) // lead() after its barrier
	end(4)
	end(5)
	if completedN() != 1 || failedN() != 1 {
		t.Fatalf("the leading term counted %d completions and %v failures, want 1 and 1", completedN(), failedN())
	}
	var m dto.Metric
	if err := l.jobM.latency.WithLabelValues(OutcomeCompleted).(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	if sum := m.GetHistogram().GetSampleSum(); sum != 30 {
		t.Fatalf("latency sum %v s, want the 30 s from creation to completion", sum)
	}
	lead.Store(false) // Raft moved on before the term noticed
	end(6)
	l.endTerm()
	lead.Store(true)
	end(8)
	if completedN() != 1 {
		t.Fatalf("counted %d completions, want only the leading term's 1", completedN())
	}
	// Every label value is served from the start; a gate has no lease counter.
	if n := seriesCount(t, reg, "strata_job_latency_seconds"); n != 4 {
		t.Errorf("%d latency series, want one per outcome (4)", n)
	}
	if n := seriesCount(t, reg, "strata_jobs_failed_total"); n != 3 {
		t.Errorf("%d failure series, want one per cause (3)", n)
	}
	if n := seriesCount(t, reg, "strata_workflow_leases_lost_total"); n != 0 {
		t.Errorf("a gate serves strata_workflow_leases_lost_total")
	}
}

func TestJobMetrics_TheLeadingManagerCountsLeasesTakenBack(t *testing.T) {
	st := memstore.New()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(false, "use1", st, led, func() time.Time { return time.UnixMilli(stepT0) })
	reg := prometheus.NewRegistry()
	lead := &switchLeader{}
	cfg.Registerer, cfg.Leadership = reg, lead
	l, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rescheduled := fsm.Result{Outcome: fsm.OutcomeApplied, Type: fsm.TypeWorkflowRescheduled, JobID: jobA}
	entry := [][]fsm.Result{
		{rescheduled, {Outcome: fsm.OutcomeApplied, Type: fsm.TypeWorkflowLeased, JobID: jobA}},
		{rescheduled, {Outcome: fsm.OutcomeRejected, Type: fsm.TypeWorkflowRescheduled, JobID: jobA},
			{Outcome: fsm.OutcomeDuplicate, Type: fsm.TypeWorkflowRescheduled, JobID: jobA}},
	}
	l.Entry(entry) // a follower
	lead.Store(true)
	l.jobM.leading.Store(true)
	l.Entry(entry)
	lead.Store(false)
	l.Entry(entry) // Raft moved on
	if got := counterValue(t, l.jobM.leasesLost); got != 2 {
		t.Fatalf("counted %v leases taken back, want the 2 applied while leading", got)
	}
	if n := seriesCount(t, reg, "strata_job_latency_seconds"); n != 0 {
		t.Errorf("a manager serves strata_job_latency_seconds")
	}
}
