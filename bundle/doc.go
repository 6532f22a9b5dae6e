// Package bundle writes, reads and verifies a tenant's audit chain as an
// offline file (DESIGN §11): every stored event with its sequence number,
// previous link, link, body hash and body, then a manifest (bundle id,
// tenant, creation time and node, count, first and last HLC, chain head,
// SHA-256 of the entries, format version) and a seal: a DSSE-style
// envelope over the manifest digest, signed with ed25519 or not signed at
// all. FORMAT.md is the byte-level contract; a golden test pins it.
//
// What it offers:
//   - Writer: takes fsm.StoredEvents one at a time, in chain (Seq) order,
//     and streams entries, then the manifest and the seal. It checks every
//     event's sequence number, body hash and link before writing it, or,
//     in Rechain mode (merge), assigns them.
//   - Verify: reads a bundle from an io.Reader in one pass and names the
//     first broken entry (index, seq, event id) or manifest field.
//   - Merge: many bundles of one tenant into one, by HLC total order,
//     duplicates dropped and counted, a body conflict refused; the output
//     bytes depend only on the set of inputs.
//   - WriteNDJSON / VerifyNDJSON: the same chain as JSON lines sorted by
//     HLC total order, closed by a {"manifest": ...} line.
//   - Keys: GenerateKey, key files (PEM, or raw base64), Sign/Open of the
//     envelope; Resign: a verified bundle written again signed by another
//     key (strata bundle export --sign).
//   - Checkpoints and proofs: MerkleRoot, InclusionPath, a self-sufficient
//     Proof of one event (its content, previous link, Merkle path and the
//     signed checkpoint), VerifyProof / VerifyProofSigned, DecodeProof.
//
// Invariants:
//   - Memory: Writer and Verify hold one entry and one checkpoint batch's
//     links (32 KB) at a time, whatever the bundle's length. Merge and
//     WriteNDJSON sort, in memory up to a run and past it in sorted runs
//     in files the caller provides (MergeConfig.NewRunFile,
//     NDJSONConfig.NewRunFile), k-way merged (extmerge.go). Merge keeps a
//     fixed-size index record per entry (mergeRecordBytes) and re-reads
//     each entry from its input by offset, so its memory stays at
//     RunEntries records; WriteNDJSON keeps the encoded lines, so its
//     memory stays at RunBytes (16 MiB) of lines. VerifyNDJSON keeps 72
//     bytes per line, at most MaxSortEntries lines.
//   - Determinism: no clock reads and no randomness here. Creation time
//     and node are the caller's; a merged bundle's id and time derive from
//     its inputs, and ed25519 signatures are deterministic, so merging the
//     same set of bundles gives the same bytes.
//   - A bundle holds a contiguous piece of a chain: from genesis (the
//     first entry's previous link "genesis", 32 zero bytes on disk, seq
//     1), or, in format version 2, from any point (an HLC-range export:
//     the first previous link is taken as given and named in the
//     manifest's start). Every batch of CheckpointEvents entries wholly
//     inside it is followed by its checkpoint.
//
// Speed (2 shared cores, 50,000 events of ~200-byte bodies; format 1
// figures, before checkpoints, in parentheses): Write ~744k events/s
// (~860k), Verify ~420k events/s signed (~500k), Merge ~196k input
// events/s in memory and externally alike (~216k); a 1M-event export
// piped into Verify ran at ~500k events/s with 0.4 MiB of heap growth
// (format 1, TestStream_WriterToVerifyHoldsBoundedMemory). WriteNDJSON
// of 1M JobCreated events (630 MB of NDJSON, one event in ten late) ran
// at ~229k events per CPU-second with +19 MiB of live heap on a loaded
// machine, 2.4 times the writer before it (48 MiB of index), which
// BenchmarkNDJSON runs side by side (TestNDJSON_HoldsBoundedMemory with
// STRATA_NDJSON_EVENTS=1000000). The export through the API and the
// external merge's memory: BENCHMARKS.md, "Bundles".
//
// Concurrency: a Writer is used by one goroutine; the functions keep no
// shared state and may run concurrently on different inputs.
//
// It does not talk to a cluster, open files by name or read the clock:
// the CLI (cmd/strata bundle) opens files, and the API's export and import
// (GET /v1/export, POST /v1/import, cluster/httpapi) stream a ledger's
// ChainEvents into a Writer and a verified bundle into the ledger's apply
// path.
package bundle
