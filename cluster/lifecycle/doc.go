// Package lifecycle is a node's job-lifecycle runtime (cluster/DESIGN.md,
// "Job lifecycle"): while the node leads its group it runs the
// reconcilers — on a gate the global one (send jobs and stop decisions to
// the regions, complete jobs, time them out), on a manager the regional
// one (accept and dispatch jobs, lease workflows to live workers, take
// leases back from silent ones, report progress, cancel) — and on a
// manager the forwarder, which carries the region's own job events to the
// global group behind a circuit breaker. The pure planners they consult
// live in lifecycle/plan.
//
// What it stores, all in memory and none of it replicated: the dirty set
// (the jobs the applied entries changed since the last pass; the FSM
// feeds it through Entry and Restored, as a group.ApplyObserver), the
// workers' liveness (when each was last heard from), the lease view the
// worker API answers long polls from, and the current term's forwarder.
// What it decides: the events to propose next, read from one view of the
// ledger per pass. Each reconciler decides, then does (etcd-io/raft's
// RawNode and Ready): its step reads one ledger view and returns the work
// to do — events to propose (stamped by the driver, after the newest
// event they react to), deliveries, the lease view, workers to forget —
// and does no I/O; a short driver (drive.go) carries the work out through
// the Submitter and Deliverer, publishes the view, and reports back what
// the step must know (which deliveries ended).
//
// Invariants:
//   - Level-triggered: a pass plans from the ledger's state, not from the
//     events that led there; what a failed pass or proposal left undone
//     is planned again by the next one (a full scan follows a failure).
//   - Planned events carry deterministic decision ids (derived in lifecycle/plan from
//     the step they take and what it names):
//     two leaders, a retry or a replay that plan the same step propose
//     the same id, and the idempotent apply keeps one. A leader change or
//     a crash changes only timing.
//   - A term's state starts and ends empty: a new leader runs a Raft
//     barrier before its first pass (which scans every live job), and
//     when leadership ends the lease view is cleared and the forwarder
//     dropped, so nothing served in one term outlives it.
//   - The dirty set is taken before the pass opens its read view: what it
//     takes is in the state it reads, what lands later is in the next
//     take.
//
// Governance (issue 18, govern.go): the regional reconciler reads the
// region's breaker and maintenance records (cluster/govern's kinds of
// the ledger's governance state) in each pass's view, counts the
// outcomes of typed jobs' workflows into each breaker's window (the
// term's memory), proposes each breaker transition as a PolicySet until
// the ledger holds it (or gives it up after maxTransitionTries passes),
// and hands the planner a plan.Governance: no lease in maintenance or
// for an open breaker's type, at most the probes for a half-open one,
// none before a retry's not-before, and a WorkflowRetryScheduled for a
// FAILED workflow its job's retry policy (or its type's default,
// Config.RetryDefaults) retries. The region's maintenance mode is its
// own record or its copy of the cluster's, whichever is on
// (maintenance.go); a draining mode has the planner take leases back
// too, and the reconciler visits every job with a lease until none is
// left. On a gate the global driver also converges every region to the
// cluster-wide maintenance record (clustermaint.go): it delivers a copy
// until each region holds it, with Config.Regions saying which exist.
//
// Job metrics (issue 18 §4, jobmetrics.go): the term that leads counts
// what its group applies — on a gate each job's end (JobEnded, which the
// node wires as the ledger's fsm.Config.Ended: latency by outcome,
// failures by cause), on a manager each lease taken back (Entry) — so
// a job counts once per cluster, not once per replica.
//
// Concurrency: every exported method of Lifecycle is safe for concurrent
// use (the FSM's Entry, Restored and JobEnded, the HTTP handlers' Touch,
// Forget, LeaseView, ForwarderStatus). Run is called once; the reconcilers'
// indexes are owned by the pass goroutine of the term, which alone calls
// their steps.
//
// What it does not do: no I/O of its own. It reads the ledger through
// Store and Positions, proposes through the Submitter, delivers to other
// groups through the Deliverer, and learns of leadership and applies
// through Leadership and Applied; the node wires them (cluster,
// wire_lifecycle.go). It never talks to workers — they call the worker
// API, which calls Touch and reads the lease view — and it does not
// import the consensus or gossip libraries, net/http, or package cluster.
package lifecycle
