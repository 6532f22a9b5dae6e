package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// Reconciler timings and sizes.
const (
	// reconcileCoalesce lets a burst of applies wake a reconciler once.
	reconcileCoalesce = 10 * time.Millisecond
	// leaderBarrierTimeout bounds the barrier a new leader runs before
	// its reconcilers read the ledger (so they see every committed entry).
	leaderBarrierTimeout = 10 * time.Second
	// maxPlannedPerBatch bounds the events of one reconciler proposal.
	maxPlannedPerBatch = 512
	// maxPlannedBatchBytes keeps a proposal well under a Raft entry's 1 MiB.
	maxPlannedBatchBytes = 768 << 10
	// resyncInterval is how often a leader's reconcilers scan every live
	// job (besides a new leader's first pass and a dirty set that
	// overflowed): the safety net under the incremental passes, which
	// visit only the jobs the ledger changed, the jobs with a due time
	// and the work in flight.
	resyncInterval = 30 * time.Second
)

// liveJobStatuses are the statuses a reconciler may still have work for:
// running jobs, and failed or timed-out ones whose regions may not have
// stopped yet.
var liveJobStatuses = []fsm.JobStatus{fsm.JobStatusPending, fsm.JobStatusRunning, fsm.JobStatusCancelling,
	fsm.JobStatusFailed, fsm.JobStatusTimedOut}

// Run runs the group's reconcilers (and a manager's forwarder) while this
// node leads its group, and stops them when it no longer does; it returns
// when ctx ends, after they stopped. Call it once.
func (l *Lifecycle) Run(ctx context.Context) {
	tick := time.NewTicker(l.cfg.ReconcileInterval)
	defer tick.Stop()
	var stop context.CancelFunc
	var done chan struct{}
	for {
		leading := l.cfg.Leadership.IsLeader()
		switch {
		case leading && stop == nil:
			var tctx context.Context
			tctx, stop = context.WithCancel(ctx)
			done = make(chan struct{})
			go func() { defer close(done); l.lead(tctx) }()
		case !leading && stop != nil:
			stop()
			<-done
			stop = nil
		}
		select {
		case <-ctx.Done():
			if stop != nil {
				stop()
				<-done
			}
			return
		case <-tick.C:
		}
	}
}

// lead is one term's leadership: a barrier, then the role's tasks. The
// term's state starts and ends empty (endTerm), so nothing a node served
// as leader outlives its term or leaks into its next one.
func (l *Lifecycle) lead(ctx context.Context) {
	l.endTerm()
	defer l.endTerm()
	for ctx.Err() == nil {
		if err := l.cfg.Leadership.Barrier(leaderBarrierTimeout); err == nil {
			break
		} else if !waitOrDone(ctx, l.cfg.ReconcileInterval) {
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	l.reads.proposed()         // the barrier applied the term's backlog: read it all
	l.jobM.leading.Store(true) // the term counts what its group applies from here on (jobmetrics.go)
	l.log.Info("leading: reconcilers started", "group", l.cfg.Group)
	defer l.log.Info("reconcilers stopped", "group", l.cfg.Group)
	if l.cfg.Global {
		d := newGlobalDriver(l)
		l.reconcileLoop(ctx, d.pass)
		d.wait()
		return
	}
	d := newRegionDriver(l)
	fw := newForwarder(l)
	l.fwd.Store(fw)
	done := make(chan struct{})
	go func() { defer close(done); fw.run(ctx) }()
	l.reconcileLoop(ctx, d.pass)
	<-done
}

// endTerm clears what a term's leadership publishes: the lease view
// (else a node leading again would answer lease polls from its previous
// term's view until its first pass), the forwarder whose status
// GET /v1/cluster/raft shows, and the job metrics' counting.
func (l *Lifecycle) endTerm() {
	l.jobM.leading.Store(false)
	l.fwd.Store(nil)
	l.views.publish(&View{})
}

// reconcileLoop runs pass whenever the ledger moved or the interval
// passed, one pass at a time, until ctx ends.
func (l *Lifecycle) reconcileLoop(ctx context.Context, pass func(context.Context) error) {
	tick := time.NewTicker(l.cfg.ReconcileInterval)
	defer tick.Stop()
	var lastErr string
	for ctx.Err() == nil {
		moved := l.cfg.Applied.Changed()
		if err := pass(ctx); err != nil && ctx.Err() == nil && err.Error() != lastErr {
			l.log.Warn("reconcile pass failed", "err", err)
			lastErr = err.Error()
		} else if err == nil {
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-moved:
			waitOrDone(ctx, reconcileCoalesce)
		case <-tick.C:
		}
	}
}

// waitOrDone waits d; false if ctx ended first.
func waitOrDone(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// stamp gives planned events their origin and increasing HLCs after
// the newest event the plan was based on, so they order after what they
// react to.
func (l *Lifecycle) stamp(events []fsm.Event, after hlc.Timestamp) error {
	return l.cfg.Stamper.Planned(events, after)
}

// chunkEvents splits events into proposals of at most maxPlannedPerBatch
// events and about maxPlannedBatchBytes, keeping their order.
func chunkEvents(events []fsm.Event) ([][]fsm.Event, error) {
	var out [][]fsm.Event
	start, size := 0, 0
	var buf []byte
	for i := range events {
		var err error
		buf, err = events[i].AppendBinary(buf[:0])
		if err != nil {
			return nil, err
		}
		if i > start && (i-start >= maxPlannedPerBatch || size+len(buf) > maxPlannedBatchBytes) {
			out = append(out, events[start:i])
			start, size = i, 0
		}
		size += len(buf) + 4
	}
	if start < len(events) {
		out = append(out, events[start:])
	}
	return out, nil
}

// proposeAll submits planned events to this node's group (at its tier) in chunks, in
// order, and stops at the first chunk that fails: a later chunk may hold
// what only follows from an earlier one (a JobAccepted after its
// workflows' dispatches, a JobCancellationAcked after the cancels), and
// the planners plan what did not land again next pass.
func (l *Lifecycle) proposeAll(ctx context.Context, events []fsm.Event) error {
	chunks, err := chunkEvents(events)
	if err != nil {
		return err
	}
	for i, c := range chunks {
		res, err := l.cfg.Submitter.Submit(ctx, c)
		l.reads.proposed() // applied here (or maybe later, if err): the next read sees it
		if err != nil {
			return fmt.Errorf("propose chunk %d of %d (%d events): %w", i+1, len(chunks), len(c), err)
		}
		for i, r := range res {
			if r.Outcome == fsm.OutcomeRejected && !errors.Is(r.Err, fsm.ErrEventConflict) {
				l.log.Debug("planned event rejected", "type", c[i].Type, "job", c[i].JobID, "err", r.Err)
			}
		}
	}
	return nil
}

// maxTS returns the later of two timestamps.
func maxTS(a, b hlc.Timestamp) hlc.Timestamp {
	if a.Less(b) {
		return b
	}
	return a
}
