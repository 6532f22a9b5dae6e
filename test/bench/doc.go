// Package bench drives `strata bench`: N concurrent clients writing to
// Strata's public HTTP API, or to etcd through its JSON gateway for
// comparison, for a bounded number of requests or a bounded time; it
// measures throughput and latency and formats the result.
//
// # Workloads
//
// Every write is one HTTP request; by default a client sends its next
// request when the previous one has been answered (a closed loop; see Open
// loop for the other way).
//
//   - strata, global tier, batch 1: POST /v1/jobs, one job submit (a
//     JobCreated in the global ledger) per request. These are real jobs of
//     one short workflow: the cluster goes on to dispatch them to the
//     region, and that background work is part of what is measured.
//   - strata, global tier, batch K > 1: POST /v1/events:batch with K
//     JobCreated events of distinct jobs.
//   - strata, regional tier: POST /v1/events:batch with K
//     WorkflowDispatched events of distinct workflow instances (a workflow
//     needs no job in the regional ledger to be dispatched, so the
//     workload is valid on an empty cluster).
//   - etcd: POST /v3/kv/put through etcd's gRPC JSON gateway, one put of a
//     distinct key per request, key and value base64 as the gateway wants;
//     no etcd Go dependency.
//
// The payload size is what the ledger stores per event: the binary body of
// the event (fsm.AppendBody) is padded to about that many bytes through a
// free-form field (a job's idempotency key, a workflow's name). For etcd it
// is the value's size. Every run draws a random nonce into event ids, job
// ids and keys, so runs against the same cluster never collide.
//
// # Open loop
//
// With Config.Rate, requests are due at fixed intervals (1/Rate) instead,
// whatever the answers so far, and are handed to a pool of Config.Clients
// workers. A request's latency counts from the time it was due, not from
// when a worker sent it: when the system falls behind, the wait shows in
// the latency instead of slowing the load down (no coordinated omission).
// A request due while every worker is busy is "late": it waits, and the
// ones behind it wait too, until a worker is free; the run reports how many
// were late, how many were due but never sent when it ended, and the
// longest lag from a request's due time to a worker taking it (busy
// workers, or a busy machine that runs the pacer or a worker late). One
// goroutine hands out the slots and holds at most one, so memory does not
// grow with the backlog; it wakes on a timer, and its own wake-up delay
// (tens of microseconds) counts in the latency.
//
// # Bounds
//
// Clients, rate, batch size, payload, duration and response bodies are
// bounded by named constants. Latencies go to a fixed-size log-linear histogram
// per client (Histogram), merged at the end: memory does not grow with
// the number of requests. A request still in flight when the time is up is
// neither counted nor timed.
//
// # Not done
//
// No warm-up phase, no reads, no rate that varies over a run. The request
// code here is deliberately its own (a few lines of net/http) rather than
// transport/api's client, so that the hot loop allocates little and the
// numbers do not move with that client's changes.
package bench
