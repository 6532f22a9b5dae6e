// Package commit is a node's commit pipeline (DESIGN §4): every operation
// is appended to the node's fsynced NodeWAL first (LOCAL), then climbs to
// the node's tier — proposed to its Raft group on the leader, forwarded to
// the leader from a follower — and its caller is answered at the
// durability level it asked for (NONE, LOCAL, REGIONAL, GLOBAL). It also
// owns the node's one event Stamper, which gives every event the node
// receives, originates or plans its origin (id, HLC, node, region).
//
// Invariants: a record acknowledged at LOCAL or above is in the NodeWAL
// and keeps climbing, with backoff, until it reaches its tier, the tier
// refuses it for good (invalid batch: then its Refusal is fsynced in the
// node's refusal file before the watermark passes it, and WriteStatus
// answers it; never dropped silently), or the pipeline closes; after a
// crash, Recover re-proposes every record above the tier watermark (apply
// is idempotent by event id); the tier watermark is the highest LSN below
// which every record reached the tier or was refused, and is
// checkpointed at most every WatermarkInterval; every queue is bounded and
// a full one answers ErrBackpressure at once; at most MaxAttemptBytes of
// batches have a propose or forward attempt in flight, the others waiting
// (lowest LSN first) without a timeout, so a backlog drains instead of
// timing out in the leader's queue; an fsync error stops the node
// (OnFatal), it is never retried.
//
// Concurrency: Pipeline and Stamper are safe for concurrent use; the
// pipeline is its NodeWAL's only writer.
//
// What it does not do: it does not talk to Raft or the network itself (it
// is handed a Committer and a Forwarder), decide whether an event is
// allowed (the API does), or read the ledger.
package commit
