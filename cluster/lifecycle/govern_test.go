package lifecycle

import (
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// The region's governance in the reconciler (govern.go), driven pass by
// pass against a ledger on memstore with a fake clock: outcomes trip a
// breaker, the transition is proposed until the ledger holds it, the
// cool-down half-opens it, and operators' records win.

func newGovSide(t *testing.T) (*stepSide, *regionGov) {
	t.Helper()
	s := newStepSide(t, false)
	s.l.cfg.Breakers = govern.BreakerConfig{Window: time.Minute, MinSamples: 3, FailureRate: 0.6, CoolDown: 5 * time.Second, Probes: 1}.WithDefaults()
	return s, newRegionGov(s.l)
}

// pass reads the ledger and counts the outcomes of wfs (of job type
// "render" of acme) at nowMs, as one reconciler pass does.
func (s *stepSide) govPass(g *regionGov, nowMs int64, wfs map[string]*fsm.WorkflowState) {
	s.t.Helper()
	err := s.l.cfg.Store.View(func(tx fsm.ReadTx) error { return g.read(tx) })
	if err != nil {
		s.t.Fatal(err)
	}
	job := &fsm.JobState{JobID: jobA, Tenant: "acme", Spec: fsm.JobSpec{Tenant: "acme", Type: "render"}}
	if wfs != nil {
		g.observe(job, wfs, nowMs)
	}
	g.tick(nowMs)
}

func ended(id string, st fsm.WorkflowStatus, atMs int64) *fsm.WorkflowState {
	return &fsm.WorkflowState{ID: id, JobID: jobA, Tenant: "acme", Status: st, HLC: hlc.Timestamp{WallMs: atMs}}
}

func (s *stepSide) applyProposed(g *regionGov) {
	s.t.Helper()
	for i := range g.propose {
		e := g.propose[i]
		e.HLC, e.Region, e.Node = hlc.Timestamp{WallMs: s.now.UnixMilli(), Node: 1}, "use1", "n1"
		s.apply(e)
	}
}

func admitOf(g *regionGov) int {
	return g.governance(func(string) int { return 0 }).Admit(&fsm.JobState{Tenant: "acme", Spec: fsm.JobSpec{Type: "render"}})
}

func TestRegionGov_TripProposeReadBackHalfOpen(t *testing.T) {
	s, g := newGovSide(t)
	t0 := int64(stepT0)
	wfs := map[string]*fsm.WorkflowState{
		"a": ended("a", fsm.WorkflowStatusFailed, t0), "b": ended("b", fsm.WorkflowStatusCompleted, t0),
		"c": ended("c", fsm.WorkflowStatusFailed, t0),
	}
	s.govPass(g, t0, wfs)
	if len(g.propose) != 1 || admitOf(g) != 0 {
		t.Fatalf("3 outcomes, 2 failed: proposals %v, admit %d; want the trip and no admission", names(g.propose), admitOf(g))
	}
	trip := g.propose[0]
	if b := trip.Body.(*fsm.PolicySet); b.Kind != govern.KindBreaker || b.Key != "acme/render" || trip.Tenant != "acme" || b.Requestor != BreakerRequestor {
		t.Fatalf("trip event %+v %+v", trip, b)
	}
	// The same outcomes seen again count nothing; the lost proposal goes again, with the same id.
	s.govPass(g, t0+100, wfs)
	if len(g.propose) != 1 || g.propose[0].ID != trip.ID {
		t.Fatalf("second pass proposals %v", names(g.propose))
	}
	s.applyProposed(g)
	s.govPass(g, t0+200, wfs)
	if len(g.propose) != 0 {
		t.Fatalf("the ledger holds the trip, yet %v", names(g.propose))
	}
	// Cool-down over: half-open, one probe admitted.
	s.govPass(g, t0+5_000, nil)
	if len(g.propose) != 1 || admitOf(g) != 1 {
		t.Fatalf("after the cool-down: %v, admit %d", names(g.propose), admitOf(g))
	}
	s.applyProposed(g)
	wfs["d"] = ended("d", fsm.WorkflowStatusCompleted, t0+6_000)
	s.govPass(g, t0+6_000, wfs)
	if len(g.propose) != 1 || admitOf(g) != -1 {
		t.Fatalf("the probe succeeded: %v, admit %d; want closed", names(g.propose), admitOf(g))
	}
}

func TestRegionGov_OperatorRecordsWinAndStaleOutcomesDoNotCount(t *testing.T) {
	s, g := newGovSide(t)
	t0 := int64(stepT0)
	old := map[string]*fsm.WorkflowState{ // ended two minutes ago: outside the window
		"a": ended("a", fsm.WorkflowStatusFailed, t0-120_000), "b": ended("b", fsm.WorkflowStatusFailed, t0-120_000),
		"c": ended("c", fsm.WorkflowStatusFailed, t0-120_000),
	}
	s.govPass(g, t0, old)
	if len(g.propose) != 0 {
		t.Fatalf("stale outcomes tripped the breaker: %v", names(g.propose))
	}
	v, _ := govern.EncodeBreaker(govern.BreakerRecord{State: "open", SinceMs: t0, Forced: true, Why: "operator"})
	s.apply(s.ev("", 0, t0, &fsm.PolicySet{Kind: govern.KindBreaker, Key: "acme/render", Value: v, Reason: "r", Ticket: "T", Requestor: "op"}))
	s.govPass(g, t0+60_000, nil)
	if admitOf(g) != 0 || len(g.propose) != 0 {
		t.Fatalf("forced open: admit %d, proposals %v (a forced breaker never half-opens)", admitOf(g), names(g.propose))
	}
	m, _ := govern.EncodeMaintenance(govern.MaintenanceRecord{On: true, SinceMs: t0})
	s.apply(s.ev("", 0, t0, &fsm.PolicySet{Kind: govern.KindMaintenance, Key: "use1", Value: m, Reason: "r", Ticket: "T", Requestor: "op"}))
	s.govPass(g, t0+60_001, nil)
	if !g.governance(func(string) int { return 0 }).Maintenance {
		t.Fatal("the maintenance record is not in the pass's governance")
	}
}

func TestRegionGov_RetryPolicy(t *testing.T) {
	_, g := newGovSide(t)
	g.defaults = map[string]govern.RetryPolicy{"render": {MaxAttempts: 2}}
	w := &fsm.WorkflowState{ID: jobA + "/use1/load/0", Status: fsm.WorkflowStatusFailed, Error: "boom", HLC: hlc.Timestamp{WallMs: stepT0}}
	tests := []struct {
		name    string
		spec    fsm.JobSpec
		retries uint32
		want    uint32 // attempt retried as; 0: not retried
	}{
		{"no type, no policy", fsm.JobSpec{}, 0, 0},
		{"the type's default", fsm.JobSpec{Type: "render"}, 0, 2},
		{"the type's default exhausted", fsm.JobSpec{Type: "render"}, 1, 0},
		{"the job's own policy wins", fsm.JobSpec{Type: "render", Retry: &fsm.RetryPolicy{MaxAttempts: 3, InitialBackoff: fsm.Duration(time.Second)}}, 1, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wf := *w
			wf.Retries = tc.retries
			b, why := g.retry(&fsm.JobState{JobID: jobA, Tenant: "acme", Spec: tc.spec}, &wf)
			switch {
			case tc.want == 0 && (b != nil || why == ""):
				t.Fatalf("retried %+v (why %q), want a refusal with a reason", b, why)
			case tc.want != 0 && (b == nil || b.Attempt != tc.want || b.NotBeforeMs <= stepT0):
				t.Fatalf("retry %+v (why %q), want attempt %d after a backoff", b, why, tc.want)
			}
		})
	}
}

func TestRegionGov_ATransitionTheLedgerNeverTakesIsGivenUp(t *testing.T) {
	s, g := newGovSide(t)
	t0 := int64(stepT0)
	wfs := map[string]*fsm.WorkflowState{
		"a": ended("a", fsm.WorkflowStatusFailed, t0), "b": ended("b", fsm.WorkflowStatusFailed, t0),
		"c": ended("c", fsm.WorkflowStatusFailed, t0),
	}
	s.govPass(g, t0, wfs)
	for i := 1; i < maxTransitionTries; i++ {
		s.govPass(g, t0+int64(i), wfs)
		if len(g.propose) != 1 {
			t.Fatalf("pass %d: %v, want the trip proposed again", i, names(g.propose))
		}
	}
	s.govPass(g, t0+maxTransitionTries, wfs)
	if len(g.propose) != 0 || admitOf(g) != -1 {
		t.Fatalf("after %d passes: %v, admit %d; want the ledger's state (closed) back", maxTransitionTries, names(g.propose), admitOf(g))
	}
}

func TestRegionGov_RetriesCountedOnceEvenAfterTheFailureWasSeen(t *testing.T) {
	s, g := newGovSide(t)
	t0 := int64(stepT0)
	w := ended("a", fsm.WorkflowStatusFailed, t0)
	s.govPass(g, t0, map[string]*fsm.WorkflowState{"a": w}) // a pass sees attempt 1 FAILED
	r := *w
	r.Status, r.Retries = fsm.WorkflowStatusDispatched, 1
	r.RetryHistory = []fsm.WorkflowAttempt{{Attempt: 1, Cause: "worker_error", FailedAt: hlc.Timestamp{WallMs: t0}}}
	for i := range 3 { // then the retry, seen by several passes
		s.govPass(g, t0+1+int64(i), map[string]*fsm.WorkflowState{"a": &r})
	}
	var m dto.Metric
	if err := g.m.retries.WithLabelValues("worker_error").Write(&m); err != nil {
		t.Fatal(err)
	}
	if got := m.GetCounter().GetValue(); got != 1 {
		t.Fatalf("retries counted %v times, want 1", got)
	}
	// The failure went into the window once: two more failures trip a
	// breaker of 3 samples at 0.6, one more does not.
	s.govPass(g, t0+10, map[string]*fsm.WorkflowState{"b": ended("b", fsm.WorkflowStatusFailed, t0+10)})
	if len(g.propose) != 0 {
		t.Fatalf("2 outcomes tripped the breaker: the first failure was counted twice (%v)", names(g.propose))
	}
}
