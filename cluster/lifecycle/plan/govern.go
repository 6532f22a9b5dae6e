package plan

import (
	"fmt"
	"strconv"

	"github.com/strata-ledger/strata/fsm"
)

// Governance is what a region's governance (issue 18 §2–§3) asks of one
// pass: the loop fills it from the regional ledger with cluster/govern's
// rules, so the planner needs neither. A nil Governance (or nil func)
// governs nothing: every lease is allowed and no failure is retried.
type Governance struct {
	// Maintenance: the region grants no lease. Running workflows go on
	// (or are taken back from silent workers, and then wait); every read
	// keeps working.
	Maintenance bool
	// Drain (with Maintenance): running workflows are also taken back
	// from live workers, at most MaxDrainPerPass in one pass (drainLease).
	Drain bool
	// drained counts this pass's drains against MaxDrainPerPass; a
	// Governance serves one pass.
	drained int
	// Admit returns how many more workflows of job s may be leased in
	// this pass (-1: no limit; 0: its breaker is open, so they wait
	// DISPATCHED); Leased tells it one was.
	Admit  func(s *fsm.JobState) int
	Leased func(s *fsm.JobState)
	// Retry decides about workflow w of job s, which FAILED: the retry to
	// propose, or nil and why not.
	Retry func(s *fsm.JobState, w *fsm.WorkflowState) (*fsm.WorkflowRetryScheduled, string)
}

// MaxDrainPerPass bounds the leases one pass takes back while a region
// drains: the workers hear of it at their next heartbeat and the lease
// view shrinks in steps, and the pass's proposal stays small however many
// workflows run. The rest go in the next passes (the reconciler visits
// every job with a lease while it drains).
const MaxDrainPerPass = 256

// DrainReason is the reason of a WorkflowRescheduled that drains.
const DrainReason = "drained: the region is in maintenance"

// drainLease takes w, LEASED to holder, a live worker, back while the
// region drains: the ledger's ordinary reschedule (the workflow waits
// DISPATCHED with its recorded progress, its next lease gets a higher
// fence, and the worker is told to stop by its next heartbeat's stop list
// and by the refusal of its reports under the old fence). Its id is the
// one a reschedule of that lease has whatever its reason, so at most one
// takes the lease back. False when the region does not drain or this
// pass drained its MaxDrainPerPass.
func (p *RegionPass) drainLease(s *fsm.JobState, w *fsm.WorkflowState, holder *WorkerSlot) (fsm.Event, bool) {
	g := p.Gov
	if g == nil || !g.Maintenance || !g.Drain || g.drained >= MaxDrainPerPass {
		return fsm.Event{}, false
	}
	g.drained++
	holder.Load--
	return planned(decisionID("reschedule", w.ID, strconv.FormatUint(w.LeaseFence, 10)), fsm.TypeWorkflowRescheduled, s,
		w.LeaseFence, &fsm.WorkflowRescheduled{Workflow: w.ID, FromWorker: w.Worker, Reason: DrainReason}), true
}

// mayLease reports whether w, DISPATCHED, may be leased in pass p.
func (p *RegionPass) mayLease(s *fsm.JobState, w *fsm.WorkflowState) bool {
	if w.NotBeforeMs > p.NowMs {
		return false // still in its retry backoff
	}
	g := p.Gov
	if g == nil {
		return true
	}
	if g.Maintenance {
		return false
	}
	return g.Admit == nil || g.Admit(s) != 0
}

func (p *RegionPass) leased(s *fsm.JobState) {
	if p.Gov != nil && p.Gov.Leased != nil {
		p.Gov.Leased(s)
	}
}

// planRetry returns the retry of FAILED workflow w, or false and why the
// failure stands.
func planRetry(s *fsm.JobState, w *fsm.WorkflowState, p *RegionPass) (fsm.Event, string, bool) {
	if p.Gov == nil || p.Gov.Retry == nil {
		return fsm.Event{}, "", false
	}
	b, why := p.Gov.Retry(s, w)
	if b == nil {
		return fsm.Event{}, why, false
	}
	return planned(decisionID("retry", w.ID, strconv.FormatUint(uint64(b.Attempt), 10)), fsm.TypeWorkflowRetryScheduled,
		s, w.LeaseFence, b), "", true
}

// failureText is the region's failure message for workflow w, which
// failed for good.
func failureText(w *fsm.WorkflowState, why string) string {
	if w.Retries == 0 && why == "" {
		return fmt.Sprintf("workflow %s failed: %s", w.ID, w.Error)
	}
	return fmt.Sprintf("workflow %s failed (attempt %d, %s): %s", w.ID, w.Attempt(), why, w.Error)
}
