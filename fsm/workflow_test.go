package fsm_test

import (
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

const tableWorkflow = tableJobID + "/use1/checkout/0"

// wstep is one event of a workflow table: its envelope fence, the
// expected outcome and error class, and the workflow status after it.
type wstep struct {
	body    fsm.Body
	fence   uint64
	outcome fsm.Outcome
	class   string
	status  fsm.WorkflowStatus
}

const (
	wDispatched = fsm.WorkflowStatusDispatched
	wLeased     = fsm.WorkflowStatusLeased
	wCompleted  = fsm.WorkflowStatusCompleted
	wFailed     = fsm.WorkflowStatusFailed
	wCancelled  = fsm.WorkflowStatusCancelled
)

func lease(worker string, fence uint64) fsm.Body {
	return &fsm.WorkflowLeased{Workflow: tableWorkflow, Worker: worker, LeaseUntilMs: 1_700_000_005_000, LeaseFence: fence}
}
func wprogress(c uint64) fsm.Body {
	return &fsm.WorkflowProgress{Workflow: tableWorkflow, Completed: c}
}
func wcomplete() fsm.Body { return &fsm.WorkflowCompleted{Workflow: tableWorkflow} }
func wfail() fsm.Body     { return &fsm.WorkflowFailed{Workflow: tableWorkflow, Error: "oom"} }
func wcancel() fsm.Body   { return &fsm.WorkflowCancelled{Workflow: tableWorkflow} }
func resched(from string) fsm.Body {
	return &fsm.WorkflowRescheduled{Workflow: tableWorkflow, FromWorker: from, Reason: "lease expired"}
}

func wtr(from, to fsm.WorkflowStatus, by fsm.EventType) string {
	return "workflow transition " + from.String() + "->" + to.String() + " by " + by.String()
}

func wok(body fsm.Body, fence uint64, status fsm.WorkflowStatus) wstep {
	return wstep{body, fence, applied, ok, status}
}

func TestWorkflowTransitions(t *testing.T) {
	unknownWorker := fsm.ErrUnknownWorker.Error()
	for _, tc := range []struct {
		name  string
		steps []wstep
	}{
		{"lease, report, complete", []wstep{wok(lease("w1", 1), 0, wLeased), wok(wprogress(5), 1, wLeased), wok(wcomplete(), 1, wCompleted)}},
		{"leased workflow fails", []wstep{wok(lease("w1", 1), 0, wLeased), wok(wfail(), 1, wFailed)}},
		{"dispatched workflow is cancelled", []wstep{wok(wcancel(), 0, wCancelled)}},
		{"leased workflow is cancelled", []wstep{wok(lease("w1", 1), 0, wLeased), wok(wcancel(), 0, wCancelled)}},
		{"reschedule returns to dispatched, the next lease needs a higher fence", []wstep{
			wok(lease("w1", 1), 0, wLeased), wok(resched("w1"), 0, wDispatched),
			{lease("w2", 1), 0, rejected, "stale fence 1 < 1", wDispatched},
			wok(lease("w2", 2), 0, wLeased),
			{wprogress(9), 1, rejected, "stale fence 1 < 2", wLeased},
			wok(wprogress(9), 2, wLeased)}},
		{"report of a dispatched workflow", []wstep{{wprogress(1), 0, rejected, wtr(wDispatched, wLeased, fsm.TypeWorkflowProgress), wDispatched}}},
		{"completion of a dispatched workflow", []wstep{{wcomplete(), 0, rejected, wtr(wDispatched, wCompleted, fsm.TypeWorkflowCompleted), wDispatched}}},
		{"lease of a leased workflow", []wstep{wok(lease("w1", 1), 0, wLeased),
			{lease("w2", 2), 0, rejected, wtr(wLeased, wLeased, fsm.TypeWorkflowLeased), wLeased}}},
		{"lease to an unregistered worker", []wstep{{lease("w9", 1), 0, rejected, unknownWorker, wDispatched}}},
		{"reschedule from a worker without the lease", []wstep{wok(lease("w1", 1), 0, wLeased),
			{resched("w2"), 0, rejected, fsm.ErrWorkerMismatch.Error(), wLeased}}},
		{"report with a lease fence from the future", []wstep{wok(lease("w1", 1), 0, wLeased),
			{wcomplete(), 2, rejected, "stale fence 2 < 1", wLeased}}},
		{"completed workflow takes nothing", []wstep{wok(lease("w1", 1), 0, wLeased), wok(wcomplete(), 1, wCompleted),
			{wcancel(), 0, rejected, wtr(wCompleted, wCancelled, fsm.TypeWorkflowCancelled), wCompleted},
			{resched("w1"), 0, rejected, wtr(wCompleted, wDispatched, fsm.TypeWorkflowRescheduled), wCompleted}}},
		{"cancelled workflow takes no lease", []wstep{wok(wcancel(), 0, wCancelled),
			{lease("w1", 1), 0, rejected, wtr(wCancelled, wLeased, fsm.TypeWorkflowLeased), wCancelled}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			led := newLedger(t)
			j := fsmtest.NewJob(tableJobID, "acme", 100, "use1")
			setup := []fsm.Event{
				j.Ev(1, 0, &fsm.WorkerJoined{Worker: "w1", Capacity: 2}),
				j.Ev(1, 0, &fsm.WorkerJoined{Worker: "w2", Capacity: 2}),
				j.Ev(1, 1, &fsm.WorkflowDispatched{Workflow: tableWorkflow, Name: "checkout", Instance: 0,
					Spec: fsmtest.Spec("acme", "use1").Workflows[0]}),
			}
			for i := range 2 {
				setup[i].JobID, setup[i].Tenant = "", ""
			}
			r, err := led.Apply(1, setup)
			if err != nil || r[2].Outcome != applied {
				t.Fatalf("setup: %+v %v", r, err)
			}
			for i, s := range tc.steps {
				head, _ := led.ChainHead("acme")
				r, err := led.Apply(uint64(i+2), []fsm.Event{j.Ev(1, s.fence, s.body)})
				if err != nil {
					t.Fatal(err)
				}
				if r[0].Outcome != s.outcome || fsmtest.Class(r[0].Err) != s.class {
					t.Fatalf("step %d (%s): got %s (%s: %v), want %s (%s)", i, s.body.EventType(),
						r[0].Outcome, fsmtest.Class(r[0].Err), r[0].Err, s.outcome, s.class)
				}
				page, err := led.Workflows(fsm.WorkflowQuery{Tenant: "acme", JobID: tableJobID})
				if err != nil || len(page.Workflows) != 1 {
					t.Fatalf("workflows %+v %v", page, err)
				}
				if w := page.Workflows[0]; w.Status != s.status {
					t.Fatalf("step %d: status %s, want %s", i, w.Status, s.status)
				}
				if after, _ := led.ChainHead("acme"); s.outcome == rejected && after != head {
					t.Fatalf("step %d: a rejected workflow event was chained", i)
				}
			}
		})
	}
}

func TestWorkerRegistry(t *testing.T) {
	led := newLedger(t)
	ev := func(n uint64, body fsm.Body) fsm.Event {
		return fsmtest.NewEvent(fsmtest.ID(n), "", "", "use1", "mgr1", fsmtest.TS(1_700_000_000_000+int64(n), 0, 1), 0, body)
	}
	join := func(w string) fsm.Body { return &fsm.WorkerJoined{Worker: w, Capacity: 4} }
	leave := func(w string) fsm.Body { return &fsm.WorkerLeft{Worker: w, Reason: "drain"} }
	r, err := led.Apply(1, []fsm.Event{ev(1, join("w1")), ev(2, join("w1")), ev(3, leave("w2")),
		ev(4, leave("w1")), ev(5, leave("w1")), ev(6, join("w1")), ev(7, join("w2"))})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ok, fsm.ErrWorkerExists.Error(), fsm.ErrUnknownWorker.Error(), ok, fsm.ErrUnknownWorker.Error(), ok, ok}
	for i := range want {
		if got := fsmtest.Class(r[i].Err); got != want[i] {
			t.Fatalf("event %d: %s, want %s", i, got, want[i])
		}
	}
	ws, err := led.Workers()
	if err != nil || len(ws) != 2 || ws[0].ID != "w1" || !ws[0].Active || !ws[1].Active {
		t.Fatalf("workers %+v %v", ws, err)
	}
	if h, _ := led.VerifyChain(""); h.Seq != 4 {
		t.Fatalf("system chain holds %d events, want 4", h.Seq)
	}
}
