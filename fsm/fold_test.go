package fsm_test

import (
	"errors"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// Shorthand bodies for the job tables.
func accept(r string) fsm.Body { return &fsm.JobAccepted{Region: r, WorkerCount: 3} }
func progress(r string, completed uint64, done bool) fsm.Body {
	return &fsm.JobProgressReported{Region: r, Completed: completed, Done: done}
}
func cancel() fsm.Body         { return &fsm.JobCancellationRequested{Reason: "stop", Requestor: "alice"} }
func ack(r string) fsm.Body    { return &fsm.JobCancellationAcked{Region: r, WorkflowsCancelled: 1} }
func complete() fsm.Body       { return &fsm.JobCompleted{FinalStatus: "SUCCEEDED"} }
func fail() fsm.Body           { return &fsm.JobFailed{Error: "boom"} }
func timeout() fsm.Body        { return &fsm.JobTimedOut{TimeoutType: "job"} }
func failIn(r string) fsm.Body { return &fsm.JobFailed{Error: "boom", FailedRegion: r} }

// step is one event of a job table: sent with a fence from node 1, one
// millisecond after the previous event; then the outcome, the class of its
// error (fsmtest.Class) and the job's status are checked.
type step struct {
	body    fsm.Body
	fence   uint64
	outcome fsm.Outcome
	class   string
	status  fsm.JobStatus
}

const (
	applied  = fsm.OutcomeApplied
	absorbed = fsm.OutcomeAbsorbed
	rejected = fsm.OutcomeRejected
	terminal = "fsm: job is in a terminal state"
	ok       = "nil"
)

func ok1(body fsm.Body, status fsm.JobStatus) step { return step{body, 1, applied, ok, status} }

const (
	pending    = fsm.JobStatusPending
	running    = fsm.JobStatusRunning
	cancelling = fsm.JobStatusCancelling
	completed  = fsm.JobStatusCompleted
	failed     = fsm.JobStatusFailed
	cancelled  = fsm.JobStatusCancelled
	timedOut   = fsm.JobStatusTimedOut
)

const tableJobID = "use1-1700000000000-gate1-00001"

// runSteps creates a job (regions use1 and euw1, fence 1) and applies the
// steps one batch each.
func runSteps(t *testing.T, steps []step) *fsm.Ledger {
	t.Helper()
	led := newLedger(t)
	j := fsmtest.NewJob(tableJobID, "acme", 100, "use1", "euw1")
	if r, err := led.Apply(1, []fsm.Event{j.Created()}); err != nil || r[0].Outcome != applied {
		t.Fatalf("create: %v %v", r, err)
	}
	for i, s := range steps {
		r, err := led.Apply(uint64(i+2), []fsm.Event{j.Ev(1, s.fence, s.body)})
		if err != nil {
			t.Fatal(err)
		}
		if r[0].Outcome != s.outcome || fsmtest.Class(r[0].Err) != s.class {
			t.Fatalf("step %d (%s): got %s (%s: %v), want %s (%s)", i, s.body.EventType(),
				r[0].Outcome, fsmtest.Class(r[0].Err), r[0].Err, s.outcome, s.class)
		}
		js, err := led.Job("acme", tableJobID)
		if err != nil {
			t.Fatal(err)
		}
		if js.Status != s.status {
			t.Fatalf("step %d (%s): status %s, want %s", i, s.body.EventType(), js.Status, s.status)
		}
	}
	return led
}

// tr is fsmtest.Class of a *TransitionError.
func tr(from, to fsm.JobStatus, by fsm.EventType) string {
	return "transition " + from.String() + "->" + to.String() + " by " + by.String()
}

func TestJobTransitions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		// Legal paths.
		{"accept runs a pending job", []step{ok1(accept("use1"), running), ok1(accept("euw1"), running)}},
		{"running job completes", []step{ok1(accept("use1"), running), ok1(progress("use1", 5, true), running), ok1(complete(), completed)}},
		{"pending job is cancelled once every region acks", []step{
			ok1(cancel(), cancelling), ok1(ack("use1"), cancelling), ok1(ack("euw1"), cancelled)}},
		{"running job is cancelled", []step{ok1(accept("use1"), running), ok1(cancel(), cancelling),
			ok1(ack("euw1"), cancelling), ok1(ack("use1"), cancelled)}},
		{"pending job fails", []step{ok1(fail(), failed)}},
		{"running job fails", []step{ok1(accept("use1"), running), ok1(failIn("euw1"), failed)}},
		{"pending job times out", []step{ok1(timeout(), timedOut)}},
		{"running job times out", []step{ok1(accept("euw1"), running), ok1(timeout(), timedOut)}},
		{"acceptance during cancelling is recorded", []step{ok1(cancel(), cancelling), ok1(accept("use1"), cancelling)}},
		{"progress during cancelling is recorded", []step{ok1(cancel(), cancelling), ok1(progress("use1", 3, false), cancelling)}},

		// Illegal transitions: stored, absorbed, typed error naming both states.
		{"pending job cannot complete", []step{{complete(), 1, absorbed, tr(pending, completed, fsm.TypeJobCompleted), pending}}},
		{"ack without a cancellation", []step{ok1(accept("use1"), running),
			{ack("use1"), 1, absorbed, tr(running, cancelled, fsm.TypeJobCancellationAcked), running}}},
		{"cancelling job does not complete", []step{ok1(accept("use1"), running), ok1(cancel(), cancelling),
			{complete(), 1, absorbed, tr(cancelling, completed, fsm.TypeJobCompleted), cancelling}}},
		{"cancellation wins over a higher-fenced failure", []step{ok1(cancel(), cancelling),
			{fail(), 2, absorbed, tr(cancelling, failed, fsm.TypeJobFailed), cancelling}}},
		{"cancelling job does not time out", []step{ok1(cancel(), cancelling),
			{timeout(), 1, absorbed, tr(cancelling, timedOut, fsm.TypeJobTimedOut), cancelling}}},
		{"second cancellation at the same fence", []step{ok1(cancel(), cancelling),
			{cancel(), 1, absorbed, tr(cancelling, cancelling, fsm.TypeJobCancellationRequested), cancelling}}},

		// Acks count under every decision that stops the regions.
		{"failed job counts acks and stays failed", []step{ok1(accept("use1"), running), ok1(failIn("use1"), failed),
			ok1(ack("use1"), failed), ok1(ack("euw1"), failed), {progress("use1", 9, true), 1, absorbed, terminal, failed}}},
		{"timed out job counts acks and stays timed out", []step{ok1(timeout(), timedOut), ok1(ack("euw1"), timedOut),
			ok1(ack("euw1"), timedOut), ok1(ack("use1"), timedOut)}},
		{"acks under a failure count toward a cancellation that replaces it", []step{ok1(fail(), failed),
			ok1(ack("use1"), failed), ok1(cancel(), cancelling), ok1(ack("euw1"), cancelled)}},
		{"a cancellation after every region acked a failure is cancelled at once", []step{ok1(timeout(), timedOut),
			ok1(ack("use1"), timedOut), ok1(ack("euw1"), timedOut), ok1(cancel(), cancelled)}},
		{"a completion replacing a failure keeps its acks and absorbs new ones", []step{ok1(accept("use1"), running),
			{fail(), 2, applied, ok, failed}, ok1(ack("use1"), failed), {complete(), 3, applied, ok, completed},
			{ack("euw1"), 1, absorbed, terminal, completed}}},

		// Terminal states absorb.
		{"completed absorbs acceptance, progress and acks", []step{ok1(accept("use1"), running), ok1(complete(), completed),
			{accept("euw1"), 1, absorbed, terminal, completed}, {progress("use1", 9, true), 1, absorbed, terminal, completed},
			{ack("use1"), 1, absorbed, terminal, completed}}},
		{"failed absorbs an equal-fenced completion", []step{ok1(accept("use1"), running), ok1(fail(), failed),
			{complete(), 1, absorbed, terminal, failed}}},
		{"cancelled absorbs progress", []step{ok1(cancel(), cancelling), ok1(ack("use1"), cancelling), ok1(ack("euw1"), cancelled),
			{progress("use1", 1, false), 1, absorbed, terminal, cancelled}}},
		{"timed out absorbs a failure at the same fence", []step{ok1(timeout(), timedOut), {fail(), 1, absorbed, terminal, timedOut}}},

		// Conflict resolution between decisive events.
		{"cancellation replaces a completion", []step{ok1(accept("use1"), running), ok1(complete(), completed),
			ok1(cancel(), cancelling), ok1(ack("use1"), cancelling), ok1(ack("euw1"), cancelled)}},
		{"higher fence replaces a completion", []step{ok1(accept("use1"), running), ok1(complete(), completed),
			{fail(), 2, applied, ok, failed}}},
		{"higher-fenced completion replaces a failure of a running job", []step{ok1(accept("use1"), running),
			{fail(), 2, applied, ok, failed}, {complete(), 3, applied, ok, completed}}},
		{"higher-fenced completion cannot replace a failure of a pending job", []step{{fail(), 2, applied, ok, failed},
			{complete(), 3, absorbed, tr(failed, completed, fsm.TypeJobCompleted), failed}}},
		{"higher-fenced cancellation replaces a cancellation", []step{ok1(cancel(), cancelling), ok1(ack("use1"), cancelling),
			{cancel(), 2, applied, ok, cancelling}, ok1(ack("euw1"), cancelled)}},
		{"cancelled job takes a higher-fenced cancellation and stays cancelled", []step{ok1(cancel(), cancelling),
			ok1(ack("use1"), cancelling), ok1(ack("euw1"), cancelled), {cancel(), 2, applied, ok, cancelled}}},

		// Stale fences.
		{"a cancellation below the job fence still wins: cancellation ranks first", []step{ok1(accept("use1"), running),
			{complete(), 3, applied, ok, completed}, {cancel(), 2, applied, ok, cancelling}}},
		{"a completion below the job fence is stale", []step{ok1(accept("use1"), running), {fail(), 3, applied, ok, failed},
			{complete(), 2, absorbed, "stale fence 2 < 3", failed}}},
		{"failure below the fence of a timeout is stale", []step{{timeout(), 3, applied, ok, timedOut},
			{fail(), 2, absorbed, "stale fence 2 < 3", timedOut}}},
		{"absorbed control events do not raise the fence", []step{ok1(cancel(), cancelling),
			{fail(), 5, absorbed, tr(cancelling, failed, fsm.TypeJobFailed), cancelling}, {cancel(), 2, applied, ok, cancelling}}},

		// Progress is cumulative.
		{"lower progress report changes nothing", []step{ok1(accept("use1"), running), ok1(progress("use1", 10, false), running),
			ok1(progress("use1", 5, true), running)}},
	} {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, tc.steps) })
	}
}

func TestJobTransitions_ErrorNamesBothStates(t *testing.T) {
	led := newLedger(t)
	j := fsmtest.NewJob(tableJobID, "acme", 1, "use1")
	r, err := led.Apply(1, []fsm.Event{j.Created(), j.Ev(1, 1, complete())})
	if err != nil {
		t.Fatal(err)
	}
	var te *fsm.TransitionError
	if !errors.As(r[1].Err, &te) || !errors.Is(r[1].Err, fsm.ErrIllegalTransition) {
		t.Fatalf("got %v, want a *TransitionError", r[1].Err)
	}
	if te.From != pending || te.To != completed || te.Event != fsm.TypeJobCompleted || te.JobID != tableJobID {
		t.Fatalf("error %+v", te)
	}
	if msg := te.Error(); msg != "fsm: job "+tableJobID+": illegal transition PENDING -> COMPLETED by JobCompleted" {
		t.Fatalf("message %q", msg)
	}
}

func TestJobProgress_TakesTheMaximumPerRegion(t *testing.T) {
	led := runSteps(t, []step{
		ok1(accept("use1"), running),
		ok1(&fsm.JobProgressReported{Region: "use1", Completed: 10, Failed: 1, Stats: fsm.Stats{{Name: "req", Value: 50}}}, running),
		ok1(&fsm.JobProgressReported{Region: "use1", Completed: 7, Failed: 4, Stats: fsm.Stats{{Name: "err", Value: 2}, {Name: "req", Value: 40}}, Done: true}, running),
		ok1(&fsm.JobProgressReported{Region: "use1", Completed: 8, Failed: 2}, running),
	})
	js, _ := led.Job("acme", tableJobID)
	r := js.Region("use1")
	want := fsm.RegionState{Region: "use1", Accepted: true, WorkerCount: 3, Completed: 10, Failed: 4,
		Stats: fsm.Stats{{Name: "err", Value: 2}, {Name: "req", Value: 50}}, Done: true}
	if r == nil || r.Region != want.Region || r.Completed != want.Completed || r.Failed != want.Failed || !r.Done ||
		r.Stats.Get("req") != 50 || r.Stats.Get("err") != 2 || len(r.Stats) != 2 {
		t.Fatalf("region %+v, want %+v", r, want)
	}
	if js.Events != 5 {
		t.Fatalf("events %d, want 5", js.Events)
	}
}

// A region that acked a failure reads CANCELLED (its workflows were
// cancelled) in a FAILED job, with its count of cancelled workflows; the
// other region keeps its phase.
func TestJobAck_UnderAFailureMarksTheRegion(t *testing.T) {
	led := runSteps(t, []step{ok1(accept("use1"), running), ok1(accept("euw1"), running), ok1(fail(), failed),
		ok1(&fsm.JobCancellationAcked{Region: "use1", WorkflowsCancelled: 4}, failed),
		ok1(&fsm.JobCancellationAcked{Region: "use1", WorkflowsCancelled: 2}, failed)})
	js, err := led.Job("acme", tableJobID)
	if err != nil {
		t.Fatal(err)
	}
	use1, euw1 := js.Region("use1"), js.Region("euw1")
	if !use1.CancelAcked || use1.WorkflowsCancelled != 4 || use1.Status() != "CANCELLED" {
		t.Fatalf("use1 %+v (%s), want acked with 4 workflows cancelled", *use1, use1.Status())
	}
	if euw1.CancelAcked || euw1.Status() != "RUNNING" {
		t.Fatalf("euw1 %+v (%s), want running and not acked", *euw1, euw1.Status())
	}
	if js.Status != failed || js.Decision.Type != fsm.TypeJobFailed {
		t.Fatalf("job %s decided by %s, want FAILED", js.Status, js.Decision.Type)
	}
}
