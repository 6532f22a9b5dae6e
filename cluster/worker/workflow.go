package worker

import (
	"context"
	"time"

	"github.com/strata-ledger/strata/transport/api"
)

// runWorkflow simulates rn's load until its duration has run, reporting
// cumulative counters every ProgressInterval, then reports its end. It
// returns as soon as rn is stopped.
func (r *Runner) runWorkflow(rn *run) {
	defer r.exited(rn)
	defer r.dropProgress(rn)
	l := rn.lease
	offset := ResumeAt(l.Spec, l.Completed, l.Failed)
	remaining := time.Duration(l.Spec.Duration) - offset
	// Counters never fall below what the ledger already holds.
	counters := func(elapsed time.Duration) (uint64, uint64) {
		c, f := Progress(l.Spec, offset+min(elapsed, remaining))
		return max(c, l.Completed), max(f, l.Failed)
	}
	start := r.now()
	tick := time.NewTicker(r.cfg.ProgressInterval)
	defer tick.Stop()
	end := time.NewTimer(remaining)
	defer end.Stop()
	for {
		elapsed := r.now().Sub(start)
		if elapsed >= remaining {
			c, f := counters(remaining)
			r.finish(rn, c, f)
			return
		}
		end.Reset(remaining - elapsed)
		select {
		case <-rn.ctx.Done():
			return
		case <-end.C:
			continue
		case <-tick.C:
		}
		if elapsed = r.now().Sub(start); elapsed >= remaining {
			continue // the end report carries the final counters
		}
		c, f := counters(elapsed)
		if !r.reportProgress(rn, c, f) {
			return
		}
	}
}

// reportProgress sends rn's counters (acknowledged LOCAL: progress is
// cumulative, a lost report is made good by the next). It returns false
// when rn must stop. A failed call is not retried: the next tick is the
// retry.
func (r *Runner) reportProgress(rn *run, completed, failed uint64) bool {
	if r.sendProgress(rn, completed, failed) {
		return true // the session's flush sends it
	}
	ctx, cancel := context.WithTimeout(rn.ctx, reportTimeout)
	defer cancel()
	req := &api.ProgressRequest{Updates: []api.ProgressUpdate{{
		Workflow: rn.key.workflow, LeaseFence: rn.key.fence, Completed: completed, Failed: failed}}}
	res, _, err := r.cfg.Client.ReportProgress(ctx, rn.sess.id, req, api.WriteOptions{Durability: api.DurabilityLocal})
	if rn.ctx.Err() != nil {
		return false
	}
	v, why := judge(res, err, rn.key.workflow)
	switch v {
	case reportMovedOn:
		r.end(rn, "lease moved on: "+why)
		return false
	case reportLost:
		r.lose(rn.sess)
		return false
	case reportRefused:
		r.log.Warn("progress refused", "worker", rn.sess.id, "workflow", rn.key.workflow, "why", why)
	case reportRetry:
		r.log.Debug("progress not delivered; the next report carries it", "worker", rn.sess.id, "workflow", rn.key.workflow, "err", why)
	}
	return true
}

// finish reports rn's end with its final counters: failed when every
// simulated request failed, completed otherwise. Transport failures are
// retried with backoff, at most maxEndAttempts times; a worker that gives
// up stops running the workflow and the manager reschedules it.
func (r *Runner) finish(rn *run, completed, failed uint64) {
	r.dropProgress(rn) // the end report carries the final counters
	msg := FailureMessage(rn.lease.Spec, completed, failed)
	if r.cfg.Fault != nil {
		if m := r.cfg.Fault(rn.lease); m != "" {
			msg = m
		}
	}
	req := &api.WorkflowEndRequest{Workflow: rn.key.workflow, LeaseFence: rn.key.fence,
		Completed: completed, Failed: failed, Error: msg}
	call, what := r.cfg.Client.CompleteWorkflow, "completed"
	if msg != "" {
		call, what = r.cfg.Client.FailWorkflow, "failed"
	}
	log := r.log.With("worker", rn.sess.id, "workflow", rn.key.workflow, "lease_fence", rn.key.fence)
	var b backoff
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(rn.ctx, reportTimeout)
		res, _, err := call(ctx, rn.sess.id, req, api.WriteOptions{})
		cancel()
		if rn.ctx.Err() != nil {
			return
		}
		v, why := judge(res, err, rn.key.workflow)
		switch v {
		case reportAccepted:
			rn.outcome = what
			r.end(rn, "")
			log.Info("workflow "+what, "completed", completed, "failed", failed, "outcome", why)
			return
		case reportMovedOn:
			r.end(rn, "lease moved on: "+why)
			return
		case reportLost:
			r.lose(rn.sess)
			return
		case reportRefused:
			r.end(rn, "")
			log.Error("end report refused; the workflow stops here", "why", why)
			return
		}
		if attempt == maxEndAttempts {
			r.end(rn, "")
			log.Error("end report undelivered; giving the workflow up to the manager", "attempts", attempt, "err", why)
			return
		}
		log.Warn("end report failed, retrying", "attempt", attempt, "err", why)
		if !b.wait(rn.ctx) {
			return
		}
	}
}
