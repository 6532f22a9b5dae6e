package group

import (
	"context"
	"sync"
)

// AppliedIndex is the ledger's applied Raft index with a broadcast on every
// advance, so that session reads wait for an index without polling.
type AppliedIndex struct {
	mu    sync.Mutex
	index uint64
	moved chan struct{} // closed and replaced on every advance
}

func NewAppliedIndex(index uint64) *AppliedIndex {
	return &AppliedIndex{index: index, moved: make(chan struct{})}
}

// Set records index (a lower one is ignored) and wakes the waiters.
func (a *AppliedIndex) Set(index uint64) {
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
func (a *AppliedIndex) Wait(ctx context.Context, index uint64) error {
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

// Changed returns a channel closed at the next advance.
func (a *AppliedIndex) Changed() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.moved
}

// Current returns the applied index and a channel closed at its next
// advance, read together so that no advance between them is missed
// (watch streams wait on it).
func (a *AppliedIndex) Current() (uint64, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.index, a.moved
}
