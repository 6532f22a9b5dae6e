package progress

import (
	"cmp"
	"slices"
)

// Progress is the aggregate of one (workflow, worker): the counters of its
// highest lease fence seen, each the maximum delivered.
type Progress struct {
	Workflow  string
	Worker    string
	Fence     uint64
	Completed uint64
	Failed    uint64
	// Histogram ends at its last non-zero bucket; nil if none was sent.
	Histogram Histogram
}

// entry is one aggregate; the histogram is inline so folding never
// allocates.
type entry struct {
	workflow  string
	worker    string
	fence     uint64
	completed uint64
	failed    uint64
	hist      [HistogramBuckets]uint64
	seen      bool // folded at least once
	changed   bool // in Aggregates.changed
	removed   bool // forgotten while in Aggregates.changed
}

// workerAggs holds one worker's entries, so a frame looks its worker up
// once and each update by workflow id without allocating.
type workerAggs struct {
	name  string
	flows map[string]*entry
}

// Aggregates folds cumulative updates by keeping, per (workflow, worker),
// the maximum of each counter and histogram bucket under the highest fence,
// and remembers which aggregates changed since the last Drain. It is pure
// (no I/O, no clock) and not safe for concurrent use.
//
// Folding is commutative, associative and idempotent within a fence, so
// any duplication or reordering of a sequence of cumulative updates folds
// to the last one, and a loss of intermediate updates is repaired by the
// next one delivered.
type Aggregates struct {
	workers map[string]*workerAggs
	changed []*entry
	entries int
}

// NewAggregates returns empty aggregates.
func NewAggregates() *Aggregates {
	return &Aggregates{workers: make(map[string]*workerAggs)}
}

// Len returns the number of (workflow, worker) aggregates held.
func (a *Aggregates) Len() int { return a.entries }

// Fold merges u, sent by worker, and reports whether the aggregate changed.
// It checks no lease: the Receiver does that before folding.
func (a *Aggregates) Fold(worker string, u Update) bool {
	w := a.workerAggs(worker)
	e := w.flows[u.Workflow]
	if e == nil {
		e = a.insert(w, u.Workflow)
	}
	return a.merge(e, u.Fence, u.Completed, u.Failed, u.Histogram)
}

// workerAggs returns worker's entries, creating them if need be.
func (a *Aggregates) workerAggs(worker string) *workerAggs {
	w := a.workers[worker]
	if w == nil {
		w = &workerAggs{name: worker, flows: make(map[string]*entry)}
		a.workers[worker] = w
	}
	return w
}

// lookup returns the entry of workflow id (nil if none) and the id as a
// string, the entry's own when there is one (no allocation).
func (w *workerAggs) lookup(id []byte) (*entry, string) {
	if e := w.flows[string(id)]; e != nil {
		return e, e.workflow
	}
	return nil, string(id)
}

func (a *Aggregates) insert(w *workerAggs, workflow string) *entry {
	e := &entry{workflow: workflow, worker: w.name}
	w.flows[workflow] = e
	a.entries++
	return e
}

// merge folds one update into e and reports whether e changed.
func (a *Aggregates) merge(e *entry, fence, completed, failed uint64, hist []uint64) bool {
	grew := false
	switch {
	case fence < e.fence:
		return false
	case fence > e.fence || !e.seen:
		// The first update, or a new lease: a new cumulative series.
		e.seen, grew = true, true
		e.fence, e.completed, e.failed = fence, completed, failed
		e.hist = [HistogramBuckets]uint64{}
		copy(e.hist[:], hist)
	default:
		if completed > e.completed {
			e.completed, grew = completed, true
		}
		if failed > e.failed {
			e.failed, grew = failed, true
		}
		for i, c := range hist {
			if c > e.hist[i] {
				e.hist[i], grew = c, true
			}
		}
	}
	if grew && !e.changed {
		e.changed = true
		a.changed = append(a.changed, e)
	}
	return grew
}

// Get returns the aggregate of (workflow, worker).
func (a *Aggregates) Get(workflow, worker string) (Progress, bool) {
	w := a.workers[worker]
	if w == nil {
		return Progress{}, false
	}
	e := w.flows[workflow]
	if e == nil {
		return Progress{}, false
	}
	return e.progress(), true
}

// Drain returns the aggregates that changed since the last Drain, sorted
// by workflow then worker, and clears the changed set.
func (a *Aggregates) Drain() []Progress {
	out := make([]Progress, 0, len(a.changed))
	for _, e := range a.changed {
		e.changed = false
		if !e.removed {
			out = append(out, e.progress())
		}
	}
	clear(a.changed)
	a.changed = a.changed[:0]
	slices.SortFunc(out, func(x, y Progress) int {
		return cmp.Or(cmp.Compare(x.Workflow, y.Workflow), cmp.Compare(x.Worker, y.Worker))
	})
	return out
}

// Forget drops the aggregate of (workflow, worker), for when its lease has
// ended and its last counters have been committed. A later update starts
// it afresh.
func (a *Aggregates) Forget(workflow, worker string) {
	w := a.workers[worker]
	if w == nil {
		return
	}
	e := w.flows[workflow]
	if e == nil {
		return
	}
	e.removed = true
	delete(w.flows, workflow)
	a.entries--
	if len(w.flows) == 0 {
		delete(a.workers, worker)
	}
}

func (e *entry) progress() Progress {
	p := Progress{Workflow: e.workflow, Worker: e.worker, Fence: e.fence, Completed: e.completed, Failed: e.failed}
	if _, n := histogramSpan(e.hist[:]); n > 0 {
		last := len(e.hist) - 1
		for e.hist[last] == 0 {
			last--
		}
		p.Histogram = append(Histogram(nil), e.hist[:last+1]...)
	}
	return p
}
