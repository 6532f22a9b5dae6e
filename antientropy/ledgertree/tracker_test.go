package ledgertree

import (
	"bytes"
	"testing"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

const (
	testDepth = 10
	// markEvery: drive proposes a checkpoint mark after every this many
	// batches.
	markEvery = 7
)

type replica struct {
	st  fsm.Store
	led *fsm.Ledger
	tr  *Tracker
}

func newReplica(t *testing.T) *replica {
	t.Helper()
	tr, err := New(testDepth)
	if err != nil {
		t.Fatal(err)
	}
	st := memstore.New()
	led, err := fsm.New(fsm.Config{Store: st, Observer: tr})
	if err != nil {
		t.Fatal(err)
	}
	return &replica{st: st, led: led, tr: tr}
}

// drive applies the same generated batches to every replica, at the same
// indexes (gaps included: entries of other kinds take indexes too), with
// a checkpoint mark after every markEvery batches.
func drive(t *testing.T, seed uint64, events int, rs ...*replica) uint64 {
	t.Helper()
	g := fsmtest.NewGen(seed)
	var index uint64
	batches := 0
	for sent := 0; sent < events; {
		n := 1 + int(seed+uint64(sent))%17
		batch := make([]fsm.Event, n)
		for i := range batch {
			batch[i] = g.Next()
		}
		sent += n
		index += 1 + uint64(sent%3)
		enc, err := fsm.AppendBatch(nil, batch)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if _, err := r.led.ApplyEncoded(index, enc); err != nil {
				t.Fatal(err)
			}
		}
		if batches++; batches%markEvery == 0 {
			index++
			for _, r := range rs {
				if err := r.led.Mark(index); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return index
}

func root(t *testing.T, r *replica) antientropy.Hash {
	t.Helper()
	if err := r.tr.Sync(r.led.View); err != nil {
		t.Fatal(err)
	}
	var h antientropy.Hash
	if err := r.tr.Read(func(tr *antientropy.Tree) error { h = tr.Root(); return nil }); err != nil {
		t.Fatal(err)
	}
	return h
}

// Replicas applying the same batches record checkpoints at the same
// marks with the same roots, and the tree kept incrementally equals one
// rebuilt from the store.
func TestTracker_ReplicasAgreeAndIncrementalEqualsRebuild(t *testing.T) {
	a, b := newReplica(t), newReplica(t)
	drive(t, 3, 3000, a, b)
	ca, cb := a.tr.Checkpoints(), b.tr.Checkpoints()
	if len(ca) < 10 || len(ca) != len(cb) {
		t.Fatalf("%d and %d checkpoints", len(ca), len(cb))
	}
	for i := range ca {
		if ca[i] != cb[i] {
			t.Fatalf("checkpoint %d: %+v vs %+v", i, ca[i], cb[i])
		}
		if i > 0 && ca[i].Root == ca[i-1].Root {
			t.Fatalf("checkpoints %d and %d have one root though batches applied between them", ca[i-1].Index, ca[i].Index)
		}
	}
	want := root(t, a)
	fresh, err := New(testDepth)
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.Rebuild(a.led.AppliedIndex(), a.led.View); err != nil {
		t.Fatal(err)
	}
	var got antientropy.Hash
	_ = fresh.Read(func(tr *antientropy.Tree) error { got = tr.Root(); return nil })
	if got != want {
		t.Fatal("the tree rebuilt from the store differs from the one kept on apply")
	}
}

// A replica whose store was altered behind the ledger (a job's record
// changed) has another root once its tree is rebuilt from the store, as
// at start; the comparison names the altered job.
func TestTracker_AlteredStoreIsFound(t *testing.T) {
	a, b := newReplica(t), newReplica(t)
	drive(t, 5, 1500, a, b)
	var victim *fsm.JobState
	if err := b.st.View(func(tx fsm.ReadTx) error {
		return tx.Jobs("", "", func(s *fsm.JobState) error {
			if victim == nil {
				victim = s.Clone()
			}
			return nil
		})
	}); err != nil || victim == nil {
		t.Fatalf("no job to alter: %v", err)
	}
	victim.Events++
	if err := b.st.Update(func(tx fsm.Tx) error { return tx.PutJob(victim) }); err != nil {
		t.Fatal(err)
	}
	if err := b.tr.Rebuild(b.led.AppliedIndex(), b.led.View); err != nil {
		t.Fatal(err)
	}
	if root(t, a) == root(t, b) {
		t.Fatal("equal roots after a job's record was altered")
	}
	var diffs []string
	_ = a.tr.Read(func(ta *antientropy.Tree) error {
		return b.tr.Read(func(tb *antientropy.Tree) error {
			diffs = compare(t, ta, tb)
			return nil
		})
	})
	if len(diffs) != 1 || diffs[0] != victim.JobID {
		t.Fatalf("differences %v, want [%s]", diffs, victim.JobID)
	}
}

// A restore from a snapshot rebuilds the tree: it equals the origin's.
func TestTracker_RestoreResets(t *testing.T) {
	a, c := newReplica(t), newReplica(t)
	drive(t, 9, 1000, a)
	drive(t, 10, 200, c) // state the restore replaces
	var snap bytes.Buffer
	if err := a.led.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	if err := c.led.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	if len(c.tr.Checkpoints()) != 0 {
		t.Fatal("checkpoints of the replaced state survived the restore")
	}
	if root(t, a) != root(t, c) {
		t.Fatal("the restored replica's tree differs from the origin's")
	}
}

// compare runs the descend protocol between two trees in memory and
// returns the ids that differ.
func compare(t *testing.T, local, peer *antientropy.Tree) []string {
	t.Helper()
	c := antientropy.NewCompare(local)
	req := c.Start()
	for range 100 {
		page, err := antientropy.Answer(peer, req)
		if err != nil {
			t.Fatal(err)
		}
		next, done, err := c.Step(page)
		if err != nil {
			t.Fatal(err)
		}
		if done {
			return c.Differences()
		}
		req = next
	}
	t.Fatal("no end to the comparison")
	return nil
}
