package lifecycle

import (
	"sync"
	"time"
)

// breakerState is a circuit breaker's state (DESIGN §4).
type breakerState uint8

const (
	breakerClosed breakerState = iota
	breakerOpen
	breakerHalfOpen
)

func (s breakerState) String() string {
	switch s {
	case breakerOpen:
		return "open"
	case breakerHalfOpen:
		return "half-open"
	}
	return "closed"
}

// breakerThreshold is how many consecutive failures open the breaker.
const breakerThreshold = 5

// breaker is the forwarder's circuit breaker towards the gates: closed
// while calls succeed; open after breakerThreshold consecutive failures,
// refusing calls for cooldown; then half-open, letting one probe through
// (success closes it, failure opens it again). Time is passed in, so the
// state machine is tested without waiting.
type breaker struct {
	mu       sync.Mutex
	cooldown time.Duration
	state    breakerState
	failures int
	openedAt time.Time
	probing  bool
	// onChange is called (under the lock) on every transition.
	onChange func(from, to breakerState)
}

func newBreaker(cooldown time.Duration, onChange func(from, to breakerState)) *breaker {
	if onChange == nil {
		onChange = func(breakerState, breakerState) {}
	}
	return &breaker{cooldown: cooldown, onChange: onChange}
}

func (b *breaker) set(to breakerState) {
	if b.state != to {
		from := b.state
		b.state = to
		b.onChange(from, to)
	}
}

// allow reports whether a call may go out at now. In half-open state only
// one call (the probe) is allowed until it reports back.
func (b *breaker) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case breakerOpen:
		if now.Sub(b.openedAt) < b.cooldown {
			return false
		}
		b.set(breakerHalfOpen)
		b.probing = true
		return true
	case breakerHalfOpen:
		if b.probing {
			return false
		}
		b.probing = true
		return true
	}
	return true
}

// success records a call that worked: the breaker closes.
func (b *breaker) success() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures, b.probing = 0, false
	b.set(breakerClosed)
}

// failure records a call that failed at now.
func (b *breaker) failure(now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.failures++
	b.probing = false
	if b.state == breakerHalfOpen || b.failures >= breakerThreshold {
		b.openedAt = now
		b.set(breakerOpen)
	}
}

// State returns the current state and, when open, when it may half-open.
func (b *breaker) State() (breakerState, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state, b.openedAt.Add(b.cooldown)
}
