package ledgertree

import "github.com/strata-ledger/strata/fsm"

// Observers hands every fsm.Observer call to each of its observers, in
// order: a ledger has one Observer, a gate keeps two trees of it.
type Observers []fsm.Observer

// Applied implements fsm.Observer.
func (os Observers) Applied(index uint64, keys []fsm.StateKey, rd func(func(fsm.ReadTx) error) error) {
	for _, o := range os {
		o.Applied(index, keys, rd)
	}
}

// Reset implements fsm.Observer.
func (os Observers) Reset(index uint64, rd func(func(fsm.ReadTx) error) error) {
	for _, o := range os {
		o.Reset(index, rd)
	}
}

// Mark implements fsm.Observer.
func (os Observers) Mark(index uint64, rd func(func(fsm.ReadTx) error) error) {
	for _, o := range os {
		o.Mark(index, rd)
	}
}
