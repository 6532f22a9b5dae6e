package bench

import (
	"context"
	"sync/atomic"
	"time"
)

// clock is where a run reads the time and waits for an open-loop slot.
// Run uses the system clock; tests pass a manual one so that latencies
// counted from the schedule are exact.
type clock interface {
	Now() time.Time
	// SleepUntil waits until t or the end of ctx, and reports whether t
	// came first.
	SleepUntil(ctx context.Context, t time.Time) bool
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) SleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// pacer hands out the slots of an open-loop run: slot i is due at
// start + i/rate, whatever happened to the slots before it. A slot goes to
// the first free worker; when none is free it waits for one, and the slots
// behind it wait too, so a saturated system sees the workers' full
// throughput while every slot's latency keeps counting from its due time
// (no coordinated omission). The pacer holds at most one slot: its memory
// does not grow however far behind it falls.
type pacer struct {
	clk   clock
	start time.Time
	rate  float64 // slots per second
	limit int64   // slots in all; 0: until ctx ends
	work  chan time.Time
	// idle is the number of free workers minus the slot being handed out:
	// the pacer takes one before handing a slot, a worker gives one back
	// when it has finished a request.
	idle     atomic.Int64
	progress *Progress

	// Written by run, read after it returns.
	sent   int64 // slots a worker took
	late   int64 // slots that came due while every worker was busy
	unsent int64 // slots due by the end that no worker took
}

func newPacer(clk clock, start time.Time, rate float64, limit int64, workers int, progress *Progress) *pacer {
	p := &pacer{clk: clk, start: start, rate: rate, limit: limit, work: make(chan time.Time), progress: progress}
	p.idle.Store(int64(workers))
	return p
}

// due is the time slot i is due.
func (p *pacer) due(i int64) time.Time {
	return p.start.Add(time.Duration(float64(i) * float64(time.Second) / p.rate))
}

// run hands out slots until limit of them are taken or ctx ends, then
// closes work.
func (p *pacer) run(ctx context.Context) {
	defer close(p.work)
	for i := int64(0); p.limit == 0 || i < p.limit; i++ {
		at := p.due(i)
		if !p.clk.SleepUntil(ctx, at) {
			p.unsent = max(p.dueBy(p.clk.Now())-i, 0)
			return
		}
		if p.idle.Add(-1) < 0 {
			p.late++
			p.progress.Late.Add(1)
		}
		select {
		case p.work <- at:
			p.sent++
		case <-ctx.Done():
			p.unsent = max(p.dueBy(p.clk.Now())-i, 1)
			return
		}
	}
}

// done is what a worker calls when it has finished a slot's request.
func (p *pacer) done() { p.idle.Add(1) }

// dueBy counts the slots due at or before t, at most limit.
func (p *pacer) dueBy(t time.Time) int64 {
	if t.Before(p.start) {
		return 0
	}
	n := int64(t.Sub(p.start).Seconds()*p.rate) + 1
	// Float rounding may put n one off the slots due() computes.
	for n > 0 && p.due(n-1).After(t) {
		n--
	}
	for !p.due(n).After(t) {
		n++
	}
	if p.limit > 0 {
		n = min(n, p.limit)
	}
	return n
}
