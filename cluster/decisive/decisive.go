// Package decisive keeps a gate leader from having two decisive writes of
// one job in flight at once: its reconciler's completion or time-out and a
// client's cancel.
//
// Why: DESIGN §3 resolves concurrent decisions by rank ("cancellation
// wins"), whatever order they arrive in. A cancel admitted while the job
// was RUNNING, and a completion proposed at the same time, carry the same
// fence: if the completion applies first, a STRONG read can return
// COMPLETED, and the cancel, applied next, overturns it (docs/CHAOS.md,
// finding 2). Both are written on the gate leader (a cancel runs there;
// the reconciler runs there), so the leader can keep them apart: a cancel
// waits until the completion in flight has applied and then reads the job
// (COMPLETED: refused as terminal); a completion is not proposed while a
// cancel is in flight (the reconciler plans it again next pass, and finds
// the job CANCELLING). What this does not cover: decisions written on
// other nodes (a region's JobFailed, forwarded by its managers) and a
// cancel still climbing from a deposed leader's NodeWAL.
package decisive

import (
	"context"
	"sync"
)

// Jobs holds the jobs with a decisive write in flight on this node. A nil
// *Jobs holds nothing: every acquire succeeds at once.
type Jobs struct {
	mu      sync.Mutex
	busy    map[string]chan struct{} // closed when the write ends
	waiting int                      // callers of Acquire waiting
}

// New returns an empty Jobs.
func New() *Jobs { return &Jobs{busy: map[string]chan struct{}{}} }

// Acquire waits until job has no decisive write in flight here, then
// takes it for the caller's; release (idempotent) ends it. An error is
// ctx's, and then nothing is taken.
func (j *Jobs) Acquire(ctx context.Context, job string) (release func(), err error) {
	if j == nil {
		return func() {}, nil
	}
	for {
		release, wait := j.take(job)
		if release != nil {
			return release, nil
		}
		j.mu.Lock()
		j.waiting++
		j.mu.Unlock()
		select {
		case <-wait:
			err = nil
		case <-ctx.Done():
			err = ctx.Err()
		}
		j.mu.Lock()
		j.waiting--
		j.mu.Unlock()
		if err != nil {
			return nil, err
		}
	}
}

// Waiting reports how many Acquire calls wait for a write to end.
func (j *Jobs) Waiting() int {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.waiting
}

// TryAcquire takes job if no decisive write of it is in flight here.
func (j *Jobs) TryAcquire(job string) (release func(), ok bool) {
	if j == nil {
		return func() {}, true
	}
	release, _ = j.take(job)
	return release, release != nil
}

// Busy reports how many jobs have a decisive write in flight.
func (j *Jobs) Busy() int {
	if j == nil {
		return 0
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.busy)
}

// take takes job and returns its release, or the channel that closes when
// the write holding it ends.
func (j *Jobs) take(job string) (func(), <-chan struct{}) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if ch, held := j.busy[job]; held {
		return nil, ch
	}
	ch := make(chan struct{})
	j.busy[job] = ch
	var once sync.Once
	return func() {
		once.Do(func() {
			j.mu.Lock()
			delete(j.busy, job)
			j.mu.Unlock()
			close(ch)
		})
	}, nil
}
