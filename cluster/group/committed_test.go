package group

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

type pendingFlag struct{ atomic.Bool }

func (p *pendingFlag) Pending() bool { return p.Load() }

// recordingObserver keeps the jobs of the entries it is handed, in order.
type recordingObserver struct {
	jobs     []string
	restores int
}

func (r *recordingObserver) Entry(results [][]fsm.Result) {
	for _, rs := range results {
		for _, x := range rs {
			r.jobs = append(r.jobs, x.JobID)
		}
	}
}
func (r *recordingObserver) Restored() { r.restores++ }

func entryOf(job string) [][]fsm.Result { return [][]fsm.Result{{{JobID: job}}} }

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// An entry reaches the observer once the store committed it: at once
// when nothing is pending, else at the next commit, in apply order; every
// hand-over wakes Changed.
func TestCommittedObserver_HoldsEntriesUntilTheCommit(t *testing.T) {
	var store pendingFlag
	next := &recordingObserver{}
	gen := NewAppliedIndex(0)
	o := NewCommittedObserver(next, &store, gen)

	woke := gen.Changed()
	o.Entry(entryOf("j1")) // committed before Entry ran (nothing pending)
	if !slices.Equal(next.jobs, []string{"j1"}) || !closed(woke) {
		t.Fatalf("nothing pending: handed %v, woke %v", next.jobs, closed(woke))
	}
	store.Store(true)
	woke = gen.Changed()
	o.Entry(entryOf("j2"))
	o.Entry(entryOf("j3"))
	if !slices.Equal(next.jobs, []string{"j1"}) || closed(woke) {
		t.Fatalf("pending: handed %v before the commit (woke %v)", next.jobs, closed(woke))
	}
	store.Store(false)
	o.Committed()
	if !slices.Equal(next.jobs, []string{"j1", "j2", "j3"}) || !closed(woke) {
		t.Fatalf("after the commit: handed %v, woke %v", next.jobs, closed(woke))
	}
	woke = gen.Changed()
	o.Committed() // a commit with nothing held still wakes (a read may see more)
	if !closed(woke) || len(next.jobs) != 3 {
		t.Fatal("an empty commit did not wake, or handed something twice")
	}
	store.Store(true)
	o.Entry(entryOf("j4"))
	o.Restored()
	if !slices.Equal(next.jobs, []string{"j1", "j2", "j3", "j4"}) || next.restores != 1 {
		t.Fatalf("a restore: handed %v, %d restores; want the held entry first, then the restore", next.jobs, next.restores)
	}
}
