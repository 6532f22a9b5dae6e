package lifecycle

import (
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// countingStore counts its Views.
type countingStore struct{ views int }

func (c *countingStore) View(func(fsm.ReadTx) error) error { c.views++; return nil }

// The loops read the last commit, except the first read after a
// proposal, which must see it; without a committed view every read is
// the store's.
func TestReadView_FreshOnlyAfterAProposal(t *testing.T) {
	store := &countingStore{}
	committed := 0
	r := &readView{store: store, committed: func(func(fsm.ReadTx) error) error { committed++; return nil }}
	nop := func(fsm.ReadTx) error { return nil }
	steps := []struct {
		propose          bool
		store, committed int
	}{
		{false, 0, 1},
		{true, 1, 1},
		{false, 1, 2},
		{false, 1, 3},
		{true, 2, 3},
	}
	for i, s := range steps {
		if s.propose {
			r.proposed()
		}
		_ = r.View(nop)
		if store.views != s.store || committed != s.committed {
			t.Fatalf("step %d: %d store views, %d committed; want %d, %d", i, store.views, committed, s.store, s.committed)
		}
	}
	plain := &readView{store: store}
	_ = plain.View(nop)
	if store.views != 3 {
		t.Fatal("without a committed view, a read was not the store's")
	}
}
