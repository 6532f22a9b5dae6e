package cluster

import (
	"context"
	"sync"
)

// appliedIndex is the ledger's applied Raft index with a broadcast on every
// advance, so that session reads wait for an index without polling.
type appliedIndex struct {
	mu    sync.Mutex
	index uint64
	moved chan struct{} // closed and replaced on every advance
}

func newAppliedIndex(index uint64) *appliedIndex {
	return &appliedIndex{index: index, moved: make(chan struct{})}
}

// set records index (a lower one is ignored) and wakes the waiters.
func (a *appliedIndex) set(index uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if index <= a.index {
		return
	}
	a.index = index
	close(a.moved)
	a.moved = make(chan struct{})
}

// wait returns once the applied index is at least index, or ctx's error.
func (a *appliedIndex) wait(ctx context.Context, index uint64) error {
	for {
		a.mu.Lock()
		cur, moved := a.index, a.moved
		a.mu.Unlock()
		if cur >= index {
			return nil
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// changed returns a channel closed at the next advance.
func (a *appliedIndex) changed() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.moved
}

// current returns the applied index and a channel closed at its next
// advance, read together so that no advance between them is missed
// (watch streams wait on it).
func (a *appliedIndex) current() (uint64, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.index, a.moved
}
