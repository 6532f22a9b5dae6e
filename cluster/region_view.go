package cluster

import (
	"context"
	"sync"

	"github.com/strata-ledger/strata/fsm"
)

// regionView is what the regional leader's reconciler last saw of its
// ledger's live workflows, published after every pass: the worker API
// answers lease long-polls from it instead of scanning the ledger.
type regionView struct {
	// Index is the applied index the pass read.
	Index uint64
	// Leases holds, per worker, the workflows LEASED to it.
	Leases map[string][]*fsm.WorkflowState
}

// viewBoard publishes regionViews and lets readers wait for a newer one.
type viewBoard struct {
	mu      sync.Mutex
	view    *regionView
	changed chan struct{} // closed and replaced on every publish
}

func newViewBoard() *viewBoard {
	return &viewBoard{view: &regionView{}, changed: make(chan struct{})}
}

// publish makes v the current view and wakes every waiter.
func (b *viewBoard) publish(v *regionView) {
	b.mu.Lock()
	b.view = v
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// current returns the latest view (never nil).
func (b *viewBoard) current() *regionView {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.view
}

// after returns the first view whose Index is greater than index, or the
// current view when ctx ends first (a long poll's timeout is not an error).
func (b *viewBoard) after(ctx context.Context, index uint64) *regionView {
	for {
		b.mu.Lock()
		v, ch := b.view, b.changed
		b.mu.Unlock()
		if v.Index > index {
			return v
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return v
		}
	}
}
