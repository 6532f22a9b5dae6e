// Package boltstore is the bbolt fsm.Store: the ledger's state (events,
// job states with their full history, audit chains, workflows, workers,
// forward marks, the applied Raft index) in one bbolt file, with secondary indexes for
// listing a tenant's jobs by status and region, and snapshots as a
// streamed image of the file (fsm.ImageStore). FORMAT.md documents every
// byte; the golden test keeps the two equal.
//
// What it stores, per applied batch, in one bbolt transaction:
//   - each new event's record, appended to its tenant's chain in blocks
//     of consecutive seqs (a batch costs a few puts per tenant), and its
//     tenant and id in the event index (the idempotency check of every
//     event; ids are scoped by tenant);
//   - each touched job's value, written once per batch: its state record
//     and the newest entries of its history (the tail); older entries are
//     sealed into chunks of K, so an event in canonical order costs no
//     write of its own to the job's history;
//   - the index keys of a job whose status changed (tenant; tenant and
//     status; tenant and region; tenant, region and status), old keys
//     removed, so GET /v1/jobs?tenant=&status=&region= reads one range;
//   - the applied Raft index, so a restart never applies an entry twice.
//
// Durability (measured choice, BENCHMARKS.md "Ledger apply"): by default
// Update does not fsync (bbolt NoSync). The store is a cache of the Raft
// log: every entry it holds is in Raft's own fsynced log or in a Raft
// snapshot, and nothing is acknowledged because the store has it. After a
// power loss a NoSync file may be torn (pages written out of order), so
// it must never be served. The rule: Open removes the clean-shutdown
// marker (Path+".state", fsync of the directory) before the first write;
// Close fsyncs the file and then writes the marker (with the file's last
// transaction id). A file found without a valid marker — the process
// died, or the machine did, since it was opened — is deleted and the
// store starts empty at applied index 0 (Rebuilt says why), so Raft
// restores its latest snapshot and replays the log after it. A process
// crash alone would leave a consistent file (the page cache survives),
// but the store cannot tell the two apart, so it discards both.
// FsyncEveryBatch keeps bbolt's fsync per commit instead: the file is
// always consistent, the marker says so ("synced") and Open keeps it.
//
// Group commit (Config.CommitInterval; a cluster node runs with it):
// Updates share one bbolt transaction, committed every CommitInterval,
// every CommitUpdates Updates or CommitBytes bytes, before any read and
// at Close, so pages shared by the events of several Raft entries are
// written once (group.go says why the promises hold).
//
// Hot state (issue 19; hot.go): between transactions Update keeps in
// memory the entries of recently written jobs, the decoded records of
// leased workflows (each a bounded LRU: JobCacheEntries,
// WorkflowCacheEntries) and, per tenant and per client id prefix, an
// upper bound of the stored event ids, so an increasing id is known new
// without a search (idbounds.go). All of it describes the state as
// applied: a transaction's writes are installed after it and forgotten
// after a rollback, and a lost group, a restore and Close clear it.
// Writes still go to the file in the transaction that makes them
// (nothing is written behind); Views read the file only.
//
// Invariants:
//   - One Update is in one bbolt transaction (alone, or with the Updates
//     before it under group commit): all of it or none of it is in the
//     file; the applied index is written in it.
//   - Values handed out are decoded copies, never bbolt's memory.
//   - A job's history entries are sorted, chunks and tail never overlap,
//     and every index key names a job whose state has that tenant, status
//     and region (checked against the model by fsmtest.RunStoreSuite).
//
// Concurrency: Views run in parallel with each other and with the one
// running Update (bbolt's MVCC); Updates are serialized. Under group
// commit a View that finds Updates pending first commits them, waiting
// for the running Update. WriteImage runs
// in a read transaction, so applies go on while a snapshot streams.
// RestoreImage and Replace build a new file beside the store and swap it
// in under an exclusive lock, waiting for running transactions.
//
// HAZARD: bbolt remaps its file when it grows past the memory map, and a
// remap waits until every read transaction ends: a long snapshot then
// stalls applies. Config.InitialMmapBytes (default 1 GiB of address
// space) keeps that rare; size it above the expected file.
//
// What it does not do: it never shrinks the file (bbolt reuses freed
// pages but does not return them), checks no ledger rule (the fsm.Ledger
// decides every value), and keeps no metrics (cluster observes Raft and
// the ledger).
package boltstore
