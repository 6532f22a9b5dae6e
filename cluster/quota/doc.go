// Package quota decides tenant quotas and admission (issue 18 §1): what a
// quota policy is, how a fleet's capacity is shared among tenants
// (Allocate: fixed, equal share, proportional by weight, reserved minimum
// plus fair share), how many jobs a tenant has active or queued (Usage),
// whether one more may become active (Check), and which queued jobs to
// admit when capacity frees (Admissions).
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
// What it does not do: it keeps no state (the per-gate submit rate of
// max_per_hour and burst is cluster/ratelimit's bucket, kept by the
// HTTP layer) and proposes nothing (the global reconciler proposes the
// JobAdmitted events Admissions plans).
package quota
