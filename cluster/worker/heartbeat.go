package worker

import (
	"context"
	"math/bits"
	"time"

	"github.com/strata-ledger/strata/transport/api"
)

// beat is the outcome of one heartbeat call.
type beat struct {
	sent    time.Time
	running []api.RunningWorkflow // what the call reported
	resp    *api.HeartbeatResponse
	err     error
}

// heartbeatLoop heartbeats every interval until the session ends. Calls
// run one at a time in their own goroutine, so a slow call never delays
// the fence: a timer armed for the moment the fence is due wakes the loop
// whatever the network does.
func (r *Runner) heartbeatLoop(s *session) {
	results := make(chan beat, 1)
	inflight := false
	send := func() {
		inflight = true
		b := beat{running: r.Running(), sent: r.now()}
		go func() {
			ctx, cancel := context.WithTimeout(s.ctx, r.ackWindow())
			defer cancel()
			b.resp, _, b.err = r.cfg.Client.Heartbeat(ctx, s.id, &api.HeartbeatRequest{Running: b.running})
			results <- b
		}()
	}
	tick := time.NewTicker(s.interval)
	defer tick.Stop()
	fence := time.NewTimer(r.fenceIn())
	defer fence.Stop()
	failures := 0
	send()
	for {
		select {
		case <-s.ctx.Done():
			if inflight {
				<-results // the call ends with the session's context
			}
			return
		case b := <-results:
			inflight = false
			failures = r.onBeat(s, b, failures)
		case <-tick.C:
			if !inflight {
				send()
			}
		case <-fence.C:
		}
		fence.Reset(r.checkFence())
	}
}

// onBeat applies a heartbeat's answer and returns the count of
// consecutive failures.
func (r *Runner) onBeat(s *session, b beat, failures int) int {
	if b.err != nil {
		if s.ctx.Err() != nil {
			return failures
		}
		if classify(b.err) == errUnknownWorker {
			r.lose(s)
			return failures
		}
		failures++
		if bits.OnesCount(uint(failures)) == 1 { // 1, 2, 4, 8, ...: a log, not a flood
			r.log.Warn("heartbeat failed", "worker", s.id, "consecutive", failures, "err", b.err)
		}
		return failures
	}
	if failures > 0 {
		r.log.Info("heartbeat succeeded again", "worker", s.id, "after_failures", failures)
	}
	r.judgeDataPlane(s, b.resp)
	r.mu.Lock()
	defer r.mu.Unlock()
	if b.sent.After(r.lastOK) {
		r.lastOK = b.sent
	}
	if w := time.Duration(b.resp.AckWindow); w > 0 {
		r.ack = w
	}
	if p := b.resp.Backpressure; p != r.pressure {
		if r.pressure != "" || p != api.BackpressureNone { // not the first NONE
			r.log.Info("backpressure", "worker", s.id, "level", p)
		}
		r.pressure = p
	}
	// Stop names workflows; stop exactly the leases this heartbeat
	// reported, not one leased anew since under a higher fence.
	for _, name := range b.resp.Stop {
		for _, rw := range b.running {
			if rw.Workflow != name {
				continue
			}
			if rn := r.runs[runKey{rw.Workflow, rw.LeaseFence}]; rn != nil {
				r.endLocked(rn, "the manager said stop")
			}
		}
	}
	r.beats++
	return 0
}

// checkFence stops every workflow when no heartbeat has succeeded for
// fenceFraction of the ack window, counted from the send time of the
// last one that did, and resumes the leases once one succeeds again. It
// returns how long until the fence is next due.
func (r *Runner) checkFence() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	limit := time.Duration(fenceFraction * float64(r.ack))
	silent := r.now().Sub(r.lastOK)
	if silent >= limit {
		if !r.fenced {
			r.fenced = true
			r.log.Warn("no heartbeat succeeded within the fence: stopping every workflow, the manager may give them to others",
				"worker", r.id, "silent", silent.String(), "fence", limit.String(), "workflows", len(r.runs))
			for _, rn := range r.runs {
				rn.stop()
			}
		}
		return limit // nothing is due until a heartbeat succeeds
	}
	if r.fenced {
		r.fenced = false
		r.log.Info("heartbeats are back: resuming the leases the manager still holds for this worker", "worker", r.id)
		r.applyLocked(false)
	}
	return limit - silent
}

// fenceIn is how long until the fence is due.
func (r *Runner) fenceIn() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(time.Duration(fenceFraction*float64(r.ack))-r.now().Sub(r.lastOK), 0)
}

func (r *Runner) ackWindow() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ack
}
