// Package replica checks that a node's ledger is the one its Raft group
// holds (DESIGN §11, issue 13 "Replica ↔ replica"). Every replica keeps a
// Merkle tree of its ledger (antientropy/ledgertree) and records its root
// at each checkpoint mark the group's leader proposes (group.EntryMark):
// every replica meets a mark at the same index with, if nothing went
// wrong, the same state. A Checker asks the leader for a mark, waits
// until its own ledger applied it, fetches the checkpoints of the other
// members and judges (Judge, pure): a replica whose root differs from the
// one the others agree on has a damaged store or applied
// non-deterministically. It then stops being ready (/readyz), which also
// stops it serving local reads, and says so in its log and metrics. A
// node that starts is not ready until its first verdict, so a store
// damaged while it was down is never served.
//
// The internal endpoint (CheckpointsPath) carries the cluster token like
// every node-to-node call. Run is the only goroutine; Verdict may be
// called from any.
package replica
