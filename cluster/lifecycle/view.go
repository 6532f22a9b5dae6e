package lifecycle

import (
	"context"
	"sync"
)

// viewBoard publishes Views and lets readers wait for a newer one.
type viewBoard struct {
	mu      sync.Mutex
	view    *View
	changed chan struct{} // closed and replaced on every publish
}

func newViewBoard() *viewBoard {
	return &viewBoard{view: &View{}, changed: make(chan struct{})}
}

// publish makes v the current view and wakes every waiter.
func (b *viewBoard) publish(v *View) {
	b.mu.Lock()
	b.view = v
	close(b.changed)
	b.changed = make(chan struct{})
	b.mu.Unlock()
}

// current returns the latest view (never nil).
func (b *viewBoard) current() *View {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.view
}

// after returns the first view whose Index is greater than index, or the
// current view when ctx ends first (a long poll's timeout is not an error).
func (b *viewBoard) after(ctx context.Context, index uint64) *View {
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
