// Package worker is Strata's reference worker (DESIGN §1, §9, §10): it
// registers with the managers of its region, heartbeats, long-polls for
// its leases and runs each leased workflow as a synthetic load drawn from
// the workflow's spec (duration, rate of simulated requests, failure
// ratio), reporting cumulative progress and the workflow's end.
//
// Progress goes over the managers' data plane (transport/progress: UDP
// frames, or TCP with Config.Progress) when the registration answer offers
// it, and over HTTP otherwise or once the data plane keeps failing for
// that registration; the end of a workflow always goes over HTTP. Frames
// get no answer, so on the data plane a lease that moved on is learned
// from the heartbeat's Stop list, the heartbeat's backpressure level
// paces the frames (THROTTLE, BATCH: less often; REJECT: paused), and
// the heartbeat's recorded counters tell whether frames arrive at all:
// when they stay behind and still for Config.StallWindow (10 s) the
// session moves from UDP to TCP, and from TCP to HTTP (stall.go).
//
// The load is a pure function of the spec and the time run (Progress), so
// counters are exact and repeatable: a workflow of rate 200 and duration
// 30 s ends with 6,000 simulated requests, failure_ratio of them failed,
// however often it was rescheduled. A workflow taken over from another
// worker resumes where the lease's recorded counters left it (ResumeAt)
// instead of starting again.
//
// Safety comes before progress. A worker never keeps running a workflow
// that may already run elsewhere:
//
//   - a heartbeat's Stop list stops the named workflows at once;
//   - a report answered stale_fence, worker_mismatch, unknown_workflow or
//     illegal_transition means the lease moved on: that workflow stops;
//   - when no heartbeat has succeeded for 0.8 × the ack window, counted
//     from the send time of the last one that did, the worker stops every
//     workflow (self-fencing), since the manager may already have given
//     them to others; once heartbeats succeed again it runs what the
//     manager still leases to it under the same fences;
//   - a 404 unknown_worker (the region dropped the worker) stops every
//     workflow and registers again.
//
// Stopping is prompt: each workflow runs in its own goroutine under its
// own context, and every wait and every call of it ends when that context
// is cancelled. Leases are keyed by workflow and lease fence; a key that
// ended here (completed, failed, stopped by the manager, lease moved on)
// is never started again, even while a lagging lease list still shows it.
//
// Time: Config.Now is read for every elapsed-time and fencing decision;
// tickers and timers run on real time and only wake the runner to look at
// Now, so a test that advances Now sees the effect at the next wake-up.
package worker
