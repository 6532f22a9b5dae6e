// Package fsm is Strata's ledger: the event model and its encodings, the
// rules that fold events into job, workflow and worker state, the
// per-tenant audit chain, state digests, snapshots, and the Store
// interface the state is kept behind. One Ledger is the replicated state
// machine of one Raft group (the global ledger of the gates, or a regional
// ledger of a region's managers); package cluster wraps it as a raft.FSM.
//
// What it decides (fsm/DESIGN.md has the full rules):
//   - Which events are stored. An event is stored at most once per
//     (tenant, id): ids are scoped by tenant, and within a tenant the same
//     id with other content is refused. Malformed and over-limit
//     events, events of jobs without a stored JobCreated, and illegal
//     workflow events are refused and leave no trace.
//   - A job's state, as a pure function of the set of its stored events:
//     every fold rule is commutative (ORs, maxima, the best decisive
//     event under a total rank), so the order events arrive in does not
//     matter and a late event is folded in O(1) like any other, without
//     re-reading the job's history. Conflicting decisive events resolve
//     as DESIGN §3 says: cancellation wins, then the higher fence, then
//     the lower HLC, then the lower node.
//   - Workflows and workers, in arrival (Raft) order; the regional
//     forwarder's position per tenant (ForwardMark), which only rises.
//   - Each tenant's audit chain: every stored event is linked to the one
//     stored before it in the same tenant.
//
// Invariants:
//   - Apply is deterministic: replicas applying the same entries in the
//     same order hold byte-identical state (same digests, same snapshots).
//   - Apply is atomic per batch (one Store transaction) and idempotent per
//     Raft index and per (tenant, event id).
//   - No rejection names another tenant or tells that its job or
//     workflow exists: an event naming one reads as naming an unknown one.
//   - Every value a Store hands out is immutable; the Ledger copies before
//     it changes a state.
//
// Concurrency: Apply, ApplyEncoded and Restore are serialized by the
// Ledger; reads (Snapshot included) may run concurrently with them.
//
// What it does not do: no goroutines, no I/O but through the Store and the
// io.Writer/io.Reader of Snapshot and Restore, no clock reads, no
// randomness, no logging. It does not import hashicorp/raft, does not
// check who may do what (the HTTP layer does), and does not validate a
// request against the current state before proposing it (the HTTP layer
// does, answering 409 without reaching Raft).
package fsm
