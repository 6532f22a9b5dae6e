package plan

import (
	"sort"
	"strconv"
	"unicode/utf8"

	"github.com/strata-ledger/strata/fsm"
)

// WorkerSlot is a registered, active worker of the region as the regional
// leader sees it during one pass: the loop fills it from the ledger and
// its liveness tracker, so the planner needs neither.
type WorkerSlot struct {
	ID       string
	Capacity uint32
	Load     uint32 // workflows leased to it
	Live     bool   // heard from within the ack window
}

// RegionPass is the input shared by one pass over a region's jobs: the
// planner takes leases from Workers (updating their Load), so the jobs
// planned later in the pass see the room the earlier ones used. It is
// used by one goroutine, for one pass.
type RegionPass struct {
	Region    string
	NowMs     int64
	AckWindow int64         // ms
	Workers   []*WorkerSlot // sorted by id
	byID      map[string]*WorkerSlot
	// Gov is the region's governance for the pass (govern.go); nil: none.
	Gov *Governance
}

// NewRegionPass starts a pass over region at wall time nowMs (the loop's
// clock, read once for the pass) with the region's active workers. It
// sorts workers by id, so leases go to the same worker whatever order the
// caller read them in.
func NewRegionPass(region string, nowMs, ackWindowMs int64, workers []*WorkerSlot) *RegionPass {
	sort.Slice(workers, func(i, j int) bool { return workers[i].ID < workers[j].ID })
	p := &RegionPass{Region: region, NowMs: nowMs, AckWindow: ackWindowMs, Workers: workers, byID: map[string]*WorkerSlot{}}
	for _, w := range workers {
		p.byID[w.ID] = w
	}
	return p
}

// pick returns the live worker with free capacity and the fewest leases
// (lowest id on ties), or nil.
func (p *RegionPass) pick() *WorkerSlot {
	var best *WorkerSlot
	for _, w := range p.Workers {
		if w.Live && w.Load < w.Capacity && (best == nil || w.Load < best.Load) {
			best = w
		}
	}
	return best
}

// expectedWorkflows lists the ids of the workflows job s runs in region.
func expectedWorkflows(s *fsm.JobState, region string) []string {
	var ids []string
	for _, ws := range s.Spec.Workflows {
		for i := range ws.Count {
			ids = append(ids, fsm.WorkflowID(s.JobID, region, ws.Name, i))
		}
	}
	return ids
}

// RegionJob decides the regional leader's next steps for job s, given
// its workflows in this region (wfs, by id). progressDue says whether a
// job-level progress report may be emitted now (they are rate-limited by
// the loop). Steps, all level-triggered:
//   - a decision that stops work (cancel, failure, time-out) is in force:
//     cancel every live workflow, then acknowledge once;
//   - not accepted yet: dispatch every workflow, then JobAccepted;
//   - running: reschedule leases of workers that are silent or gone, lease
//     dispatched workflows to live workers with room, report progress,
//     and once every workflow ended report the region done (or failed).
//
// Level-triggered means a step lost to a leader change or a failed
// proposal is planned again, with the same id, by the next pass. RegionJob
// updates the Load of the workers of p it leases to or takes leases from.
func RegionJob(s *fsm.JobState, wfs map[string]*fsm.WorkflowState, p *RegionPass, progressDue bool) []fsm.Event {
	r := s.Region(p.Region)
	if r == nil {
		return nil
	}
	if StopsWorkflows(s.Decision.Type) {
		return planStop(s, r, wfs, p)
	}
	if s.Decision.Type != 0 {
		return nil // completed: nothing runs any more
	}
	ids := expectedWorkflows(s, p.Region)
	if !r.Accepted {
		return planAccept(s, ids, wfs, p)
	}
	var out []fsm.Event
	var agg fsm.Aggregate
	ended, failed := 0, ""
	for _, id := range ids {
		w := wfs[id]
		if w == nil {
			continue // dispatched in a batch not yet applied
		}
		agg.Completed += w.TotalCompleted()
		agg.Failed += w.TotalFailed()
		agg.Stats = addStats(agg.Stats, w.Stats)
		switch w.Status {
		case fsm.WorkflowStatusLeased, fsm.WorkflowStatusDispatched:
			out = append(out, planLease(s, w, p)...)
		case fsm.WorkflowStatusFailed:
			retry, why, ok := planRetry(s, w, p)
			if ok {
				out = append(out, retry)
				continue // not ended: it runs again
			}
			if failed == "" {
				failed = failureText(w, why)
			}
			ended++
		default:
			ended++
		}
	}
	allEnded := ended == len(ids)
	changed := agg.Completed > r.Completed || agg.Failed > r.Failed
	switch {
	case allEnded && failed != "":
		if changed {
			out = append(out, progressReport(s, p.Region, agg, false))
		}
		out = append(out, planned(decisionID("region-failed", s.JobID, p.Region), fsm.TypeJobFailed, s, s.Fence+1,
			&fsm.JobFailed{Error: truncateText(failed), FailedRegion: p.Region}))
	case allEnded && !r.Done:
		out = append(out, progressReport(s, p.Region, agg, true))
	case changed && progressDue:
		out = append(out, progressReport(s, p.Region, agg, false))
	}
	return out
}

// planAccept dispatches the workflows not yet dispatched and accepts the
// job for the region once they all are.
func planAccept(s *fsm.JobState, ids []string, wfs map[string]*fsm.WorkflowState, p *RegionPass) []fsm.Event {
	var out []fsm.Event
	for _, ws := range s.Spec.Workflows {
		for i := range ws.Count {
			id := fsm.WorkflowID(s.JobID, p.Region, ws.Name, i)
			if wfs[id] == nil {
				out = append(out, planned(decisionID("dispatch", id), fsm.TypeWorkflowDispatched, s, s.Fence,
					&fsm.WorkflowDispatched{Workflow: id, Name: ws.Name, Instance: i, Spec: ws}))
			}
		}
	}
	return append(out, planned(decisionID("accept", s.JobID, p.Region), fsm.TypeJobAccepted, s, s.Fence,
		&fsm.JobAccepted{Region: p.Region, WorkerCount: uint32(len(ids))}))
}

// planLease takes a lease back from a worker that is silent or gone, and
// leases a dispatched workflow to a live worker with room.
func planLease(s *fsm.JobState, w *fsm.WorkflowState, p *RegionPass) []fsm.Event {
	var out []fsm.Event
	if w.Status == fsm.WorkflowStatusLeased {
		holder := p.byID[w.Worker]
		if holder != nil && holder.Live {
			if e, ok := p.drainLease(s, w, holder); ok {
				return []fsm.Event{e} // it waits: a draining region leases nothing
			}
			return nil
		}
		reason := "worker " + w.Worker + " left"
		if holder != nil {
			reason = "worker " + w.Worker + " silent for longer than the ack window"
			holder.Load--
		}
		out = append(out, planned(decisionID("reschedule", w.ID, strconv.FormatUint(w.LeaseFence, 10)),
			fsm.TypeWorkflowRescheduled, s, w.LeaseFence, &fsm.WorkflowRescheduled{Workflow: w.ID, FromWorker: w.Worker, Reason: reason}))
	}
	if !p.mayLease(s, w) {
		return out
	}
	to := p.pick()
	if to == nil {
		return out
	}
	to.Load++
	p.leased(s)
	fence := w.LeaseFence + 1
	return append(out, planned(decisionID("lease", w.ID, strconv.FormatUint(fence, 10)), fsm.TypeWorkflowLeased, s, fence,
		&fsm.WorkflowLeased{Workflow: w.ID, Worker: to.ID, LeaseUntilMs: p.NowMs + p.AckWindow, LeaseFence: fence}))
}

// planStop cancels every workflow still running and acknowledges the
// decision once for the region.
func planStop(s *fsm.JobState, r *fsm.RegionState, wfs map[string]*fsm.WorkflowState, p *RegionPass) []fsm.Event {
	var out []fsm.Event
	cancelled := uint32(0)
	for _, id := range SortedKeys(wfs) {
		w := wfs[id]
		switch {
		case !w.Status.Terminal():
			out = append(out, planned(decisionID("cancel", w.ID), fsm.TypeWorkflowCancelled, s, w.LeaseFence,
				&fsm.WorkflowCancelled{Workflow: w.ID}))
			if h := p.byID[w.Worker]; h != nil && w.Status == fsm.WorkflowStatusLeased {
				h.Load--
			}
			cancelled++
		case w.Status == fsm.WorkflowStatusCancelled:
			cancelled++
		}
	}
	if !r.CancelAcked {
		out = append(out, planned(decisionID("ack", s.JobID, p.Region, s.Decision.EventID.String()), fsm.TypeJobCancellationAcked, s, s.Fence,
			&fsm.JobCancellationAcked{Region: p.Region, WorkflowsCancelled: cancelled}))
	}
	return out
}

// progressReport is the region's cumulative job-level progress.
func progressReport(s *fsm.JobState, region string, agg fsm.Aggregate, done bool) fsm.Event {
	id := decisionID("progress", s.JobID, region, strconv.FormatUint(agg.Completed, 10), strconv.FormatUint(agg.Failed, 10), strconv.FormatBool(done))
	return planned(id, fsm.TypeJobProgressReported, s, s.Fence,
		&fsm.JobProgressReported{Region: region, Completed: agg.Completed, Failed: agg.Failed, Stats: agg.Stats, Done: done})
}

// Workers expires the region's active workers that went silent: their
// leases are rescheduled by RegionJob, and the worker must register again.
// The loop runs it before RegionJob in the same pass.
func Workers(workers []*fsm.WorkerState, p *RegionPass) []fsm.Event {
	var out []fsm.Event
	for _, w := range workers {
		if !w.Active || w.Region != p.Region {
			continue
		}
		if slot := p.byID[w.ID]; slot != nil && !slot.Live {
			out = append(out, fsm.Event{ID: decisionID("expire", w.ID, w.HLC.String()), Type: fsm.TypeWorkerLeft,
				Body: &fsm.WorkerLeft{Worker: w.ID, Reason: "no message within the ack window"}})
		}
	}
	return out
}

// truncateText cuts s to the ledger's free-text limit on a rune boundary.
func truncateText(s string) string {
	if len(s) <= fsm.MaxTextBytes {
		return s
	}
	s = s[:fsm.MaxTextBytes]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// SortedKeys returns m's keys in order: the planners walk maps by it so
// that the same state always gives the same events in the same order, and
// the reconcilers use it for the same reason.
func SortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
