package fsmtest

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// Issue 17, finding 2: event ids (and so idempotency keys, whose event id
// is derived from them) are scoped by tenant, and no rejection tells a
// tenant anything of another tenant's jobs.

// RunEventIDsScopedByTenant: two tenants use one event id independently
// (neither a conflict nor a duplicate), both events are read back by
// (tenant, id), and within a tenant a reused id still conflicts (other
// content) or is a duplicate (same content) — in the ledger, after a
// snapshot and restore, and in the store's own keys (PutEvent, Event,
// replacing one tenant's event in place leaves the other's alone).
func RunEventIDsScopedByTenant(t *testing.T, newStore NewStore) {
	led, st := NewLedger(t, newStore)
	a := NewJob("use1-1700000000000-gate1-00001", "acme", 100, "use1")
	b := NewJob("use1-1700000000000-gate1-00002", "globex", 100, "use1") // same event ids as a's
	ca, cb := a.Created(), b.Created()
	acc := a.Ev(1, 1, &fsm.JobAccepted{Region: "use1", WorkerCount: 2})
	bcc := b.Ev(2, 1, &fsm.JobAccepted{Region: "use1", WorkerCount: 5})
	if ca.ID != cb.ID || acc.ID != bcc.ID {
		t.Fatal("the two jobs' events do not share ids")
	}
	worker := NewEvent(ca.ID, "", "", "use1", "gate1", TS(1_700_000_000_100, 0, 1), 0,
		&fsm.WorkerJoined{Worker: "w-1", Capacity: 1}) // the empty tenant's
	r := mustApply(t, led, 1, ca, acc, cb, bcc, worker)
	for i, want := range []uint64{1, 2, 1, 2, 1} {
		if r[i].Outcome != fsm.OutcomeApplied || r[i].Seq != want {
			t.Fatalf("event %d: %s seq %d (%v), want applied at seq %d", i, r[i].Outcome, r[i].Seq, r[i].Err, want)
		}
	}

	conflict := cb
	conflict.Fence = 2
	r = mustApply(t, led, 2, cb, bcc, conflict, ca)
	for i, want := range []fsm.Outcome{fsm.OutcomeDuplicate, fsm.OutcomeDuplicate, fsm.OutcomeRejected, fsm.OutcomeDuplicate} {
		if r[i].Outcome != want {
			t.Fatalf("repeat %d: %s (%v), want %s", i, r[i].Outcome, r[i].Err, want)
		}
	}
	if r[0].Seq != 1 || r[1].Seq != 2 || r[3].Seq != 1 {
		t.Fatalf("duplicates answer seqs %d, %d, %d, want each tenant's own 1, 2, 1", r[0].Seq, r[1].Seq, r[3].Seq)
	}
	if !errors.Is(r[2].Err, fsm.ErrEventConflict) {
		t.Fatalf("id reused within globex with other content: %v, want ErrEventConflict", r[2].Err)
	}

	check := func(led *fsm.Ledger) {
		t.Helper()
		for _, e := range []fsm.Event{ca, acc, cb, bcc, worker} {
			se, err := led.Event(e.Tenant, e.ID)
			if err != nil {
				t.Fatalf("event %s of %q: %v", e.ID, e.Tenant, err)
			}
			if se.Tenant != e.Tenant || se.JobID != e.JobID || se.Type != e.Type || se.Fence != e.Fence {
				t.Fatalf("event %s of %q reads as %s of job %q of %q", e.ID, e.Tenant, se.Type, se.JobID, se.Tenant)
			}
		}
		if _, err := led.Event("initech", ca.ID); !errors.Is(err, fsm.ErrNotFound) {
			t.Fatalf("a third tenant reads another's event: %v", err)
		}
		for _, j := range []*Job{a, b} {
			s, err := led.Job(j.Tenant, j.ID)
			if err != nil || s.Status != fsm.JobStatusRunning {
				t.Fatalf("job %s of %s: %+v %v", j.ID, j.Tenant, s, err)
			}
		}
	}
	check(led)
	var snap bytes.Buffer
	if err := led.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	restored, _ := NewLedger(t, newStore)
	if err := restored.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	check(restored)

	// The store's keys: one id, two tenants, two events; replacing one
	// (tests of tampering) leaves the other.
	id := ID(1 << 50)
	put := func(tenant, jobID string, seq uint64, fence uint64) *fsm.StoredEvent {
		e := NewEvent(id, jobID, tenant, "use1", "gate1", TS(1_700_000_001_000, 0, 1), fence,
			&fsm.JobProgressReported{Region: "use1", Completed: 1})
		return &fsm.StoredEvent{Event: e, Seq: seq}
	}
	ea, eb := put("acme", a.ID, 3, 1), put("globex", b.ID, 3, 1)
	if err := st.Update(func(tx fsm.Tx) error {
		if err := tx.PutEvent(ea); err != nil {
			return err
		}
		if se, err := tx.Event("globex", id); se != nil || err != nil {
			t.Fatalf("globex reads acme's event inside the transaction: %+v %v", se, err)
		}
		return tx.PutEvent(eb)
	}); err != nil {
		t.Fatal(err)
	}
	ea2 := put("acme", a.ID, 3, 7)
	if err := st.Update(func(tx fsm.Tx) error { return tx.PutEvent(ea2) }); err != nil {
		t.Fatal(err)
	}
	err := st.View(func(tx fsm.ReadTx) error {
		for _, want := range []*fsm.StoredEvent{ea2, eb} {
			se, err := tx.Event(want.Tenant, id)
			if err != nil {
				return err
			}
			if se == nil || se.Tenant != want.Tenant || se.JobID != want.JobID || se.Fence != want.Fence || se.Seq != want.Seq {
				t.Fatalf("store event %s of %q: %+v, want fence %d of job %s", id, want.Tenant, se, want.Fence, want.JobID)
			}
		}
		for _, tenant := range []string{"", "initech", "acm", "acme\x00"} {
			if se, err := tx.Event(tenant, id); se != nil || err != nil {
				t.Fatalf("tenant %q reads event %s: %+v %v", tenant, id, se, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// RunRejectionsDoNotRevealOtherTenants: an event of tenant acme that
// names a job or a workflow of another tenant is rejected exactly as if
// the job or workflow did not exist (same outcome, same message, which
// names no other tenant; the sentinel ErrTenantMismatch still tells the
// two apart in process). A JobCreated or WorkflowDispatched whose id is
// taken by another tenant is still refused (ids are one space), with a
// message that does not name that tenant.
func RunRejectionsDoNotRevealOtherTenants(t *testing.T, newStore NewStore) {
	const secret = "umbrella-secret-tenant"
	theirs := NewJob("use1-1700000000000-gate1-00007", secret, 500, "use1")
	wf := fsm.WorkflowID(theirs.ID, "use1", "checkout", 1)
	created := theirs.Created()
	dispatched := theirs.Ev(1, 1, &fsm.WorkflowDispatched{Workflow: wf, Name: "checkout", Instance: 1,
		Spec: created.Body.(*fsm.JobCreated).Spec.Workflows[0]})

	// with: the other tenant's job and workflow exist; without: nothing.
	with, _ := NewLedger(t, newStore)
	mustApply(t, with, 1, created, dispatched)
	without, _ := NewLedger(t, newStore)

	ours := NewJob(theirs.ID, "acme", 900, "use1") // acme's events naming their job
	for _, tc := range []struct {
		name    string
		event   fsm.Event
		unknown error
	}{
		{"job accepted", ours.Ev(1, 1, &fsm.JobAccepted{Region: "use1", WorkerCount: 1}), fsm.ErrUnknownJob},
		{"cancellation", ours.Ev(1, 2, &fsm.JobCancellationRequested{Reason: "x", Requestor: "mallory"}), fsm.ErrUnknownJob},
		{"job failed in a region it is not assigned", ours.Ev(1, 2, &fsm.JobFailed{Error: "x", FailedRegion: "euw1"}), fsm.ErrUnknownJob},
		{"job completed", ours.Ev(1, 2, &fsm.JobCompleted{FinalStatus: "SUCCEEDED"}), fsm.ErrUnknownJob},
		{"workflow progress", ours.Ev(1, 1, &fsm.WorkflowProgress{Workflow: wf, Completed: 1}), fsm.ErrUnknownWorkflow},
		{"workflow cancelled", ours.Ev(1, 1, &fsm.WorkflowCancelled{Workflow: wf}), fsm.ErrUnknownWorkflow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			index := with.AppliedIndex() + 1
			got := mustApply(t, with, index, tc.event)[0]
			want := mustApply(t, without, index, tc.event)[0]
			if got.Outcome != fsm.OutcomeRejected || want.Outcome != fsm.OutcomeRejected {
				t.Fatalf("outcomes %s (%v) and, without their job, %s (%v); want rejected", got.Outcome, got.Err, want.Outcome, want.Err)
			}
			if got.Err.Error() != want.Err.Error() {
				t.Fatalf("their job shows:\n got  %q\n an unknown job gets %q", got.Err, want.Err)
			}
			if !errors.Is(got.Err, tc.unknown) || !errors.Is(want.Err, tc.unknown) {
				t.Fatalf("errors %v / %v do not match %v", got.Err, want.Err, tc.unknown)
			}
			if Class(got.Err) != Class(errors.Join(tc.unknown, fsm.ErrTenantMismatch)) || errors.Is(want.Err, fsm.ErrTenantMismatch) {
				t.Fatalf("sentinels: %s and, unknown, %s", Class(got.Err), Class(want.Err))
			}
			if strings.Contains(got.Err.Error(), secret) {
				t.Fatalf("the message names the other tenant: %v", got.Err)
			}
		})
	}

	// Ids taken by the other tenant: refused, naming no tenant; a taken
	// job id reads as a job id taken in acme's own tenant.
	mine := NewJob("use1-1700000000000-gate1-00008", "acme", 1900, "use1")
	mustApply(t, with, with.AppliedIndex()+1, mine.Created())
	takenTheirs := ours.Created()
	takenMine := NewJob(mine.ID, "acme", 2900, "use1").Created()
	r := mustApply(t, with, with.AppliedIndex()+1, takenTheirs, takenMine)
	if !errors.Is(r[0].Err, fsm.ErrJobExists) || !errors.Is(r[1].Err, fsm.ErrJobExists) {
		t.Fatalf("JobCreated of a taken id: %v / %v, want ErrJobExists", r[0].Err, r[1].Err)
	}
	if a, b := r[0].Err.Error(), strings.ReplaceAll(r[1].Err.Error(), mine.ID, theirs.ID); a != b {
		t.Fatalf("a job id taken by another tenant reads %q, one taken by acme %q", a, b)
	}
	steal := ours.Ev(1, 1, &fsm.WorkflowDispatched{Workflow: fsm.WorkflowID(theirs.ID, "use1", "checkout", 2),
		Name: "checkout", Instance: 2, Spec: created.Body.(*fsm.JobCreated).Spec.Workflows[0]})
	again := ours.Ev(1, 1, &fsm.WorkflowDispatched{Workflow: wf, Name: "checkout", Instance: 1,
		Spec: created.Body.(*fsm.JobCreated).Spec.Workflows[0]})
	r = mustApply(t, with, with.AppliedIndex()+1, steal, again)
	if !errors.Is(r[0].Err, fsm.ErrTenantMismatch) || !errors.Is(r[1].Err, fsm.ErrWorkflowExists) {
		t.Fatalf("dispatches onto their job: %v / %v", r[0].Err, r[1].Err)
	}
	for _, res := range r {
		if res.Outcome != fsm.OutcomeRejected || strings.Contains(res.Err.Error(), secret) {
			t.Fatalf("dispatch onto their job: %s %v", res.Outcome, res.Err)
		}
	}
}

func mustApply(t testing.TB, led *fsm.Ledger, index uint64, events ...fsm.Event) []fsm.Result {
	t.Helper()
	r, err := led.Apply(index, events)
	if err != nil {
		t.Fatalf("apply index %d: %v", index, err)
	}
	if len(r) != len(events) {
		t.Fatalf("apply index %d: %d results for %d events", index, len(r), len(events))
	}
	return r
}
