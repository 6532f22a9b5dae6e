package commit

import (
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
// (issue 16 §2). Admitted first-come first-served, a record waits for room
// here without a timeout, and its attempt's timeout starts once it goes.
//
// A batch larger than the bound goes alone. Safe for concurrent use.
type admission struct {
	limit int

	mu      sync.Mutex
	used    int
	waiters []*admitWaiter // FIFO
}

type admitWaiter struct {
	n     int
	ready chan struct{} // closed once admitted
}

func newAdmission(limit int) *admission { return &admission{limit: limit} }

// fits reports whether n more bytes may go now; a.mu is held.
func (a *admission) fits(n int) bool { return a.used == 0 || a.used+n <= a.limit }

// acquire waits until n bytes may go (in arrival order) or ctx ends.
func (a *admission) acquire(ctx context.Context, n int) error {
	a.mu.Lock()
	if len(a.waiters) == 0 && a.fits(n) {
		a.used += n
		a.mu.Unlock()
		return nil
	}
	w := &admitWaiter{n: n, ready: make(chan struct{})}
	a.waiters = append(a.waiters, w)
	a.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
		a.mu.Lock()
		defer a.mu.Unlock()
		select {
		case <-w.ready: // admitted meanwhile: give the room back
			a.releaseLocked(n)
		default:
			for i, x := range a.waiters {
				if x == w {
					a.waiters = append(a.waiters[:i], a.waiters[i+1:]...)
					break
				}
			}
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
		w := a.waiters[0]
		a.waiters[0] = nil
		a.waiters = a.waiters[1:]
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
