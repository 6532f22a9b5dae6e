package peer

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/strata-ledger/strata/cluster/group"
)

// A follower's pipeline forwards every client batch to the leader. Sent one
// HTTP call each, the calls cost more CPU than the batches' commit: a
// request and a response to parse and write on both sides, per batch. The
// coalescer sends what queued while earlier calls were in flight as one
// call, as the Proposer packs batches into one Raft entry: under load one
// call carries tens of batches, at one client nothing waits (a batch that
// finds a free slot goes at once).

// Coalescer limits.
const (
	// coalesceInFlight bounds the forward calls in flight to one leader:
	// enough to keep its proposer queue fed while one answer is on its
	// way back. The bound is per leader, so calls hung on a partitioned
	// old leader (until coalesceCallTimeout) do not hold back the new one.
	coalesceInFlight = 4
	// coalesceMaxBatches bounds the batches of one call; its body, the
	// entry envelope of the batches, is bounded by MaxEntryBytes, the
	// leader's body limit (a single batch always fits).
	coalesceMaxBatches = 1024
	// coalesceCallTimeout bounds one coalesced call; each batch's own
	// context still bounds how long its caller waits.
	coalesceCallTimeout = 10 * time.Second
)

// forwardOutcome is one batch's answer in a coalesced call.
type forwardOutcome struct {
	out group.Proposal
	err error
}

// postManyFunc sends batches to leader in one call: one outcome per batch,
// or an error for the whole call.
type postManyFunc func(ctx context.Context, leader group.Leader, batches [][]byte) ([]forwardOutcome, error)

// coalescer is a Forwarder that merges concurrent forwards to the same
// leader into one call. Safe for concurrent use; run must be running.
type coalescer struct {
	post  postManyFunc
	calls prometheus.Histogram // batches per call
	wake  chan struct{}        // an item queued or a call ended; capacity 1

	mu       sync.Mutex
	queue    []*forwardItem
	inFlight map[group.Leader]int // calls in flight by leader
	closed   bool
}

// forwardItem is one batch waiting for its call.
type forwardItem struct {
	ctx    context.Context
	leader group.Leader
	batch  []byte
	res    forwardOutcome
	done   chan struct{} // closed once res is set
}

// newCoalescer returns a coalescer sending with post; reg nil registers
// no metrics.
func newCoalescer(post postManyFunc, reg prometheus.Registerer) (*coalescer, error) {
	calls := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "strata_pipeline_forward_call_batches",
		Help:    "Batches a follower sent to its leader per forward call (coalesced while earlier calls were in flight).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 11),
	})
	if reg != nil {
		if err := reg.Register(calls); err != nil {
			return nil, fmt.Errorf("cluster: coalescer metrics: %w", err)
		}
	}
	return &coalescer{post: post, calls: calls, wake: make(chan struct{}, 1), inFlight: map[group.Leader]int{}}, nil
}

// Forward queues batch for leader and waits for its outcome or ctx. A
// batch whose caller gave up may still be sent (harmless: apply is
// idempotent by event id, and the pipeline retries it anyway).
func (c *coalescer) Forward(ctx context.Context, leader group.Leader, batch []byte) (group.Proposal, error) {
	it := &forwardItem{ctx: ctx, leader: leader, batch: batch, done: make(chan struct{})}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return group.Proposal{}, group.ErrClosed
	}
	c.queue = append(c.queue, it)
	c.mu.Unlock()
	c.signal()
	select {
	case <-it.done:
		return it.res.out, it.res.err
	case <-ctx.Done():
		return group.Proposal{}, fmt.Errorf("cluster: forward: %w", ctx.Err())
	}
}

// run sends calls until ctx ends, then fails what is queued with
// ErrClosed and waits for the calls in flight.
func (c *coalescer) run(ctx context.Context) {
	var calls sync.WaitGroup
	defer func() {
		c.mu.Lock()
		c.closed = true
		queued := c.queue
		c.queue = nil
		c.mu.Unlock()
		for _, it := range queued {
			it.finish(forwardOutcome{err: group.ErrClosed})
		}
		calls.Wait()
	}()
	for {
		for items := c.take(); items != nil; items = c.take() {
			calls.Go(func() {
				c.send(ctx, items)
				c.mu.Lock()
				if c.inFlight[items[0].leader]--; c.inFlight[items[0].leader] == 0 {
					delete(c.inFlight, items[0].leader)
				}
				c.mu.Unlock()
				c.signal()
			})
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			return
		}
	}
}

func (c *coalescer) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// take removes the next call's items: the oldest live item whose leader
// has a call slot free and those after it for the same leader, within the
// call limits; it counts the call in flight. Items whose caller gave up
// are dropped. Nil if no item can go now.
func (c *coalescer) take() []*forwardItem {
	c.mu.Lock()
	defer c.mu.Unlock()
	var items []*forwardItem
	rest := c.queue[:0]
	size := 1 + group.UvarintLen(coalesceMaxBatches) // the envelope's version and count, at most
	for _, it := range c.queue {
		grow := group.UvarintLen(uint64(len(it.batch))) + len(it.batch)
		switch {
		case it.ctx.Err() != nil:
			it.finish(forwardOutcome{err: fmt.Errorf("cluster: forward: %w", it.ctx.Err())})
		case len(items) == 0 && c.inFlight[it.leader] < coalesceInFlight,
			len(items) > 0 && it.leader == items[0].leader && len(items) < coalesceMaxBatches &&
				size+grow <= group.MaxEntryBytes:
			items = append(items, it)
			size += grow
		default:
			rest = append(rest, it)
		}
	}
	clear(c.queue[len(rest):])
	c.queue = rest
	if items != nil {
		c.inFlight[items[0].leader]++
	}
	return items
}

// send makes one call for items and hands each its outcome.
func (c *coalescer) send(ctx context.Context, items []*forwardItem) {
	ctx, cancel := context.WithTimeout(ctx, coalesceCallTimeout)
	defer cancel()
	batches := make([][]byte, len(items))
	for i, it := range items {
		batches[i] = it.batch
	}
	c.calls.Observe(float64(len(batches)))
	outs, err := c.post(ctx, items[0].leader, batches)
	if err == nil && len(outs) != len(items) {
		err = fmt.Errorf("cluster: forward to %s: %d outcomes for %d batches", items[0].leader.ID, len(outs), len(items))
	}
	for i, it := range items {
		if err != nil {
			it.finish(forwardOutcome{err: err})
			continue
		}
		it.finish(outs[i])
	}
}

func (it *forwardItem) finish(res forwardOutcome) {
	it.res = res
	close(it.done)
}
