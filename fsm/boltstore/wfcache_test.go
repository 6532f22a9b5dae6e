package boltstore_test

import (
	"errors"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// readWorkflow returns the workflow as an Update reads it (through the
// workflow cache) and as a View reads it (the file).
func readWorkflow(t *testing.T, st *boltstore.Store, id string) (inUpdate, inView *fsm.WorkflowState) {
	t.Helper()
	if err := st.Update(func(tx fsm.Tx) error {
		var err error
		inUpdate, err = tx.Workflow(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.View(func(tx fsm.ReadTx) error {
		var err error
		inView, err = tx.Workflow(id)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return inUpdate, inView
}

// A workflow record put by an Update that then fails is never read back:
// the workflow cache forgets it, and Updates read what the file holds,
// with one transaction per Update and with group commit (a failure of
// the group's first Update loses nothing else, so the store goes on).
func TestWorkflowCache_FailedUpdateIsForgotten(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(t testing.TB) boltstore.Config
	}{
		{"commit=each", testConfig},
		{"commit=group", func(t testing.TB) boltstore.Config { return groupConfig(t, 1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openStore(t, tc.cfg(t))
			id := fsm.WorkflowID("use1-1700000000000-gate1-00001", "use1", "checkout", 0)
			leased := &fsm.WorkflowState{ID: id, JobID: "use1-1700000000000-gate1-00001", Tenant: "acme",
				Region: "use1", Name: "checkout", Spec: fsm.WorkflowSpec{Name: "checkout", Count: 1, Duration: 1e9},
				Status: fsm.WorkflowStatusLeased, Worker: "w1", LeaseFence: 1, HLC: fsmtest.TS(1, 0, 1)}
			if err := st.Update(func(tx fsm.Tx) error { return tx.PutWorkflow(leased) }); err != nil {
				t.Fatal(err)
			}
			progressed := *leased
			progressed.Completed, progressed.HLC = 7, fsmtest.TS(2, 0, 1)
			errInjected := errors.New("injected")
			err := st.Update(func(tx fsm.Tx) error {
				if err := tx.PutWorkflow(&progressed); err != nil {
					return err
				}
				if w, err := tx.Workflow(id); err != nil || w.Completed != 7 {
					t.Errorf("the failing Update reads its own put: %+v, %v", w, err)
				}
				return errInjected
			})
			if !errors.Is(err, errInjected) {
				t.Fatalf("update: %v, want the injected error", err)
			}
			inUpdate, inView := readWorkflow(t, st, id)
			if inUpdate == nil || inUpdate.Completed != 0 || inView == nil || inView.Completed != 0 {
				t.Fatalf("after the failed Update: Update reads %+v, View reads %+v; want the leased record", inUpdate, inView)
			}
			completed := *leased
			completed.Status, completed.Worker, completed.HLC = fsm.WorkflowStatusCompleted, "", fsmtest.TS(3, 0, 1)
			if err := st.Update(func(tx fsm.Tx) error { return tx.PutWorkflow(&completed) }); err != nil {
				t.Fatal(err)
			}
			inUpdate, inView = readWorkflow(t, st, id)
			if inUpdate.Status != fsm.WorkflowStatusCompleted || inView.Status != fsm.WorkflowStatusCompleted {
				t.Fatalf("after completion: Update reads %s, View reads %s", inUpdate.Status, inView.Status)
			}
		})
	}
}

// The model test with a workflow cache of one entry: most lookups go to
// the file, the others to the cache, and the ledger agrees with the
// model either way.
func TestLedger_WorkflowCacheOfOneAgainstModel(t *testing.T) {
	const seed = 44
	t.Logf("seed %d", seed)
	cfg := groupConfig(t, 9)
	cfg.WorkflowCacheEntries = 1
	led := ledgerOn(t, openStore(t, cfg))
	m := fsmtest.NewModel()
	fsmtest.Drive(t, seed, led, m, 3000, 25)
	fsmtest.CompareWithModel(t, led, m)
}
