package lifecycle

import (
	"sync/atomic"

	"github.com/strata-ledger/strata/fsm"
)

// readView is what the reconcilers and the forwarder read (issue 19):
// the store's last commit when Config.CommittedView is set, so that their
// reads stop committing the store's pending Updates after nearly every
// Raft entry; but the first read after a proposal (or a term's barrier)
// commits what is pending, since a pass must see its own proposals, which
// Submit returned once they were applied, not committed: a pass that
// missed them would plan the same events again (a second lease of a
// workflow under a new fence).
type readView struct {
	store     Store
	committed func(fn func(fsm.ReadTx) error) error
	fresh     atomic.Bool // the next read must see everything applied
}

// proposed says something was applied that the next read must see.
func (r *readView) proposed() { r.fresh.Store(true) }

// View runs fn in a read view: the applied state after a proposal,
// otherwise the last commit.
func (r *readView) View(fn func(fsm.ReadTx) error) error {
	if r.committed == nil || r.fresh.Swap(false) {
		return r.store.View(fn)
	}
	return r.committed(fn)
}
