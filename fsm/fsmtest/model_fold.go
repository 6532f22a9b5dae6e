package fsmtest

import (
	"slices"
	"strings"

	"github.com/strata-ledger/strata/fsm"
)

// naiveFold sorts a job's events (the JobCreated among them) in canonical
// order, folds them from scratch, and returns the state and the effect of
// the event with id target. Written from fsm/DESIGN.md, "Job rules",
// independently of the Ledger's fold.
func naiveFold(evs []*fsm.Event, target fsm.EventID) (*fsm.JobState, error) {
	slices.SortFunc(evs, func(a, b *fsm.Event) int { return a.Key().Compare(b.Key()) })
	f := newNaiveJob(evs[0])
	var effect error
	for _, e := range evs[1:] {
		err := f.step(e)
		if err == nil {
			f.hlc = e
		}
		if e.ID == target {
			effect = err
		}
	}
	return f.state(evs), effect
}

type naiveRegion struct {
	accepted           bool
	workers            uint32
	completed, failed  uint64
	stats              map[string]uint64
	done, acked        bool
	workflowsCancelled uint32
}

type naiveJob struct {
	created *fsm.Event
	regions map[string]*naiveRegion
	fence   uint64
	winner  *fsm.Event
	hlc     *fsm.Event // last event that took effect
}

func newNaiveJob(c *fsm.Event) *naiveJob {
	f := &naiveJob{created: c, regions: map[string]*naiveRegion{}, fence: c.Fence, hlc: c}
	for _, r := range c.Body.(*fsm.JobCreated).AssignedRegions {
		f.regions[r] = &naiveRegion{stats: map[string]uint64{}}
	}
	return f
}

func (f *naiveJob) anyAccepted() bool {
	for _, r := range f.regions {
		if r.accepted {
			return true
		}
	}
	return false
}

func (f *naiveJob) status() fsm.JobStatus {
	if f.winner == nil {
		if f.anyAccepted() {
			return fsm.JobStatusRunning
		}
		return fsm.JobStatusPending
	}
	switch f.winner.Type {
	case fsm.TypeJobCancellationRequested:
		for _, r := range f.regions {
			if !r.acked {
				return fsm.JobStatusCancelling
			}
		}
		return fsm.JobStatusCancelled
	case fsm.TypeJobCompleted:
		return fsm.JobStatusCompleted
	case fsm.TypeJobFailed:
		return fsm.JobStatusFailed
	}
	return fsm.JobStatusTimedOut
}

func terminal(s fsm.JobStatus) bool {
	return s == fsm.JobStatusCompleted || s == fsm.JobStatusFailed || s == fsm.JobStatusCancelled || s == fsm.JobStatusTimedOut
}

func isCancel(e *fsm.Event) bool { return e.Type == fsm.TypeJobCancellationRequested }

func (f *naiveJob) step(e *fsm.Event) error {
	st := f.status()
	id := f.created.JobID
	switch b := e.Body.(type) {
	case *fsm.JobAccepted:
		if terminal(st) {
			return fsm.ErrTerminal
		}
		r := f.regions[b.Region]
		r.accepted, r.workers = true, b.WorkerCount
		return nil
	case *fsm.JobProgressReported:
		if terminal(st) {
			return fsm.ErrTerminal
		}
		r := f.regions[b.Region]
		r.completed, r.failed = max(r.completed, b.Completed), max(r.failed, b.Failed)
		r.done = r.done || b.Done
		for _, s := range b.Stats {
			r.stats[s.Name] = max(r.stats[s.Name], s.Value)
		}
		return nil
	case *fsm.JobCancellationAcked:
		// Counted under every decision that stops the regions: all but
		// a completion.
		if f.winner == nil || f.winner.Type == fsm.TypeJobCompleted {
			if terminal(st) {
				return fsm.ErrTerminal
			}
			return &fsm.TransitionError{JobID: id, From: st, To: fsm.JobStatusCancelled, Event: e.Type}
		}
		r := f.regions[b.Region]
		r.acked = true
		r.workflowsCancelled = max(r.workflowsCancelled, b.WorkflowsCancelled)
		return nil
	}
	if e.Fence < f.fence {
		return &fsm.FenceError{Subject: id, Fence: e.Fence, Current: f.fence}
	}
	to := map[fsm.EventType]fsm.JobStatus{
		fsm.TypeJobCancellationRequested: fsm.JobStatusCancelling,
		fsm.TypeJobCompleted:             fsm.JobStatusCompleted,
		fsm.TypeJobFailed:                fsm.JobStatusFailed,
		fsm.TypeJobTimedOut:              fsm.JobStatusTimedOut,
	}[e.Type]
	if e.Type == fsm.TypeJobCompleted && !f.anyAccepted() {
		return &fsm.TransitionError{JobID: id, From: st, To: to, Event: e.Type}
	}
	if w := f.winner; w != nil {
		wins := isCancel(e) && !isCancel(w) || isCancel(e) == isCancel(w) && e.Fence > w.Fence
		if !wins {
			if terminal(st) {
				return fsm.ErrTerminal
			}
			return &fsm.TransitionError{JobID: id, From: st, To: to, Event: e.Type}
		}
	}
	f.winner, f.fence = e, e.Fence
	return nil
}

func (f *naiveJob) state(sorted []*fsm.Event) *fsm.JobState {
	c := f.created
	s := &fsm.JobState{
		JobID: c.JobID, Tenant: c.Tenant, Status: f.status(), Fence: f.fence,
		Spec: c.Body.(*fsm.JobCreated).Spec, Created: c.Key(), HLC: f.hlc.HLC,
		Last: sorted[len(sorted)-1].Key(), Events: uint32(len(sorted)),
	}
	for name, r := range f.regions {
		s.Regions = append(s.Regions, fsm.RegionState{
			Region: name, Accepted: r.accepted, WorkerCount: r.workers, Completed: r.completed,
			Failed: r.failed, Stats: naiveStats(r.stats), Done: r.done, CancelAcked: r.acked,
			WorkflowsCancelled: r.workflowsCancelled,
		})
	}
	slices.SortFunc(s.Regions, func(a, b fsm.RegionState) int { return strings.Compare(a.Region, b.Region) })
	if w := f.winner; w != nil {
		s.Decision = fsm.Decision{Type: w.Type, EventID: w.ID, HLC: w.HLC, Fence: w.Fence, Node: w.Node, Body: w.Body}
	}
	return s
}

// naiveStats keeps the MaxStats smallest names of everything reported.
func naiveStats(m map[string]uint64) fsm.Stats {
	var out fsm.Stats
	for k, v := range m {
		out = append(out, fsm.Stat{Name: k, Value: v})
	}
	slices.SortFunc(out, func(a, b fsm.Stat) int { return strings.Compare(a.Name, b.Name) })
	if len(out) > fsm.MaxStats {
		out = out[:fsm.MaxStats]
	}
	return out
}
