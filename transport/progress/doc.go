// Package progress is the data plane's progress protocol (DESIGN §10):
// workers fire binary frames of cumulative counters at their region's
// managers over UDP (or a length-prefixed TCP stream where UDP is blocked),
// and a manager folds them into in-memory aggregates.
//
// Why cumulative: every update carries the totals a worker has counted for a
// (workflow, lease) since the lease began, never a delta. Folding is a max per
// counter (and per histogram bucket), which is commutative, associative and
// idempotent, so a lost, repeated or reordered frame is harmless: the
// aggregate equals the last frame's counters as soon as the last frame
// arrives, whatever came before it. This is what lets the path be
// fire-and-forget and still exact.
//
// The package is split by concern:
//
//   - frame.go, encoder.go, decoder.go, limits.go: the wire format
//     (FORMAT.md), pure. Encoder packs updates into MAC'd frames of at most
//     MaxFrameBytes; Decoder checks the header, looks up the worker's key,
//     verifies the MAC and only then reads the updates, checking every
//     length and count against a named limit before allocating.
//   - fold.go: Aggregates, pure: max-merge per (workflow, worker) with a
//     "changed since the last Drain" set. No goroutines, no clock, no I/O.
//   - backpressure.go: the AD-37 levels as a pure function of queue fill.
//   - receiver.go, receiver_udp.go, receiver_tcp.go, receiver_fold.go,
//     mmsg_linux.go: the I/O edge. Readers (UDP: up to ReadBatch datagrams
//     per recvmmsg; TCP: one goroutine per connection) put raw frames on
//     one bounded queue, dropping when it is full; one fold goroutine
//     decodes, verifies, checks leases and folds.
//   - sender.go: the worker side: latest counters per leased workflow,
//     packed into frames and written to UDP or TCP.
//
// Invariants:
//
//   - A frame is folded only if its MAC verifies under the key Keys returns
//     for its (worker, key id); an update is folded only if Leases says its
//     worker holds its workflow at its fence. Nothing else changes the
//     aggregates, so nobody can forge progress for a lease they do not hold.
//   - An aggregate never decreases within one lease (fence); a higher fence
//     starts a new cumulative series and replaces the counters.
//   - Every queue, buffer, frame, string and count has a named bound checked
//     before allocating (limits.go).
//
// Concurrency: Encoder, Decoder and Aggregates are not safe for concurrent
// use. A Receiver owns its Aggregates on a single fold goroutine; its
// methods are safe for concurrent use. Keys and Leases are called from the
// fold goroutine only and must not call back into the Receiver. A Sender is
// safe for concurrent use.
//
// Not here: the NodeWAL, the regional ledger, heartbeats and registration.
// The manager drains the aggregates, writes them at LOCAL and commits them;
// it implements Keys and Leases and returns Backpressure on the heartbeat.
package progress
