// Package chaos drives nemeses against a running `strata dev` cluster
// while a workload submits, cancels and reads jobs, records the history of
// that workload, and checks it (`strata chaos`, issue 16).
//
// It is split like the rest of the node, decide then do:
//
//   - Schedule (schedule.go) is a pure function of a seed: which fault,
//     on which node, when, for how long. The seed is printed, so a run's
//     faults can be replayed; the workload's interleaving cannot be, as it
//     depends on the cluster's timing.
//   - History (history.go) records every operation with its invocation
//     and return times (monotonic, since the run's start) and outcome: ok,
//     failed (the cluster refused it; it changed nothing), or unknown (a
//     write that timed out or lost its connection: it may or may not have
//     taken effect).
//   - Check (check.go, model.go) is pure: the end checks (every
//     acknowledged job exists in the global ledger and reached a terminal
//     state; one idempotency key is one job) and a linearizability check
//     of the STRONG reads and GLOBAL writes by anishathalye/porcupine,
//     partitioned by job, each partition bounded in time.
//   - Run (run.go: the nemesis, inject and heal; workload.go) is the I/O
//     edge: it injects the faults through the dev launcher's control
//     socket (SIGKILL and restart, SIGSTOP and SIGCONT) and the nodes'
//     fault endpoints (partitions, clock skew), runs the workload through
//     the HTTP API, heals everything, waits for the jobs to end, and
//     hands the history to Check.
//
// # What the linearizability model covers
//
// Only what the client controls and observes, per job: a job exists from
// its acknowledged GLOBAL submit on; an acknowledged cancel (outcome
// applied) moves it to CANCELLING or beyond; a STRONG read must see the
// job once its submit was acknowledged, must not see a job no submit of
// which was invoked (reads of ids no one submitted), must see an
// acknowledged cancel, and must never see a job's status go back
// (PENDING < RUNNING < CANCELLING < terminal; a terminal status never
// changes). Status changes the workers cause are not in the history: the
// model lets any read move the status forward. A write whose outcome is
// unknown is a pending operation (porcupine's infinite return): it may
// take effect at any point after its invocation, or never.
//
// # Not done
//
// No fault overlaps another (one at a time, healed before the next), so a
// run never loses a quorum on purpose; workers are not a nemesis target;
// progress counters are not checked.
package chaos
