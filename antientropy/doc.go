// Package antientropy finds the jobs on which two ledgers differ, sending
// bytes that grow with the number of differences, not with the ledgers
// (DESIGN §11). It holds a Merkle tree over job ids (Tree), kept current
// as the ledger applies, and the compare/descend protocol as a pure state
// machine (Compare) with a peer-side function (Answer), in the manner of
// etcd-io/raft's Ready: the caller moves Requests and Pages between
// nodes; this package never does. FORMAT.md is the wire contract.
//
// # The tree
//
// A complete binary tree of fixed depth (DefaultDepth 21: 2,097,152 leaf
// buckets, 4.8 jobs per leaf at 10M jobs, 0.5 at 1M). A job lives in the
// bucket given by a hash of its id alone (FNV-1a + fmix64), so job ids,
// which sort by time and share prefixes, spread evenly and never move. A
// job contributes its item hash SHA-256(len(id) ‖ id ‖ digest), digest
// being fsm's JobState.Digest. A node's hash is the sum mod 2^256 of the
// item hashes below it (an incremental multiset hash).
//
// Why sums rather than SHA-256 of the children:
//   - Updates are O(depth) with no hashing above the leaf: Set computes
//     one item hash and adds the difference from the old one into the
//     stored nodes above the bucket (16 256-bit additions, see Memory).
//     Stored nodes are always current, so readers never write (no lazy
//     dirty marks) and Rebuild sums each node once.
//   - A peer sends only the left child of a differing node; the asker
//     derives the right one as parent − left. So each level of a descent
//     costs one 32-byte hash per differing node.
//
// Why fan-out 2: bytes. A level of fan-out f costs f−1 hashes per
// differing node and stands for log2(f) binary levels, so it sends
// (f−1)/log2(f) times the bytes of a binary descent: 3.75× for f = 16,
// 31.9× for 256. Fan-out 16 would cut the round trips from 23 to 7 but
// could not find 1,000 differences in about (differences × depth × hash
// size) bytes. The price is depth+2 round trips per comparison (root, 21
// levels, leaves); a comparison runs in the background, where round trips
// matter less than bytes.
//
// Memory: a Tree stores the sums of the top 16 levels (denseLevels) only,
// 2^16 × 32 B = 2 MiB, and the jobs in one chunk per node of level 16:
// a slice of entries (bucket, id, item hash: 56 B, plus the id's bytes)
// sorted by (bucket, id), covering 2^(21−16) = 32 buckets, ~15 jobs at
// 1M, ~150 at 10M. A node below level 16 is summed from the entries of
// its range when asked: a binary search of its chunk and one 256-bit
// addition per job under it (≤ 32 buckets). An empty tree of DefaultDepth
// takes 3.5 MiB (the sums and 2^16 chunk headers of 24 B); each job
// ~92 B (entry, id, the chunks' slack: a full chunk grows by a quarter):
// 91 MiB at 1M jobs, ~0.9 GiB at 10M (BenchmarkTreeMemory). Storing all
// 2^21 sums and 2^21 bucket headers, as this package did first, took
// 112 MiB even when empty and 188 MiB at 1M jobs (80 B per job: no
// bucket in the entry).
//
// Why chunks under the level-16 nodes rather than a map of buckets or one
// sorted slice (estimates, not measured): a map[bucket][]entry costs a
// map slot and a small allocation per non-empty bucket (~50 B more per job
// at 1M jobs, where most buckets hold one job) and up to 32 lookups to
// sum a level-16 node; one slice sorted by (bucket, id) costs 56 B per job
// but a new job moves half of it (28 MB at 1M jobs). A chunk's slice is
// small enough that an insert moves a few hundred bytes to a few KiB, and
// a node's entries are contiguous.
//
// A Set costs ~0.2 µs for one of 500 hot jobs, ~0.65 µs for a random
// one of 1M (one SHA-256 of ~64 bytes, a binary search of its chunk, 16
// additions, cache misses), as when every node was stored, and a tenth
// to a fifth of an eager path of SHA-256s (BenchmarkTreeSet). The hash of a node below level 16 costs
// ~30 ns (a leaf) to ~120 ns (a level-16 node, a whole chunk) at 1M jobs,
// against ~7-15 ns when every node was stored (BenchmarkTreeHash); a
// comparison pays it twice per differing node below level 16 (the asker
// derives its right child as parent − left, like the peer's), so a
// comparison of two trees of 1M jobs takes ~1.3× as long as with every
// node stored for 1 difference, ~1.8× for 1,000 (~4.4 ms), for the same
// bytes and round trips (BenchmarkFindDifferences). fsm's BenchmarkLedgerApply/batch=1000 changes ~106 jobs
// per batch, so keeping the tree current adds ~2% to it. Digesting those jobs
// (JobState.Digest), which the caller must do whatever the tree, costs
// about ten times more (BenchmarkLedgerApplyWithTree).
// Rebuild of 1M jobs takes ~0.5 s on 2 cores (BenchmarkRebuild; it sorts
// each chunk by (bucket, id) and allocates each once); reading and
// digesting them from a store took ~3 s when last measured
// (BenchmarkRebuildFromLedger, not re-run for this layout).
//
// Invariants:
//   - stored node n (levels 0..15) = sum of the item hashes in the
//     buckets below it, after every Set, Delete and Rebuild; the empty
//     tree's root is 0.
//   - a chunk holds exactly the jobs of its buckets, at most one entry
//     per id, sorted by (bucket, id); an empty chunk may be nil.
//   - A Tree built by any sequence of Set/Delete equals, node for node,
//     the Tree Rebuild makes from the resulting ledger.
//
// HAZARD: sums resist accidental divergence (a random set of differences
// sums to zero with probability 2^-256) but not an adversary who chooses
// the differing item hashes (Wagner's generalized birthday attack on
// additive multiset hashes). Replicas are trusted here: a byzantine peer
// can lie outright. Verify the repaired ledgers with fsm's ledger digest.
//
// # The protocol
//
// Compare.Start asks the peer's root. Each Step takes the peer's Page and
// returns the next Request: for every node whose hashes differ, the
// peer's left child (the right one is derived); a differing node the
// peer has nothing under (hash 0) is not descended, since every local job
// under it differs; a differing leaf's items (id, item hash) are asked
// and compared by id. Differences then lists the ids present on one side
// only or with different digests. Equal trees exchange their roots only.
// A Page that does not answer its Request (counts, buckets, cursors, an
// id outside its bucket) ends the comparison with an error.
//
// # Concurrency
//
// A Tree is not safe for concurrent mutation: Set, Delete need exclusive
// access (the apply loop). Root, Hash, Items, Len, Clone and Answer only
// read and may run concurrently with each other, e.g. under an
// RWMutex's read lock while the apply loop waits. A Compare belongs to
// one goroutine and reads its local Tree in Step. Comparisons are exact
// only if neither tree changes during one (replicas at the same applied
// index, or a Clone); otherwise a change may be missed or a settled job
// reported, and the next comparison settles it.
//
// What it does not do: no goroutines, no I/O, no clock, no randomness, no
// logging. It does not fetch or merge events (the caller repairs through
// the ledger's normal idempotent apply), does not know fsm's types (job
// digests arrive as [32]byte), and does not bound the number of
// differences it reports (at most the jobs of both sides).
package antientropy
