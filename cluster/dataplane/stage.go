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

// stageOnce writes what changed since the last stage as one staged
// record and waits for its fsync.
func (d *Manager) stageOnce(ctx context.Context) {
	d.refold()
	first := d.clock.take() // before Drain: a fold in between is dated early, never late
	changed := d.drain()
	if len(changed) == 0 {
		return
	}
	var err error
	if d.stageBuf, err = d.stager.Append(d.stageBuf[:0], changed); err != nil {
		d.log.Error("stage progress: encode", "err", err) // ids the receiver checked: a bug
		return
	}
	ts, _ := d.cfg.Clock()
	lsn, err := d.cfg.Pipeline.Stage(ctx, d.stageBuf, ts)
	if lsn != 0 {
		d.held = append(d.held, lsn) // written or maybe written: held either way
	}
	if err != nil {
		// Not LOCAL (yet): the aggregates stay pending and are committed
		// at the next flush all the same.
		d.log.Warn("stage progress", "aggregates", len(changed), "err", err)
		return
	}
	if !first.IsZero() {
		d.local.Observe(time.Since(first).Seconds())
	}
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
