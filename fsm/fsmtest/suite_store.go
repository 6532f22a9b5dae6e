package fsmtest

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

func snapshotBytes(t testing.TB, led *fsm.Ledger) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := led.Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// RunStoreAtomicity: an Update or a Replace whose fn fails leaves no
// trace of its writes (new and replaced events, job, chain head,
// workflow, worker, forward marks new and raised, applied index, job
// history index).
func RunStoreAtomicity(t *testing.T, newStore NewStore) {
	led, st := NewLedger(t, newStore)
	m := NewModel()
	Drive(t, 41, led, m, 400, 0)
	before := snapshotBytes(t, led)
	jobID := m.JobIDs()[0]
	job := m.Job(jobID)
	head := m.ChainHead(job.Tenant)
	boom := errors.New("boom")
	existing := progressAfter(t, st, job.Tenant, 0)
	// writeAll writes one of everything, then fails. fresh: the store is
	// empty (Replace), so only new things can be written.
	writeAll := func(fresh bool) func(tx fsm.Tx) error {
		return func(tx fsm.Tx) error {
			changed := *existing
			changed.Fence++
			created := job.Clone()
			created.JobID = "use1-1-gate9-00009"
			seq := head.Seq + 1
			if fresh {
				seq = 1
			}
			e := NewEvent(ID(1<<40), jobID, job.Tenant, "use1", "gate1", job.Last.HLC, 1,
				&fsm.JobProgressReported{Region: job.Regions[0].Region, Completed: 1})
			writes := []func() error{
				func() error { return tx.PutEvent(&fsm.StoredEvent{Event: e, Seq: seq}) },
				func() error { return tx.PutChainHead(job.Tenant, fsm.ChainHead{Seq: seq}) },
				func() error { return tx.PutChainHead("newtenant", fsm.ChainHead{Seq: 1}) },
				func() error { return tx.PutJob(created) },
				func() error { return tx.PutJob(job) },
				func() error {
					return tx.PutWorkflow(&fsm.WorkflowState{ID: jobID + "/use1/x/1", JobID: jobID, Tenant: job.Tenant})
				},
				func() error { return tx.PutWorker(&fsm.WorkerState{ID: "w-new", Active: true}) },
				func() error { return tx.PutForwardMark(job.Tenant, 1<<40) },
				func() error { return tx.PutForwardMark("newtenant", 1) },
				func() error { return tx.SetAppliedIndex(1 << 40) },
			}
			if !fresh {
				writes = append(writes, func() error { return tx.PutEvent(&changed) })
			}
			for _, w := range writes {
				if err := w(); err != nil {
					t.Fatalf("write inside the transaction: %v", err)
				}
			}
			if se, _ := tx.Event(e.Tenant, e.ID); se == nil {
				t.Fatal("a transaction does not read its own write")
			}
			if seq, _ := tx.ForwardMark(job.Tenant); seq != 1<<40 {
				t.Fatalf("a transaction reads forward mark %d after writing %d", seq, uint64(1<<40))
			}
			return boom
		}
	}
	if err := st.Update(writeAll(false)); !errors.Is(err, boom) {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	if err := st.Replace(writeAll(true)); !errors.Is(err, boom) {
		t.Fatalf("Replace returned %v, want fn's error", err)
	}
	if after := snapshotBytes(t, led); !bytes.Equal(after, before) {
		t.Fatal("a failed transaction changed the store")
	}
	compareHistory(t, led, m, jobID)
	compareMarks(t, led, m)
}

// RunApplyFailure: when the store fails in the middle of a batch, Apply
// returns the error and the ledger is unchanged; applying the same entry
// again once the store heals gives the model's results.
func RunApplyFailure(t *testing.T, newStore NewStore) {
	faulty := NewFaultyStore(newStore(t))
	led, err := fsm.New(fsm.Config{Store: faulty})
	if err != nil {
		t.Fatal(err)
	}
	m := NewModel()
	Drive(t, 51, led, m, 500, 0)
	gen := NewGen(52)
	for i := range 10 {
		batch := make([]fsm.Event, 30)
		for j := range batch {
			batch[j] = gen.Next()
		}
		before := snapshotBytes(t, led)
		index := led.AppliedIndex() + 1
		faulty.FailAfter(i * 3)
		if _, err := led.Apply(index, slices.Clone(batch)); !errors.Is(err, ErrInjected) {
			t.Fatalf("apply with a store failing after %d writes: %v", i*3, err)
		}
		faulty.Heal()
		if after := snapshotBytes(t, led); !bytes.Equal(after, before) || led.AppliedIndex() != index-1 {
			t.Fatalf("a failed apply (store failing after %d writes) changed the ledger", i*3)
		}
		got, err := led.Apply(index, slices.Clone(batch))
		if err != nil {
			t.Fatal(err)
		}
		if err := SameResults(got, m.Apply(index, batch)); err != nil {
			t.Fatalf("retried batch: %v", err)
		}
	}
	CompareWithModel(t, led, m)
}
