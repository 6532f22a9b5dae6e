package bench

import (
	"context"
	"sync"
	"time"
)

// manualClock is a clock that moves only when told to: tests use it to
// make latencies from the schedule exact.
type manualClock struct {
	mu      sync.Mutex
	now     time.Time
	changed chan struct{} // closed and replaced by every Advance
}

func newManualClock(now time.Time) *manualClock {
	return &manualClock{now: now, changed: make(chan struct{})}
}

func (m *manualClock) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

func (m *manualClock) SleepUntil(ctx context.Context, t time.Time) bool {
	for {
		m.mu.Lock()
		now, changed := m.now, m.changed
		m.mu.Unlock()
		if !now.Before(t) {
			return ctx.Err() == nil
		}
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
}

// Advance moves the clock d forward and wakes its sleepers.
func (m *manualClock) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
	close(m.changed)
	m.changed = make(chan struct{})
}
