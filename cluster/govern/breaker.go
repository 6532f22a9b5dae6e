package govern

import (
	"errors"
	"fmt"
	"time"
)

// BreakerState is a circuit breaker's position. Stored in the regional
// ledger's governance records: never change the values.
type BreakerState uint8

// Breaker states.
const (
	// BreakerClosed: dispatch goes on; outcomes are counted.
	BreakerClosed BreakerState = 0
	// BreakerOpen: no new lease for the job type; its workflows wait
	// DISPATCHED (they are not failed).
	BreakerOpen BreakerState = 1
	// BreakerHalfOpen: at most Probes workflows of the type run at once;
	// Probes successes close the breaker, one failure opens it again.
	BreakerHalfOpen BreakerState = 2
)

var breakerStateNames = [...]string{"closed", "open", "half_open"}

// String returns the API name ("half_open").
func (s BreakerState) String() string {
	if int(s) < len(breakerStateNames) {
		return breakerStateNames[s]
	}
	return fmt.Sprintf("BreakerState(%d)", uint8(s))
}

// Valid reports whether s is a known state.
func (s BreakerState) Valid() bool { return int(s) < len(breakerStateNames) }

// ParseBreakerState reads an API name.
func ParseBreakerState(v string) (BreakerState, error) {
	for i, n := range breakerStateNames {
		if n == v {
			return BreakerState(i), nil
		}
	}
	return 0, fmt.Errorf("unknown breaker state %q", v)
}

// Limits of a BreakerConfig.
const (
	MaxBreakerWindow  = time.Hour
	MaxBreakerBuckets = 120
	MaxMinSamples     = 100_000
	MaxBreakerProbes  = 1_000
	MaxCoolDown       = 24 * time.Hour
)

// BreakerConfig tunes every breaker of a region.
type BreakerConfig struct {
	// Window is how far back outcomes count (default 60 s), kept in
	// Buckets equal slices (default 12): an outcome leaves the window
	// between Window and Window + Window/Buckets after it was seen.
	Window  time.Duration
	Buckets int
	// MinSamples outcomes must be in the window before the failure rate
	// can trip the breaker (default 10).
	MinSamples int
	// FailureRate is the share of failed outcomes, in (0, 1], at or above
	// which a closed breaker opens (default 0.5).
	FailureRate float64
	// CoolDown is how long an open breaker stays open before it
	// half-opens (default 30 s). A breaker forced open stays open.
	CoolDown time.Duration
	// Probes is how many workflows a half-open breaker lets run at once,
	// and how many successes close it (default 2).
	Probes int
}

// WithDefaults fills the zero fields.
func (c BreakerConfig) WithDefaults() BreakerConfig {
	if c.Window == 0 {
		c.Window = time.Minute
	}
	if c.Buckets == 0 {
		c.Buckets = 12
	}
	if c.MinSamples == 0 {
		c.MinSamples = 10
	}
	if c.FailureRate == 0 {
		c.FailureRate = 0.5
	}
	if c.CoolDown == 0 {
		c.CoolDown = 30 * time.Second
	}
	if c.Probes == 0 {
		c.Probes = 2
	}
	return c
}

// Validate checks a config after WithDefaults.
func (c BreakerConfig) Validate() error {
	var errs []error
	if c.Window < time.Second || c.Window > MaxBreakerWindow {
		errs = append(errs, fmt.Errorf("breaker window %s outside [1s, %s]", c.Window, MaxBreakerWindow))
	}
	if c.Buckets < 1 || c.Buckets > MaxBreakerBuckets {
		errs = append(errs, fmt.Errorf("breaker buckets %d outside [1, %d]", c.Buckets, MaxBreakerBuckets))
	}
	if c.MinSamples < 1 || c.MinSamples > MaxMinSamples {
		errs = append(errs, fmt.Errorf("breaker min samples %d outside [1, %d]", c.MinSamples, MaxMinSamples))
	}
	if !(c.FailureRate > 0 && c.FailureRate <= 1) {
		errs = append(errs, fmt.Errorf("breaker failure rate %v outside (0, 1]", c.FailureRate))
	}
	if c.CoolDown < time.Millisecond || c.CoolDown > MaxCoolDown {
		errs = append(errs, fmt.Errorf("breaker cool-down %s outside [1ms, %s]", c.CoolDown, MaxCoolDown))
	}
	if c.Probes < 1 || c.Probes > MaxBreakerProbes {
		errs = append(errs, fmt.Errorf("breaker probes %d outside [1, %d]", c.Probes, MaxBreakerProbes))
	}
	return errors.Join(errs...)
}

// Breaker is one (tenant, job type)'s circuit breaker. State, SinceMs and
// Forced are the replicated part (the caller loads them from the ledger
// and proposes them when a method reports a transition); the window and
// the probe tally are the caller's memory. Not safe for concurrent use.
type Breaker struct {
	State   BreakerState
	SinceMs int64 // when State began (Unix ms)
	Forced  bool  // an operator opened it: it stays open until closed by one
	window  window
	probeOK int
}

// Transition is a change of a breaker's state, with why, for the ledger
// and the audit.
type Transition struct {
	From, To BreakerState
	Reason   string
}

// Observe counts the outcome of one workflow of the breaker's type that
// ended at nowMs, and returns the transition it causes, if any.
func (b *Breaker) Observe(c BreakerConfig, nowMs int64, failed bool) (Transition, bool) {
	switch b.State {
	case BreakerClosed:
		b.window.add(c, nowMs, failed)
		total, bad := b.window.counts(c, nowMs)
		if total >= uint64(c.MinSamples) && float64(bad) >= c.FailureRate*float64(total) {
			return b.move(BreakerOpen, nowMs, fmt.Sprintf("%d of the last %d workflows failed (threshold %g, window %s)", bad, total, c.FailureRate, c.Window)), true
		}
	case BreakerHalfOpen:
		if failed {
			return b.move(BreakerOpen, nowMs, "a half-open probe failed"), true
		}
		b.probeOK++
		if b.probeOK >= c.Probes {
			return b.move(BreakerClosed, nowMs, fmt.Sprintf("%d half-open probes succeeded", b.probeOK)), true
		}
	}
	// Open: a workflow leased before the trip ended; it says nothing
	// about whether the type recovered.
	return Transition{}, false
}

// Tick moves an open breaker to half-open once CoolDown has passed since
// it opened (unless an operator forced it open).
func (b *Breaker) Tick(c BreakerConfig, nowMs int64) (Transition, bool) {
	if b.State != BreakerOpen || b.Forced || nowMs-b.SinceMs < c.CoolDown.Milliseconds() {
		return Transition{}, false
	}
	return b.move(BreakerHalfOpen, nowMs, fmt.Sprintf("open for %s", c.CoolDown)), true
}

// Force is an operator's order: open holds the breaker open until an
// operator closes it; close returns it to automatic operation with an
// empty window. It returns the transition (From == To when the state
// stays, e.g. forcing open a breaker that tripped on its own: it becomes
// forced).
func (b *Breaker) Force(open bool, nowMs int64, reason string) Transition {
	to := BreakerClosed
	if open {
		to = BreakerOpen
	}
	t := b.move(to, nowMs, reason)
	b.Forced = open
	return t
}

// Admit returns how many more workflows of the type may be leased now,
// given running (those leased now): unlimited (-1) when closed, none
// when open, and what is left of Probes when half-open.
func (b *Breaker) Admit(c BreakerConfig, running int) int {
	switch b.State {
	case BreakerClosed:
		return -1
	case BreakerHalfOpen:
		return max(0, c.Probes-running)
	}
	return 0
}

// Restore sets the replicated part from the ledger (another leader's
// transition, or an operator's), keeping the window when the state did
// not change.
func (b *Breaker) Restore(s BreakerState, sinceMs int64, forced bool) {
	if b.State != s || b.SinceMs != sinceMs {
		b.window.reset()
		b.probeOK = 0
	}
	b.State, b.SinceMs, b.Forced = s, sinceMs, forced
}

func (b *Breaker) move(to BreakerState, nowMs int64, reason string) Transition {
	t := Transition{From: b.State, To: to, Reason: reason}
	b.State, b.SinceMs, b.Forced = to, nowMs, false
	b.window.reset()
	b.probeOK = 0
	return t
}

// window counts outcomes in fixed-width time buckets covering the last
// Window. Bucket i holds the outcomes of slice start[i]; a stale slice is
// emptied when its bucket is reused.
type window struct {
	start      []int64
	ok, failed []uint32
}

func (w *window) reset() { w.start, w.ok, w.failed = nil, nil, nil }

func bucketWidth(c BreakerConfig) int64 {
	return max(1, c.Window.Milliseconds()/int64(c.Buckets))
}

func (w *window) add(c BreakerConfig, nowMs int64, failed bool) {
	if w.start == nil {
		w.start = make([]int64, c.Buckets)
		w.ok = make([]uint32, c.Buckets)
		w.failed = make([]uint32, c.Buckets)
		for i := range w.start {
			w.start[i] = -1
		}
	}
	width := bucketWidth(c)
	slice := floorDiv(nowMs, width)
	i := int(floorMod(slice, int64(len(w.start))))
	if w.start[i] != slice {
		w.start[i], w.ok[i], w.failed[i] = slice, 0, 0
	}
	if failed {
		w.failed[i]++
	} else {
		w.ok[i]++
	}
}

// counts returns the outcomes of the slices within Window of nowMs.
func (w *window) counts(c BreakerConfig, nowMs int64) (total, failed uint64) {
	width := bucketWidth(c)
	now := floorDiv(nowMs, width)
	for i, s := range w.start {
		if s >= 0 && s <= now && now-s < int64(len(w.start)) {
			total += uint64(w.ok[i]) + uint64(w.failed[i])
			failed += uint64(w.failed[i])
		}
	}
	return total, failed
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }
