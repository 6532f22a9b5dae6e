package commit

import (
	"container/heap"
	"context"
	"sync"
)

// admission bounds the bytes of the batches whose propose or forward
// attempt is in flight (PipelineConfig.MaxAttemptBytes). Without it, every
// pending record (up to MaxPending) had an attempt in flight at once: under
// a large backlog on a follower, the leader's queue held more than it could
// commit within AttemptTimeout, so attempts timed out while queued, were
// retried at the back of the queue and timed out again, while the leader
// spent its time committing the abandoned ones as duplicates; the tier
// watermark stayed behind the first record that kept losing that race
// (issue 16 §2). A record waits here without a timeout, and its attempt's
// timeout starts once it goes.
//
// Waiters go lowest LSN first, not in arrival order: a record whose attempt
// failed (no leader, a timeout) comes back behind thousands of newer ones,
// and in arrival order it waited for all of them, so under a flapping
// leader the records at the watermark rarely got a turn and the watermark
// stood still while later records reached the tier (the 1M wal-bound run).
// Lowest first, the watermark's record goes at the next chance.
//
// A batch larger than the bound goes alone. Safe for concurrent use.
type admission struct {
	limit int

	mu      sync.Mutex
	used    int
	waiters admitHeap
}

type admitWaiter struct {
	key   uint64 // the record's LSN: lowest goes first
	n     int
	index int           // in the heap; -1 once out of it
	ready chan struct{} // closed once admitted
}

func newAdmission(limit int) *admission { return &admission{limit: limit} }

// fits reports whether n more bytes may go now; a.mu is held.
func (a *admission) fits(n int) bool { return a.used == 0 || a.used+n <= a.limit }

// acquire waits until n bytes of the record key may go (lowest key first)
// or ctx ends.
func (a *admission) acquire(ctx context.Context, key uint64, n int) error {
	a.mu.Lock()
	if (len(a.waiters) == 0 || key < a.waiters[0].key) && a.fits(n) {
		a.used += n
		a.mu.Unlock()
		return nil
	}
	w := &admitWaiter{key: key, n: n, ready: make(chan struct{})}
	heap.Push(&a.waiters, w)
	a.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		a.mu.Lock()
		defer a.mu.Unlock()
		if w.index < 0 { // admitted meanwhile: give the room back
			a.releaseLocked(n)
		} else {
			heap.Remove(&a.waiters, w.index)
			a.wakeLocked() // the head may have changed
		}
		return ctx.Err()
	}
}

// release gives back n bytes acquired and admits the waiters that fit.
func (a *admission) release(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseLocked(n)
}

func (a *admission) releaseLocked(n int) {
	a.used -= n
	a.wakeLocked()
}

func (a *admission) wakeLocked() {
	for len(a.waiters) > 0 && a.fits(a.waiters[0].n) {
		w := heap.Pop(&a.waiters).(*admitWaiter)
		a.used += w.n
		close(w.ready)
	}
}

// inFlight returns the bytes admitted and the waiters.
func (a *admission) inFlight() (bytes, waiting int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.used, len(a.waiters)
}

// admitHeap is a min-heap of waiters by key (container/heap).
type admitHeap []*admitWaiter

func (h admitHeap) Len() int           { return len(h) }
func (h admitHeap) Less(i, j int) bool { return h[i].key < h[j].key }
func (h admitHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (h *admitHeap) Push(x any) {
	w := x.(*admitWaiter)
	w.index = len(*h)
	*h = append(*h, w)
}

func (h *admitHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	w.index = -1
	*h = old[:len(old)-1]
	return w
}
