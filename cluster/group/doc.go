// Package group is one node's member of a Raft group (DESIGN §7): it opens
// and bootstraps hashicorp/raft over raft-boltdb (log and stable store) and
// a file snapshot store, applies entries to the ledger (FSM, the entry
// envelope of FORMAT.md), proposes batches (Proposer: many client batches
// per entry, a bounded queue, a bounded number of entries in flight),
// tracks the applied index (AppliedIndex) and answers what the rest of the
// node asks of consensus in its own types: leader, status, configuration
// changes, leadership transfer, and the read index of strong reads
// (ConfirmLeadership).
//
// It is the only package of the node, with the wiring, that imports
// hashicorp/raft (cluster's imports test checks it): the pipeline, the
// API, the peers and the lifecycle see the group through narrow interfaces
// and the types Leader, Proposal, Server and Status.
//
// Invariants: every replica applies the same entries in the same order to
// the same ledger and reaches the same state (the FSM rejects a malformed
// entry or batch the same way on every replica, and stops applying after a
// store failure rather than skip an entry); an entry is at most
// MaxEntryBytes, MaxEntryBatches and MaxEntryEvents; a node with Raft state
// on disk never bootstraps.
//
// Concurrency: Group, Proposer and AppliedIndex are safe for concurrent
// use; hashicorp/raft calls the FSM from one goroutine.
//
// What it does not do: it does not decide who may propose what (the API
// and the lifecycle do), retry a failed proposal (the pipeline does), or
// change membership on its own (only the operator API and the first
// start's bootstrap do; gossip never does).
package group
