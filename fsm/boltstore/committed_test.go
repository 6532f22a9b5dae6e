package boltstore_test

import (
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// ViewCommitted reads the last commit: it neither sees nor commits the
// Updates pending in the open transaction, and the commit hook runs once
// per commit, after which it sees them; Pending says what waits.
func TestGroupCommit_ViewCommittedReadsTheLastCommit(t *testing.T) {
	st := openStore(t, groupConfig(t, 4))
	led := ledgerOn(t, st)
	commits := 0
	st.SetOnCommit(func() { commits++ })
	index := func(view func(func(fsm.ReadTx) error) error) uint64 {
		t.Helper()
		var got uint64
		if err := view(func(tx fsm.ReadTx) error {
			var err error
			got, err = tx.AppliedIndex()
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	log := batches(13, 10, 5)
	applyLog(t, led, log, 1, 3)
	if got := index(st.ViewCommitted); got != 0 || !st.Pending() || commits != 0 {
		t.Fatalf("3 pending updates: committed view at %d, pending %v, %d commits; want 0, true, 0", got, st.Pending(), commits)
	}
	if gs := st.GroupStats(); gs.Read != 0 {
		t.Fatalf("ViewCommitted committed: %+v", gs)
	}
	applyLog(t, led, log, 4, 4) // the 4th Update commits by size
	if got := index(st.ViewCommitted); got != 4 || st.Pending() || commits != 1 {
		t.Fatalf("after the size commit: committed view at %d, pending %v, %d commits; want 4, false, 1", got, st.Pending(), commits)
	}
	applyLog(t, led, log, 5, 6)
	if got := index(st.View); got != 6 || commits != 2 {
		t.Fatalf("View: applied index %d after %d commits, want 6 after 2", got, commits)
	}
	if got := index(st.ViewCommitted); got != 6 {
		t.Fatalf("committed view at %d after View committed, want 6", got)
	}
	st.SetOnCommit(nil)
	applyLog(t, led, log, 7, 8)
	if got := index(st.View); got != 8 || commits != 2 {
		t.Fatalf("hook removed: index %d, %d commits; want 8, 2", got, commits)
	}
}
