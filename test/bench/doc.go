// Package bench drives `strata bench`: N concurrent clients writing to
// Strata's public HTTP API, or to etcd through its JSON gateway for
// comparison, for a bounded number of requests or a bounded time; it
// measures throughput and latency and formats the result.
//
// # Workloads
//
// Every write is one HTTP request; a client sends its next request when the
// previous one has been answered (a closed loop).
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
// # Bounds
//
// Clients, batch size, payload, duration and response bodies are bounded
// by named constants. Latencies go to a fixed-size log-linear histogram
// per client (Histogram), merged at the end: memory does not grow with
// the number of requests. A request still in flight when the time is up is
// neither counted nor timed.
//
// # Not done
//
// No open-loop (fixed-rate) load, no warm-up phase, no reads. The request
// code here is deliberately its own (a few lines of net/http) rather than
// transport/api's client, so that the hot loop allocates little and the
// numbers do not move with that client's changes.
package bench
