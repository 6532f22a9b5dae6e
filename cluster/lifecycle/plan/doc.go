// Package plan holds the pure planners of the job lifecycle (cluster's
// DESIGN.md, "Job lifecycle"; DESIGN §4): replicated state in, events out.
// The reconcilers of package lifecycle run them on group leaders and
// propose what they return.
//
//   - [Global], the global planner: for one job, the regions its
//     JobCreated or its stop decision must be (re)sent to, and the
//     JobCompleted or JobTimedOut the global leader takes itself.
//   - [RegionJob], the regional job planner: for one job in one region,
//     workflows dispatched, leased, rescheduled or cancelled, the job
//     accepted, progress reported, the region done or failed, a stop
//     decision acknowledged.
//   - [Workers], the worker planner: WorkerLeft for the region's workers
//     that went silent.
//
// A planned event has a deterministic id derived from the step it takes
// and what identifies it (the job, the region, the workflow and its lease
// fence, ...): two leaders, a retry or a replay that plan the same step
// produce the same id, and the ledger's idempotent apply keeps exactly
// one of them.
//
// # Invariants
//
// The planners are pure: no goroutines, no I/O, no clock reads (the wall
// time comes in as an argument), no randomness, and maps are walked in key
// order. The same input gives the same events, in the same order, with the
// same ids; that is what makes a leader change, a crash or a replay
// harmless ("a leader change, a crash or a duplicated message changes
// nothing but timing"). The package imports only the standard library and
// fsm.
//
// # Concurrency
//
// The functions keep no state and may be called from any goroutine. A
// [RegionPass] carries the worker loads of one pass and is updated as
// RegionJob leases: it belongs to the one goroutine running that pass.
//
// # What it does not do
//
// It never proposes, never reads the ledger and never talks to workers or
// other nodes: the reconcilers read the state, stamp the planned events'
// origin and HLC, propose them, deliver to regions and forward to the
// global group.
package plan
