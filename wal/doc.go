// Package wal is the NodeWAL (DESIGN §5): the local, fsynced log every gate
// and manager writes an operation to before anything else. A record
// acknowledged by Append is LOCAL-durable: it was fdatasync'ed here.
//
// What it stores: records (type, HLC, state at write, payload) numbered by
// LSN, in preallocated segment files named by their first LSN, plus a
// checkpoint file holding the REGIONAL, GLOBAL, APPLIED and COMPACTED
// watermarks. The on-disk format is specified in FORMAT.md and pinned by a
// golden test.
//
// Invariants:
//   - LSNs start at 1, rise by one per record and are never reused, across
//     restarts and compaction.
//   - Append returns an LSN only after the record and every record before it
//     were written and fdatasync'ed; the log on disk is always a gap-free
//     prefix of what was appended.
//   - One goroutine, the writer, writes the active segment. Each batch is
//     one write and one fdatasync; a batch closes as soon as the previous
//     fsync has returned and work is waiting, or at MaxBatchEntries,
//     MaxBatchBytes or MaxBatchDelay (age), whichever comes first.
//   - Segments are preallocated (fallocate) before use; the next one is
//     prepared in the background, so a roll only renames it and fsyncs the
//     directory.
//   - The append queue is bounded (QueueEntries, QueueBytes): when full,
//     appends fail at once with ErrBackpressure; they never block on it.
//   - An I/O error on the write path (write, fdatasync, segment roll,
//     checkpoint) stops the log for good: every waiting and later append
//     fails with ErrStopped. fsync is never retried: after a failed fsync
//     the kernel may have dropped the dirty pages, so a retry could report
//     success for data that is gone.
//   - Recovery (Open) truncates the log at a torn or corrupt record in the
//     last segment, zeroes and fsyncs what follows, before any append; a bad
//     record in an earlier segment is an error naming segment and offset.
//   - Watermarks only move forward and never pass the last durable LSN; the
//     checkpoint is replaced atomically (write, fsync, rename, fsync dir).
//   - Compact removes whole segments, oldest first, only when all their
//     records are at or below the lowest watermark in Config.Retain.
//
// Concurrency: every method of WAL is safe for concurrent use. An Iterator
// is used by one goroutine. Open takes an flock on the directory, so one
// process at a time owns it.
//
// What it does not do: it does not interpret payloads, replicate, or decide
// what a watermark means for the pipeline; it never rewrites a record (state
// progress lives in watermarks); it does not retry failed I/O.
//
// All file I/O goes through the FS interface so that tests can inject torn
// writes, short writes, bit flips and fsync failures.
package wal
