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
	// Admit returns how many more workflows of job s may be leased in
	// this pass (-1: no limit; 0: its breaker is open, so they wait
	// DISPATCHED); Leased tells it one was.
	Admit  func(s *fsm.JobState) int
	Leased func(s *fsm.JobState)
	// Retry decides about workflow w of job s, which FAILED: the retry to
	// propose, or nil and why not.
	Retry func(s *fsm.JobState, w *fsm.WorkflowState) (*fsm.WorkflowRetryScheduled, string)
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
