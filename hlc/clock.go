package hlc

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for Config.
const (
	// DefaultMaxOffset is how far ahead of our physical clock a remote
	// timestamp may be before Update rejects it (DESIGN §6).
	DefaultMaxOffset = 500 * time.Millisecond
	// DefaultPersistStep is how far ahead of use the upper bound is
	// persisted. It is half of DefaultMaxOffset so that a clock restarted at
	// once (resuming from the persisted bound) is never more than the
	// tolerated offset ahead of its peers.
	DefaultPersistStep = DefaultMaxOffset / 2
)

// Internal packing: the clock keeps (wall, logical) in one uint64 so Now is a
// single compare-and-swap. Wall milliseconds fit in 48 bits until the year
// 10889; the logical counter uses the low 16 bits. When it would overflow,
// the wall time is advanced by one millisecond instead, which keeps every
// invariant and costs at most one millisecond of drift per 65,536 events in a
// millisecond.
const (
	logicalBits = 16
	maxLogical  = 1<<logicalBits - 1
	maxWallMs   = 1<<(64-logicalBits) - 1
)

// ErrClockSkew is returned by Update for a remote timestamp too far ahead.
var ErrClockSkew = errors.New("hlc: remote clock too far ahead")

// ErrPersist wraps a Persister failure that kept the clock from advancing.
var ErrPersist = errors.New("hlc: persist upper bound")

// SkewError describes a rejected remote timestamp. errors.Is(err,
// ErrClockSkew) is true for it.
type SkewError struct {
	Remote     Timestamp
	PhysicalMs int64
	MaxOffset  time.Duration
}

func (e *SkewError) Error() string {
	return fmt.Sprintf("hlc: remote timestamp %s is %dms ahead of physical %d, max offset %s",
		e.Remote, e.Remote.WallMs-e.PhysicalMs, e.PhysicalMs, e.MaxOffset)
}

// Unwrap makes errors.Is(err, ErrClockSkew) hold.
func (e *SkewError) Unwrap() error { return ErrClockSkew }

// Persister stores the clock's upper bound: a wall time no timestamp handed
// out by this clock has exceeded. Implementations must make Store durable
// (fsync) before returning. Calls are serialized by the clock.
type Persister interface {
	// Load returns the stored bound, or 0 if none was ever stored.
	Load() (wallMs int64, err error)
	// Store durably records a new bound.
	Store(wallMs int64) error
}

// Counter counts events; a prometheus.Counter satisfies it.
type Counter interface{ Inc() }

// Config configures a Clock.
type Config struct {
	// Node is this node's ordinal, stamped into every timestamp.
	Node uint32
	// Physical returns the physical time in Unix milliseconds. Required.
	Physical func() int64
	// Persister keeps the upper bound across restarts. Required.
	Persister Persister
	// MaxOffset bounds how far ahead a remote timestamp may be.
	MaxOffset time.Duration
	// PersistStep is how far beyond the wall time in use the bound is
	// stored each time it is extended; a new bound is stored when the wall
	// time comes within half a step of the old one.
	PersistStep time.Duration
	// SkewRejections counts timestamps Update rejected; optional.
	SkewRejections Counter
	// Ticks counts timestamps handed out by Now and Update; optional.
	Ticks Counter
}

// Validate fills defaults and checks c.
func (c *Config) Validate() error {
	if c.MaxOffset == 0 {
		c.MaxOffset = DefaultMaxOffset
	}
	if c.PersistStep == 0 {
		c.PersistStep = DefaultPersistStep
	}
	switch {
	case c.Physical == nil:
		return errors.New("hlc: config: Physical is required")
	case c.Persister == nil:
		return errors.New("hlc: config: Persister is required")
	case c.MaxOffset < time.Millisecond:
		return fmt.Errorf("hlc: config: MaxOffset %s is below 1ms", c.MaxOffset)
	case c.PersistStep < 2*time.Millisecond:
		return fmt.Errorf("hlc: config: PersistStep %s is below 2ms", c.PersistStep)
	}
	return nil
}

// Clock is a hybrid logical clock. It is safe for concurrent use.
type Clock struct {
	node      uint32
	physical  func() int64
	maxOffset int64 // ms
	stepMs    int64
	skew      Counter
	ticks     Counter

	state atomic.Uint64 // wall<<logicalBits | logical
	bound atomic.Int64  // persisted upper bound of wall

	persistMu sync.Mutex // serializes Persister calls
	persister Persister
}

// New starts a clock above every timestamp a previous clock with the same
// Persister handed out.
func New(cfg Config) (*Clock, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := &Clock{
		node:      cfg.Node,
		physical:  cfg.Physical,
		maxOffset: cfg.MaxOffset.Milliseconds(),
		stepMs:    cfg.PersistStep.Milliseconds(),
		skew:      cfg.SkewRejections,
		ticks:     cfg.Ticks,
		persister: cfg.Persister,
	}
	prev, err := cfg.Persister.Load()
	if err != nil {
		return nil, fmt.Errorf("%w: load: %v", ErrPersist, err)
	}
	if prev < 0 || prev >= maxWallMs {
		return nil, fmt.Errorf("%w: stored bound %d out of range", ErrPersist, prev)
	}
	// Every earlier timestamp has wall <= prev, so (prev+1, 0) is above all.
	c.state.Store(pack(prev+1, 0))
	c.bound.Store(prev)
	// Persist a bound a step ahead of where the clock starts, so the first
	// calls do not pay for it.
	if err := c.extend(max(prev+1, c.readPhysical())); err != nil {
		return nil, err
	}
	return c, nil
}

func pack(wall int64, logical uint64) uint64 { return uint64(wall)<<logicalBits | logical }
func wallOf(s uint64) int64                  { return int64(s >> logicalBits) }
func logicalOf(s uint64) uint64              { return s & maxLogical }

func (c *Clock) stamp(s uint64) Timestamp {
	return Timestamp{WallMs: wallOf(s), Logical: uint32(logicalOf(s)), Node: c.node}
}

// readPhysical clamps the physical clock to the representable range.
func (c *Clock) readPhysical() int64 {
	pt := c.physical()
	if pt < 0 {
		return 0
	}
	if pt > maxWallMs-1 {
		return maxWallMs - 1
	}
	return pt
}

// Now returns a timestamp greater than every timestamp this clock returned
// before. It fails only when the upper bound must be extended and the
// Persister fails.
func (c *Clock) Now() (Timestamp, error) {
	pt := c.readPhysical()
	for {
		old := c.state.Load()
		var next uint64
		if pt > wallOf(old) {
			next = pack(pt, 0)
		} else {
			next = increment(old)
		}
		if err := c.ensureBound(wallOf(next)); err != nil {
			return Timestamp{}, err
		}
		if c.state.CompareAndSwap(old, next) {
			c.tick()
			return c.stamp(next), nil
		}
	}
}

// tick counts one timestamp handed out.
func (c *Clock) tick() {
	if c.ticks != nil {
		c.ticks.Inc()
	}
}

// increment adds one logical tick, carrying into the wall time on overflow.
func increment(s uint64) uint64 {
	if logicalOf(s) == maxLogical {
		return pack(wallOf(s)+1, 0)
	}
	return s + 1
}

// Update merges a timestamp received from another node and returns a
// timestamp greater than both it and every timestamp this clock returned
// before. A remote timestamp more than MaxOffset ahead of physical time is
// rejected with a *SkewError and counted; the clock is not changed.
func (c *Clock) Update(remote Timestamp) (Timestamp, error) {
	pt := c.readPhysical()
	if remote.WallMs-pt > c.maxOffset {
		if c.skew != nil {
			c.skew.Inc()
		}
		return Timestamp{}, &SkewError{Remote: remote, PhysicalMs: pt, MaxOffset: time.Duration(c.maxOffset) * time.Millisecond}
	}
	// A remote logical beyond our 16 bits is folded into the next
	// millisecond: (wall+1, 0) still orders after it.
	rs := pack(remote.WallMs, uint64(remote.Logical))
	if remote.Logical > maxLogical {
		rs = pack(remote.WallMs, maxLogical)
	}
	for {
		old := c.state.Load()
		next := merge(old, rs, pt)
		if err := c.ensureBound(wallOf(next)); err != nil {
			return Timestamp{}, err
		}
		if c.state.CompareAndSwap(old, next) {
			c.tick()
			return c.stamp(next), nil
		}
	}
}

// merge is the receive rule of Kulkarni et al. on packed states: the new
// wall is the maximum of the three; the logical counter continues from
// whichever of local and remote holds that maximum.
func merge(local, remote uint64, pt int64) uint64 {
	lw, rw := wallOf(local), wallOf(remote)
	switch {
	case pt > lw && pt > rw:
		return pack(pt, 0)
	case lw == rw:
		return increment(max(local, remote))
	case lw > rw:
		return increment(local)
	default:
		return increment(remote)
	}
}

// ensureBound makes sure wall may be handed out, extending the persisted
// bound ahead of use. When wall is still within the bound, only one caller
// extends it (the rest go on without waiting); past the bound, callers wait.
func (c *Clock) ensureBound(wall int64) error {
	b := c.bound.Load()
	if wall <= b-c.stepMs/2 {
		return nil
	}
	if wall <= b {
		if c.persistMu.TryLock() {
			_ = c.extendLocked(wall) // a failure resurfaces when the bound is reached
			c.persistMu.Unlock()
		}
		return nil
	}
	return c.extend(wall)
}

func (c *Clock) extend(wall int64) error {
	c.persistMu.Lock()
	defer c.persistMu.Unlock()
	return c.extendLocked(wall)
}

func (c *Clock) extendLocked(wall int64) error {
	if wall <= c.bound.Load()-c.stepMs/2 {
		return nil
	}
	nb := wall + c.stepMs
	if err := c.persister.Store(nb); err != nil {
		return fmt.Errorf("%w: store %d: %v", ErrPersist, nb, err)
	}
	c.bound.Store(nb)
	return nil
}

// Last returns the latest timestamp handed out (or the restart floor).
func (c *Clock) Last() Timestamp { return c.stamp(c.state.Load()) }

// PhysicalOffset is how far the clock's wall time is ahead of the physical
// clock: the wall time of the latest timestamp minus physical time, or 0
// when it is not ahead (an idle clock's latest timestamp is in the past,
// and its next one takes physical time). It grows when Update takes a
// remote timestamp ahead of us, and after a restart (the clock resumes
// above the persisted bound); MaxOffset bounds what Update accepts.
func (c *Clock) PhysicalOffset() time.Duration {
	ahead := wallOf(c.state.Load()) - c.readPhysical()
	if ahead <= 0 {
		return 0
	}
	return time.Duration(ahead) * time.Millisecond
}

// MemoryPersister keeps the bound in memory; for tests and for nodes that
// accept losing the across-restart guarantee.
type MemoryPersister struct {
	mu    sync.Mutex
	bound int64
	err   error
}

// FailWith makes every later Store return err (nil heals it).
func (m *MemoryPersister) FailWith(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.err = err
}

// Load implements Persister.
func (m *MemoryPersister) Load() (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.bound, nil
}

// Store implements Persister.
func (m *MemoryPersister) Store(wallMs int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return m.err
	}
	m.bound = wallMs
	return nil
}
