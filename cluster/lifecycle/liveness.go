package lifecycle

import (
	"sync"
	"time"
)

// liveness is the regional leader's memory of when each worker was last
// heard from (DESIGN §10: any message from a worker renews it). It is not
// replicated: a new leader starts every registered worker's clock afresh
// (Reset), so a leader change delays a worker's expiry by at most one ack
// window and never expires a worker that kept talking.
type liveness struct {
	mu   sync.Mutex
	now  func() time.Time
	last map[string]time.Time
}

func newLiveness(now func() time.Time) *liveness {
	return &liveness{now: now, last: map[string]time.Time{}}
}

// Touch records a message from worker.
func (l *liveness) Touch(worker string) {
	l.mu.Lock()
	l.last[worker] = l.now()
	l.mu.Unlock()
}

// Reset forgets everything and counts every listed worker as heard from
// now: the grace a new leader gives the workers it inherits.
func (l *liveness) Reset(workers []string) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.last = make(map[string]time.Time, len(workers))
	for _, w := range workers {
		l.last[w] = now
	}
}

// Forget drops a worker that left or expired.
func (l *liveness) Forget(worker string) {
	l.mu.Lock()
	delete(l.last, worker)
	l.mu.Unlock()
}

// Live reports whether worker was heard from within window. A worker never
// heard from (since the last Reset) is not live.
func (l *liveness) Live(worker string, window time.Duration) bool {
	l.mu.Lock()
	t, ok := l.last[worker]
	l.mu.Unlock()
	return ok && l.now().Sub(t) < window
}

// lastHeard returns when worker was last heard from (false if never).
func (l *liveness) lastHeard(worker string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.last[worker]
	return t, ok
}
