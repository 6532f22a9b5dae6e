package group

import (
	"sync"

	"github.com/strata-ledger/strata/fsm"
)

// CommitSource is a ledger store whose Updates may return before they are
// committed to its file (boltstore group commit): Pending says whether
// some wait in its open transaction.
type CommitSource interface {
	Pending() bool
}

// CommittedObserver hands an ApplyObserver what each entry changed only
// once the store committed it, and broadcasts every commit (Changed), for
// loops that read the last commit (boltstore.ViewCommitted) instead of
// making every read commit what is pending (issue 19): a job id such a
// loop takes from its dirty set is then always in the state it reads. The
// store calls Committed after each commit (boltstore SetOnCommit); an
// entry whose Update was committed before Entry ran (or with nothing
// pending at all) is handed on at once. Held entries are bounded by the
// Updates of one store transaction (boltstore CommitUpdates).
type CommittedObserver struct {
	next  ApplyObserver
	store CommitSource
	gen   *AppliedIndex // counts commits; Changed wakes the loops

	mu      sync.Mutex
	held    [][][]fsm.Result
	commits uint64
}

var _ ApplyObserver = (*CommittedObserver)(nil)

// NewCommittedObserver returns an observer that holds next's entries
// until store commits them; gen counts the commits (its Changed channel
// is the loops' wake-up).
func NewCommittedObserver(next ApplyObserver, store CommitSource, gen *AppliedIndex) *CommittedObserver {
	return &CommittedObserver{next: next, store: store, gen: gen}
}

// Entry implements ApplyObserver; called after the entry's Update
// returned, so a commit that ran since then holds it.
func (o *CommittedObserver) Entry(results [][]fsm.Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.held = append(o.held, results)
	if !o.store.Pending() {
		o.flushLocked()
	}
}

// Restored implements ApplyObserver: the restore committed everything.
func (o *CommittedObserver) Restored() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushLocked()
	o.next.Restored()
}

// Committed is the store's commit hook: the held entries are in the file
// now (the commit ran after their Updates returned).
func (o *CommittedObserver) Committed() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flushLocked()
}

func (o *CommittedObserver) flushLocked() {
	for _, r := range o.held {
		o.next.Entry(r)
	}
	clear(o.held)
	o.held = o.held[:0]
	o.commits++
	o.gen.Set(o.commits)
}
