package dataplane

import (
	"context"
	"sync"
	"time"

	"github.com/strata-ledger/strata/transport/progress"
	"github.com/strata-ledger/strata/wal"
)

// Staging (issue 14): every dataPlaneStageInterval the aggregates that
// changed are written to the NodeWAL as one staged record (LOCAL,
// group-committed with everything else), so a folded update is durable
// within milliseconds; every data_plane_commit_interval the pending
// aggregates become WorkflowProgress events that climb to the regional
// ledger, and the staged records they cover are released (the pipeline
// holds its watermark on them until then, so the NodeWAL keeps them).
// After a crash, Recover hands the unreleased staged records back
// (onStaged); they are folded into pending again and committed at the
// next flush. The counters are cumulative and the ledger keeps the
// maximum, so folding a record twice is harmless.

// stagedRecords are staged records Recover handed back, waiting for the
// data plane's loop.
type stagedRecords struct {
	mu   sync.Mutex
	recs []stagedRecord
}

type stagedRecord struct {
	lsn     wal.LSN
	payload []byte
}

// Recovered takes a staged record the pipeline's Recover handed back
// (commit.PipelineConfig.OnStaged): it is folded again by the loop and
// held until the next commit covers it.
func (d *Manager) Recovered(lsn wal.LSN, payload []byte) {
	d.recovered.mu.Lock()
	d.recovered.recs = append(d.recovered.recs, stagedRecord{lsn, payload})
	d.recovered.mu.Unlock()
}

// refold folds recovered staged records into pending, in NodeWAL order,
// and holds them until the next commit.
func (d *Manager) refold() {
	d.recovered.mu.Lock()
	recs := d.recovered.recs
	d.recovered.recs = nil
	d.recovered.mu.Unlock()
	for _, r := range recs {
		err := d.unstage.Decode(r.payload, func(p progress.Progress) {
			k := aggKey{p.Workflow, p.Worker}
			if cur, ok := d.pending[k]; ok {
				p = maxProgress(cur, p)
			}
			d.pending[k], d.tracked[k] = p, p.Fence
		})
		if err != nil {
			d.log.Error("a recovered staged progress record cannot be read: released", "lsn", r.lsn, "err", err)
		}
		d.held = append(d.held, r.lsn)
		d.refolded.Inc()
	}
}

// stageOnce writes what changed since the last stage, and what an
// earlier stage failed to write, as one staged record and waits for its
// fsync. A failed stage is tried again at the next tick, not left to the
// commit interval: with a long data_plane_commit_interval the aggregate
// would otherwise wait that long for LOCAL, and a worker that keeps
// sending the same counters changes nothing that would stage it again.
func (d *Manager) stageOnce(ctx context.Context) {
	d.refold()
	first := d.clock.take() // before Drain: a fold in between is dated early, never late
	changed := d.drain()
	if len(changed) == 0 && d.restage.empty() {
		return // first, if any, was a fold drained last time, or a repeat
	}
	if first.IsZero() && len(changed) > 0 {
		first = d.clock.take() // folded between take and Drain
	}
	recs, first := d.restage.merge(changed, first)
	var err error
	if d.stageBuf, err = d.stager.Append(d.stageBuf[:0], recs); err != nil {
		d.log.Error("stage progress: encode", "err", err) // ids the receiver checked: a bug
		d.stager.NewEpoch()                               // the keys it named are in no record
		return
	}
	ts, _ := d.cfg.Clock()
	lsn, err := d.cfg.Pipeline.Stage(ctx, d.stageBuf, ts)
	if lsn != 0 {
		d.held = append(d.held, lsn) // written or maybe written: held either way
	}
	if err != nil {
		// Not LOCAL (yet): staged again at the next tick, and pending
		// for the next commit all the same.
		if !d.stageFailing {
			d.log.Warn("stage progress: trying again every tick", "aggregates", len(recs), "err", err)
		}
		d.stageFailing = true
		d.restage.hold(recs, first)
		// The record may be missing from the NodeWAL, and with it the
		// names of the keys it introduced: later records must not refer
		// to them, or recovery could not read them.
		d.stager.NewEpoch()
		return
	}
	if d.stageFailing {
		d.log.Info("stage progress: staged again", "aggregates", len(recs))
		d.stageFailing = false
	}
	if !first.IsZero() {
		d.local.Observe(time.Since(first).Seconds())
	}
}

// restage is what a failed stage did not write: the aggregates (their
// maximum per key) and the oldest fold among them. It is bounded by the
// receiver's aggregates.
type restage struct {
	aggs  map[aggKey]progress.Progress
	first time.Time
}

func (r *restage) empty() bool { return len(r.aggs) == 0 }

// hold keeps recs, folded first at first, for the next stage.
func (r *restage) hold(recs []progress.Progress, first time.Time) {
	if r.aggs == nil {
		r.aggs = make(map[aggKey]progress.Progress, len(recs))
	}
	for _, p := range recs {
		k := aggKey{p.Workflow, p.Worker}
		if cur, ok := r.aggs[k]; ok {
			p = maxProgress(cur, p)
		}
		r.aggs[k] = p
	}
	if r.first.IsZero() || (!first.IsZero() && first.Before(r.first)) {
		r.first = first
	}
}

// merge returns changed with what is held folded in, and the oldest fold
// time of both, and holds nothing afterwards.
func (r *restage) merge(changed []progress.Progress, first time.Time) ([]progress.Progress, time.Time) {
	if r.empty() {
		return changed, first
	}
	r.hold(changed, first)
	out := make([]progress.Progress, 0, len(r.aggs))
	for _, p := range r.aggs {
		out = append(out, p)
	}
	first = r.first
	clear(r.aggs)
	r.first = time.Time{}
	return out, first
}

// maxProgress is the fold of two reports of one aggregate: the higher
// fence's series, each counter's maximum within one series.
func maxProgress(a, b progress.Progress) progress.Progress {
	switch {
	case a.Fence > b.Fence:
		return a
	case b.Fence > a.Fence:
		return b
	}
	a.Completed, a.Failed = max(a.Completed, b.Completed), max(a.Failed, b.Failed)
	return a
}
