package faultnet

import (
	"fmt"
	"sync/atomic"
	"time"
)

// MaxClockOffset bounds the clock-skew fault (Rules.ClockOffset) in either
// direction. It is 20 times the HLC's default max offset (500 ms): enough
// to push a node's timestamps far past what its peers accept, and small
// enough that the HLC's persisted upper bound, which a forward skew drags
// along, is caught up by real time within seconds once the fault heals.
const MaxClockOffset = 10 * time.Second

// Clock is the physical clock a node's HLC reads, shifted by the
// clock-skew fault. The zero value reads the wall clock unshifted; it is
// safe for concurrent use, and the read is one atomic load on top of
// time.Now.
//
// The node builds its HLC before its fault layer, so the Clock is a value
// the node owns and hands to the fault layer (Config.Clock), rather than
// something the fault layer creates.
type Clock struct {
	offset atomic.Int64 // nanoseconds
}

// UnixMilli is the shifted wall clock in Unix milliseconds: what the HLC's
// Physical reads.
func (c *Clock) UnixMilli() int64 {
	return time.Now().Add(c.Offset()).UnixMilli()
}

// Offset is the skew in force.
func (c *Clock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// SetOffset sets the skew; it refuses one beyond ±MaxClockOffset.
func (c *Clock) SetOffset(d time.Duration) error {
	if err := checkClockOffset(d); err != nil {
		return err
	}
	c.offset.Store(int64(d))
	return nil
}

func checkClockOffset(d time.Duration) error {
	if d < -MaxClockOffset || d > MaxClockOffset {
		return fmt.Errorf("%w: clock offset %v outside [-%v, %v]", ErrInvalidRule, d, MaxClockOffset, MaxClockOffset)
	}
	return nil
}
