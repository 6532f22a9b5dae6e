// Package quota decides tenant quotas and admission (issue 18 §1): what a
// quota policy is, how a fleet's capacity is shared among tenants
// (Allocate: fixed, equal share, proportional by weight, reserved minimum
// plus fair share), how many jobs a tenant has active or queued (Usage),
// whether one more may become active (Check), which queued jobs to admit
// when capacity frees (Admissions), and the submit rate of max_per_hour
// (MeterHook, RateCheck).
//
// Policies are governance records of the global ledger (fsm.Policy, kinds
// Kind and FleetKind), changed through Raft by operators; this package
// only reads them through an fsm.ReadTx. Every function is pure: a
// function of the state it reads and the arguments it gets (no clock, no
// randomness, no I/O), so the ledger's admission hook (fsm.Config.Admission,
// built by Hook) decides alike on every replica, and the gate's 429
// before proposing decides from the same rules.
//
// Invariants:
//   - A job is active while it is PENDING and not queued, RUNNING or
//     CANCELLING; a queued job (held, not admitted) is counted apart.
//   - The effective max_active of a tenant is the least of its policy's
//     max_active and its fleet share (when a fleet policy exists); 0
//     means no limit.
//   - Queued jobs are admitted best first: higher priority, then the
//     older job (smaller creation key), then the job id.
//
// Submit rate (max_per_hour, burst), exact for the cluster (rate.go): a
// token bucket per policy with a max_per_hour, whose state is a rate
// meter of the global ledger (fsm.Meter), not a gate's memory, so n gates
// give a tenant its rate once, not n times, and no gate restart or
// leader change refills it.
//
//   - Where: MeterHook is the ledger's fsm.Config.Meter. At the apply of
//     every new JobCreated of a tenant (and job type) with a max_per_hour,
//     it advances the policy's meter to the JobCreated's HLC wall time
//     (never back: an event stamped before the meter's time earns
//     nothing) and takes one token. The global ledger is one Raft log, so
//     every replica takes the same tokens in the same order; nothing
//     depends on which gate proposed, or when it applied.
//   - A token not there is reserved ahead, never refused: the create was
//     acknowledged (maybe at LOCAL, before the ledger saw it) and must
//     not be lost. The meter goes negative and the job is held (queued)
//     until its token is due; the next such job waits one token's time
//     more. The global reconciler admits held jobs (JobAdmitted) when
//     they are due, under max_active (Hook), best first (Admissions).
//     The token was taken at creation, so an admission takes none, and a
//     queued job cancelled before its admission keeps its token spent:
//     max_per_hour counts jobs created, as the gate counted submits.
//   - Exactness: in any interval of t ms, at most burst + max_per_hour ×
//     t / 3,600,000 jobs of a key become admissible at once or are due
//     (a token bucket: burst, by default max_per_hour, then the rate).
//     Units are integers (UnitsPerToken per token, max_per_hour units per
//     ms): no float, no rounding drift, the same on every CPU.
//   - Idempotency: a JobCreated applied again (a NodeWAL replay, a
//     client's repeat, another gate's re-proposal) is a duplicate by
//     event id before the hook runs: it takes no second token.
//   - A policy change keeps the meter (its level is cut to a lower
//     burst, refilled at the new rate); deleting the policy deletes it.
//     Jobs imported into the global ledger take tokens like submits.
//   - The gate's fast path (RateCheck, cluster/httpapi) reads the same
//     replicated meters before proposing: 429 with Retry-After (or a
//     held submit, eligible when its token is due) when the tenant has
//     no token now. It can only be more lenient than the ledger (it may
//     not have applied the latest tokens taken), never stricter, and the
//     ledger holds what it let through over the rate.
//
// What it does not do: it proposes nothing (the global reconciler
// proposes the JobAdmitted events Admissions plans), and writes nothing
// itself: the ledger stores the meters MeterHook returns.
package quota
