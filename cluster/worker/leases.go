package worker

import (
	"context"

	"github.com/strata-ledger/strata/transport/api"
)

// run is one leased workflow running in its own goroutine.
type run struct {
	key    runKey
	lease  api.Lease
	sess   *session
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed once the goroutine has exited
	// endTrace ends the run's execution span (Config.Trace) with its
	// outcome; outcome is set by the run's goroutine before it exits.
	endTrace func(outcome string)
	outcome  string
}

// stop cancels the run: its goroutine exits as soon as its current wait
// or call notices, never after a sleep of its own.
func (rn *run) stop() { rn.cancel() }

// leaseLoop long-polls the worker's leases until the session ends and
// starts what they name. A list older than one already applied (a lagging
// manager) is not acted on.
func (r *Runner) leaseLoop(s *session) {
	var b backoff
	var index uint64
	for s.ctx.Err() == nil {
		list, _, err := r.cfg.Client.Leases(s.ctx, s.id, index, r.cfg.LeaseWait)
		if err != nil {
			if s.ctx.Err() != nil {
				return
			}
			if classify(err) == errUnknownWorker {
				r.lose(s)
				return
			}
			r.log.Warn("lease poll failed", "worker", s.id, "err", err)
			b.wait(s.ctx)
			continue
		}
		if list.Index < index {
			r.log.Debug("lease list older than the last one: ignored", "worker", s.id, "index", list.Index, "applied", index)
			b.wait(s.ctx)
			continue
		}
		b.reset()
		index = list.Index
		r.mu.Lock()
		if r.sess == s {
			r.list = list
			r.applyLocked(true)
		}
		r.mu.Unlock()
	}
}

// applyLocked starts every lease of the current list that is neither
// running nor ended here, up to the capacity; a lease of a running
// workflow under a higher fence supersedes the old run. fresh is true for
// a list just received (false when re-applied after a run exited or the
// fence lifted): only then are ended keys the list no longer shows
// forgotten and leases beyond capacity logged.
func (r *Runner) applyLocked(fresh bool) {
	l := r.list
	if l == nil || r.sess == nil || r.fenced || r.closing {
		return
	}
	byWorkflow := make(map[string]*run, len(r.runs))
	for _, rn := range r.runs {
		if cur := byWorkflow[rn.key.workflow]; cur == nil || cur.key.fence < rn.key.fence {
			byWorkflow[rn.key.workflow] = rn
		}
	}
	listed := make(map[runKey]bool, len(l.Leases))
	var over []string
	for _, lease := range l.Leases {
		k := runKey{lease.Workflow, lease.LeaseFence}
		listed[k] = true
		if _, ok := r.runs[k]; ok || k.workflow == "" || k.fence == 0 {
			continue
		}
		if _, ok := r.ended[k]; ok {
			continue
		}
		if old := byWorkflow[k.workflow]; old != nil {
			if old.key.fence > k.fence {
				continue // a lagging list
			}
			r.endLocked(old, "superseded by a newer lease")
		}
		if len(r.runs) >= int(r.cfg.Capacity) {
			over = append(over, k.workflow)
			continue
		}
		r.startLocked(lease)
	}
	if !fresh {
		return
	}
	if len(over) > 0 {
		r.log.Warn("leases beyond capacity ignored", "worker", r.id, "capacity", r.cfg.Capacity, "ignored", over)
	}
	for k, at := range r.ended {
		if !listed[k] && l.Index > at {
			delete(r.ended, k)
		}
	}
}

// startLocked starts a run of lease.
func (r *Runner) startLocked(lease api.Lease) {
	ctx, cancel := context.WithCancel(r.runCtx)
	endTrace := func(string) {}
	if r.cfg.Trace != nil {
		ctx, endTrace = r.cfg.Trace(ctx, lease)
	}
	rn := &run{key: runKey{lease.Workflow, lease.LeaseFence}, lease: lease, sess: r.sess, ctx: ctx, cancel: cancel, done: make(chan struct{}), endTrace: endTrace}
	r.runs[rn.key] = rn
	r.wg.Add(1)
	r.log.Info("workflow started", "worker", r.id, "workflow", lease.Workflow, "lease_fence", lease.LeaseFence,
		"duration", lease.Spec.Duration, "rate", lease.Spec.Rate, "failure_ratio", lease.Spec.FailureRatio,
		"completed", lease.Completed, "failed", lease.Failed)
	go r.runWorkflow(rn)
}

// endLocked stops rn for good: its lease is never started again here. A
// reason is logged; a run that ends itself logs its own end and passes "".
func (r *Runner) endLocked(rn *run, reason string) {
	if _, ok := r.ended[rn.key]; !ok {
		var at uint64
		if r.list != nil {
			at = r.list.Index
		}
		r.ended[rn.key] = at
		if reason != "" && rn.ctx.Err() == nil {
			r.log.Info("workflow stopped", "worker", r.id, "workflow", rn.key.workflow, "lease_fence", rn.key.fence, "reason", reason)
		}
	}
	rn.stop()
}

// end is endLocked for a run's own goroutine.
func (r *Runner) end(rn *run, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.endLocked(rn, reason)
}

// exited removes a finished run and gives its slot to the leases waiting.
func (r *Runner) exited(rn *run) {
	outcome := rn.outcome
	if outcome == "" {
		outcome = "stopped"
	}
	rn.endTrace(outcome)
	rn.cancel()
	r.mu.Lock()
	delete(r.runs, rn.key)
	r.applyLocked(false)
	r.mu.Unlock()
	close(rn.done)
	r.wg.Done()
}

// stopAll stops every run (without ending their leases: the manager may
// still hold them for this worker) and returns them to wait for.
func (r *Runner) stopAll(reason string) []*run {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*run, 0, len(r.runs))
	for _, rn := range r.runs {
		rn.stop()
		out = append(out, rn)
	}
	if len(out) > 0 {
		r.log.Info("stopped every workflow", "worker", r.id, "workflows", len(out), "reason", reason)
	}
	return out
}

// waitRuns waits until every run of runs has exited; they were stopped,
// so each exits as soon as its current step notices.
func (r *Runner) waitRuns(runs []*run) {
	for _, rn := range runs {
		<-rn.done
	}
}
