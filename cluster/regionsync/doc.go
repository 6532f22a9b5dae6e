// Package regionsync is anti-entropy between a region's ledger and the
// global ledger (DESIGN §11, issue 13 "Regional ↔ global"). Both hold, per
// job assigned to the region, what the region reported of it (accepted,
// progress, done, cancellation ack: fsm.RegionDigest), folded the same way
// in any order; the forwarder carries the region's events to the global
// ledger, and a lost or dropped batch leaves the two views different.
//
// The region's leader runs a round every interval: it compares its view's
// Merkle tree with a gate's (the descend protocol of package antientropy,
// over CompareAnswerPath), and for every job that differs and that it
// holds it sends the job's forwardable events again through the normal
// cross-group delivery: the global ledger applies them idempotently by
// event id and folds them by its own rules. Nothing is patched around
// the ledger. For a job only the global ledger holds, it asks the gate
// to deliver it again, as the gates' reconciler delivers jobs (RedeliverPath:
// the JobCreated and the stop decision in force). A second comparison
// then says whether the views are equal.
//
// Syncer runs on a manager and acts only while its node leads the
// region's group; Answerer serves the gates' side. Bytes exchanged grow
// with the differences times the tree's depth, never with the ledger.
package regionsync
