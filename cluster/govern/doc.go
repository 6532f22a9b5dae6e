// Package govern holds the pure rules of a region's fleet governance
// (issue 18 §2–§3): per-(tenant, job type) circuit breakers, exponential
// backoff with jitter, and which workflow failures are retried.
//
// Everything here is a deterministic function of its arguments: no
// goroutines, no I/O, no clock reads and no global random source. Time
// arrives as Unix milliseconds and randomness as a seed, so the regional
// leader's reconciler (cluster/lifecycle) can plan the same events from
// the same state on any node, and the tests drive a fake clock through
// table cases.
//
// A breaker has two halves. Its state (closed, open, half-open, since
// when, forced by an operator or not) is replicated: the reconciler
// proposes every transition to the regional ledger, so a leader change
// keeps it. Its sliding window of recent outcomes and its half-open probe
// tally are the leader's memory only: a new leader starts them empty,
// which at worst delays the next trip by MinSamples outcomes, and never
// reopens a closed breaker or closes an open one on its own.
//
// Maintenance mode (maintenance.go) is a region's own record or the
// cluster's copy in the region, whichever is on (EffectiveMaintenance).
//
// The package does not decide what a retry or an open breaker does to
// dispatch; cluster/lifecycle/plan does, from the decisions made here.
package govern
