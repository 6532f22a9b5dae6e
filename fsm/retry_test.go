package fsm_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// retryFixture applies a worker, a dispatch, a lease and a failure, and
// returns the ledger and the workflow's id.
func retryFixture(t *testing.T) (fsm.Store, string, func(fence uint64, b fsm.Body) fsm.Result) {
	t.Helper()
	led, st := fsmtest.NewLedger(t, newStore)
	job := fsmtest.SampleJobID
	wf := fsm.WorkflowID(job, "use1", "checkout", 0)
	n := uint64(0)
	apply := func(fence uint64, b fsm.Body) fsm.Result {
		t.Helper()
		n++
		jobID, tenant := job, "acme"
		if b.EventType().IsJobless() {
			jobID, tenant = "", ""
		}
		e := fsmtest.NewEvent(fsmtest.ID(n), jobID, tenant, "use1", "mgr1", fsmtest.TS(1_800_000_000_000+int64(n), 0, 1), fence, b)
		r, err := led.Apply(led.AppliedIndex()+1, []fsm.Event{e})
		if err != nil {
			t.Fatal(err)
		}
		return r[0]
	}
	spec := fsmtest.Spec("acme", "use1").Workflows[0]
	for _, b := range []fsm.Body{
		&fsm.WorkerJoined{Worker: "w1", Capacity: 4},
		&fsm.WorkflowDispatched{Workflow: wf, Name: spec.Name, Instance: 0, Spec: spec},
	} {
		if r := apply(1, b); r.Outcome != fsm.OutcomeApplied {
			t.Fatalf("%T: %+v", b, r)
		}
	}
	return st, wf, apply
}

func workflow(t *testing.T, st fsm.Store, id string) *fsm.WorkflowState {
	t.Helper()
	var w *fsm.WorkflowState
	err := st.View(func(tx fsm.ReadTx) (err error) { w, err = tx.Workflow(id); return err })
	if err != nil || w == nil {
		t.Fatalf("workflow %s: %v %v", id, w, err)
	}
	return w
}

func TestWorkflowRetry_FailedReturnsToDispatchedWithHistory(t *testing.T) {
	led, wf, apply := retryFixture(t)
	steps := []struct {
		name  string
		fence uint64
		body  fsm.Body
		ok    bool
	}{
		{"retry of a dispatched workflow is illegal", 0, &fsm.WorkflowRetryScheduled{Workflow: wf, Attempt: 2, Cause: "error"}, false},
		{"lease 1", 1, &fsm.WorkflowLeased{Workflow: wf, Worker: "w1", LeaseUntilMs: 1, LeaseFence: 1}, true},
		{"progress", 1, &fsm.WorkflowProgress{Workflow: wf, Completed: 10, Failed: 90}, true},
		{"retry of a leased workflow is illegal", 1, &fsm.WorkflowRetryScheduled{Workflow: wf, Attempt: 2, Cause: "error"}, false},
		{"fail 1", 1, &fsm.WorkflowFailed{Workflow: wf, Error: strings.Repeat("é", 300)}, true},
		{"retry skipping an attempt", 1, &fsm.WorkflowRetryScheduled{Workflow: wf, Attempt: 3, Cause: "error"}, false},
		{"retry as attempt 2", 1, &fsm.WorkflowRetryScheduled{Workflow: wf, Attempt: 2, Cause: "error", NotBeforeMs: 5000}, true},
		{"lease 2", 2, &fsm.WorkflowLeased{Workflow: wf, Worker: "w1", LeaseUntilMs: 1, LeaseFence: 2}, true},
		{"fail 2", 2, &fsm.WorkflowFailed{Workflow: wf, Error: "timeout"}, true},
		{"the same attempt twice", 2, &fsm.WorkflowRetryScheduled{Workflow: wf, Attempt: 2, Cause: "timeout"}, false},
		{"retry as attempt 3", 2, &fsm.WorkflowRetryScheduled{Workflow: wf, Attempt: 3, Cause: "timeout", NotBeforeMs: 9000}, true},
		{"lease 3", 3, &fsm.WorkflowLeased{Workflow: wf, Worker: "w1", LeaseUntilMs: 1, LeaseFence: 3}, true},
		{"progress 3", 3, &fsm.WorkflowProgress{Workflow: wf, Completed: 100}, true},
		{"complete", 3, &fsm.WorkflowCompleted{Workflow: wf}, true},
	}
	for _, s := range steps {
		r := apply(s.fence, s.body)
		if (r.Outcome == fsm.OutcomeApplied) != s.ok {
			t.Fatalf("%s: %+v, want applied %v", s.name, r, s.ok)
		}
	}
	w := workflow(t, led, wf)
	if w.Status != fsm.WorkflowStatusCompleted || w.Attempt() != 3 || w.Retries != 2 || w.NotBeforeMs != 9000 {
		t.Fatalf("workflow %+v", w)
	}
	if w.TotalCompleted() != 110 || w.TotalFailed() != 90 || w.Completed != 100 {
		t.Fatalf("counters: total %d/%d, current %d", w.TotalCompleted(), w.TotalFailed(), w.Completed)
	}
	if len(w.RetryHistory) != 2 || w.RetryHistory[0].Attempt != 1 || w.RetryHistory[1].Attempt != 2 ||
		w.RetryHistory[1].Cause != "timeout" || w.RetryHistory[1].Error != "timeout" || w.RetryHistory[0].Failed != 90 {
		t.Fatalf("history %+v", w.RetryHistory)
	}
	if e := w.RetryHistory[0].Error; len(e) > fsm.MaxRetryErrorBytes || !strings.HasPrefix(e, "éé") || len(e)%2 != 0 {
		t.Fatalf("history error not cut on a rune boundary: %d bytes", len(e))
	}
	b, err := fsm.AppendWorkflowState(nil, w)
	if err != nil {
		t.Fatal(err)
	}
	back, err := fsm.DecodeWorkflowState(b)
	if err != nil || !reflect.DeepEqual(back, w) {
		t.Fatalf("record round trip: %v\n got  %+v\n want %+v", err, back, w)
	}
}

func TestWorkflowRecord_NoRetryMeansNoExtension(t *testing.T) {
	led, wf, _ := retryFixture(t)
	w := workflow(t, led, wf)
	plain, err := fsm.AppendWorkflowState(nil, w)
	if err != nil {
		t.Fatal(err)
	}
	r := *w
	r.Retries = 1
	ext, err := fsm.AppendWorkflowState(nil, &r)
	if err != nil {
		t.Fatal(err)
	}
	if len(ext) <= len(plain) || string(ext[:len(plain)]) != string(plain) {
		t.Fatal("the retry extension is not a tail after the old record")
	}
	// An all-zero extension is never written, so it is refused.
	zero := append(append([]byte{}, plain...), 1, 0, 0, 0, 0, 0)
	if _, err := fsm.DecodeWorkflowState(zero); err == nil {
		t.Fatal("an empty retry extension decoded")
	}
	bad := append(append([]byte{}, plain...), 2)
	if _, err := fsm.DecodeWorkflowState(bad); err == nil {
		t.Fatal("an unknown extension version decoded")
	}
}

func TestWorkflowRetryScheduled_Validate(t *testing.T) {
	wf := fsm.WorkflowID(fsmtest.SampleJobID, "use1", "checkout", 0)
	tests := []struct {
		name string
		b    *fsm.WorkflowRetryScheduled
		ok   bool
	}{
		{"valid", &fsm.WorkflowRetryScheduled{Workflow: wf, Attempt: 2, Cause: "error", NotBeforeMs: 1}, true},
		{"attempt 1 is no retry", &fsm.WorkflowRetryScheduled{Workflow: wf, Attempt: 1, Cause: "error"}, false},
		{"attempt over the limit", &fsm.WorkflowRetryScheduled{Workflow: wf, Attempt: fsm.MaxWorkflowAttempts + 1, Cause: "error"}, false},
		{"no cause", &fsm.WorkflowRetryScheduled{Workflow: wf, Attempt: 2}, false},
		{"negative not_before", &fsm.WorkflowRetryScheduled{Workflow: wf, Attempt: 2, Cause: "error", NotBeforeMs: -1}, false},
		{"another job's workflow", &fsm.WorkflowRetryScheduled{Workflow: "x/use1/a/0", Attempt: 2, Cause: "error"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := fsmtest.NewEvent(fsmtest.ID(1), fsmtest.SampleJobID, "acme", "use1", "mgr1", fsmtest.TS(1_800_000_000_000, 0, 1), 1, tc.b)
			err := e.Validate()
			if (err == nil) != tc.ok || (err != nil && !errors.Is(err, fsm.ErrInvalidEvent)) {
				t.Fatalf("Validate = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// TestGen_ProducesRetries keeps the generator honest: the model suites and
// the record fuzzer's corpus see workflows that were retried.
func TestGen_ProducesRetries(t *testing.T) {
	led, st := fsmtest.NewLedger(t, newStore)
	fsmtest.Drive(t, 3, led, fsmtest.NewModel(), 2000, 0)
	retried := 0
	err := st.View(func(tx fsm.ReadTx) error {
		return tx.Workflows("", func(w *fsm.WorkflowState) error {
			if w.Retries > 0 {
				retried++
			}
			return nil
		})
	})
	if err != nil || retried == 0 {
		t.Fatalf("no retried workflow in 2000 generated events (%v)", err)
	}
}
