package plan

import (
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// GlobalPlan is what the global leader does for one job: the regions its
// loop (re)delivers to and the decision it proposes. It holds no state of
// its own, so a plan that is lost (a leader change, a failed delivery) is
// simply made again by the next pass.
type GlobalPlan struct {
	// Dispatch lists the assigned regions that have not accepted the job:
	// its JobCreated is (re)sent to them.
	Dispatch []string
	// Stop lists the regions that have not acknowledged the decision in
	// force (cancellation, failure, time-out): JobCreated and the
	// decision are (re)sent to them so they stop the job's workflows.
	Stop []string
	// Emit is a decision the leader takes itself (JobCompleted,
	// JobTimedOut), or nil.
	Emit *fsm.Event
}

// StopsWorkflows reports whether a decision ends the job's work in every
// region: under it every region must cancel its workflows and acknowledge,
// which is also what tells a reconciler whether a region has settled.
func StopsWorkflows(t fsm.EventType) bool {
	return t == fsm.TypeJobCancellationRequested || t == fsm.TypeJobFailed || t == fsm.TypeJobTimedOut
}

// Global decides the global leader's next steps for job s at wall time
// nowMs (the leader's HLC wall clock, passed in so that the planner never
// reads a clock and a replay plans the same):
//   - no decision: dispatch to regions that have not accepted; complete
//     when every assigned region reported done; time out when the job's
//     timeout has passed since its creation (by HLC wall time);
//   - a decision that stops work: send it to every region that has not
//     acknowledged it;
//   - COMPLETED and fully acknowledged jobs: nothing.
func Global(s *fsm.JobState, nowMs int64) GlobalPlan {
	var p GlobalPlan
	if s.Decision.Type != 0 {
		if StopsWorkflows(s.Decision.Type) {
			for _, r := range s.Regions {
				if !r.CancelAcked {
					p.Stop = append(p.Stop, r.Region)
				}
			}
		}
		return p
	}
	done := len(s.Regions) > 0
	var agg fsm.Aggregate
	for _, r := range s.Regions {
		if !r.Accepted && !s.Queued() { // a queued job waits for its JobAdmitted (issue 18)
			p.Dispatch = append(p.Dispatch, r.Region)
		}
		done = done && r.Done
		agg.Completed += r.Completed
		agg.Failed += r.Failed
		agg.Stats = addStats(agg.Stats, r.Stats)
	}
	switch {
	case done && s.Status == fsm.JobStatusRunning:
		e := planned(decisionID("complete", s.JobID), fsm.TypeJobCompleted, s, s.Fence+1,
			&fsm.JobCompleted{FinalStatus: fsm.JobStatusCompleted.String(), Aggregate: agg})
		p.Emit, p.Dispatch = &e, nil
	case timedOut(s, nowMs):
		e := planned(decisionID("timeout", s.JobID), fsm.TypeJobTimedOut, s, s.Fence+1,
			&fsm.JobTimedOut{TimeoutType: "job", LastProgressHLC: s.HLC})
		p.Emit, p.Dispatch = &e, nil
	}
	return p
}

// timedOut reports whether s's timeout (0: none) has passed at nowMs,
// counted from its JobCreated's HLC wall time.
func timedOut(s *fsm.JobState, nowMs int64) bool {
	t := time.Duration(s.Spec.Timeout)
	return t > 0 && nowMs >= s.Created.HLC.WallMs+t.Milliseconds()
}

// addStats returns a + b per name, sorted by name, at most fsm.MaxStats
// names (the smallest, as the ledger keeps them).
func addStats(a, b fsm.Stats) fsm.Stats {
	if len(b) == 0 {
		return a
	}
	out := make(fsm.Stats, 0, len(a)+len(b))
	i, j := 0, 0
	for (i < len(a) || j < len(b)) && len(out) < fsm.MaxStats {
		switch {
		case j == len(b) || i < len(a) && a[i].Name < b[j].Name:
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].Name < a[i].Name:
			out = append(out, b[j])
			j++
		default:
			out = append(out, fsm.Stat{Name: a[i].Name, Value: a[i].Value + b[j].Value})
			i, j = i+1, j+1
		}
	}
	return out
}

// Admit is the JobAdmitted the global leader proposes for a queued job
// that quota.Admissions chose. Its id is derived from the job, so two
// leaders propose one event; a rejected one (the ledger found no room)
// is not stored, so the same id is proposed again when room frees.
func Admit(s *fsm.JobState) fsm.Event {
	return planned(decisionID("admit", s.JobID), fsm.TypeJobAdmitted, s, s.Fence, &fsm.JobAdmitted{Reason: "capacity freed"})
}
