package fsmtest

import (
	"slices"
	"strings"

	"github.com/strata-ledger/strata/fsm"
)

// naiveFold computes a job from the set of its events (the JobCreated
// among them) from scratch (held until holdMs by a rate meter at its
// creation if holdMs > 0), written from fsm/DESIGN.md, "Job rules",
// independently of the Ledger's incremental fold: every rule is a
// function of the set (ORs, maxima, the best decisive event under a total
// rank), so nothing here depends on the order of evs.
func naiveFold(evs []*fsm.Event, holdMs int64) *fsm.JobState {
	var c *fsm.Event
	for _, e := range evs {
		if e.Type == fsm.TypeJobCreated {
			c = e
		}
	}
	regions := map[string]*naiveRegion{}
	for _, r := range c.Body.(*fsm.JobCreated).AssignedRegions {
		regions[r] = &naiveRegion{stats: map[string]uint64{}}
	}
	s := &fsm.JobState{JobID: c.JobID, Tenant: c.Tenant, Spec: c.Body.(*fsm.JobCreated).Spec, Created: c.Key(),
		Events: uint32(len(evs))}
	if holdMs > 0 {
		s.Spec.Held, s.Spec.EligibleAtMs = true, max(s.Spec.EligibleAtMs, holdMs)
	}
	accepted := false
	for _, e := range evs {
		if s.Last.Less(e.Key()) {
			s.Last = e.Key()
		}
		if s.HLC.Less(e.HLC) {
			s.HLC = e.HLC
		}
		switch b := e.Body.(type) {
		case *fsm.JobAccepted:
			r := regions[b.Region]
			r.accepted, r.workers = true, max(r.workers, b.WorkerCount)
			accepted = true
		case *fsm.JobProgressReported:
			r := regions[b.Region]
			r.completed, r.failed = max(r.completed, b.Completed), max(r.failed, b.Failed)
			r.done = r.done || b.Done
			for _, st := range b.Stats {
				r.stats[st.Name] = max(r.stats[st.Name], st.Value)
			}
		case *fsm.JobCancellationAcked:
			r := regions[b.Region]
			r.acked = true
			r.workflowsCancelled = max(r.workflowsCancelled, b.WorkflowsCancelled)
		case *fsm.JobAdmitted:
			s.Admitted = s.Spec.Held
		}
	}
	// The decision: the best of the eligible decisive events; a completion
	// is eligible only if some region accepted, else the best one waits
	// as the pending completion.
	var winner, pending *fsm.Event
	for _, e := range evs {
		if !e.Type.IsDecisive() || e.Fence < c.Fence {
			continue
		}
		if e.Type == fsm.TypeJobCompleted && !accepted {
			if pending == nil || naiveOutranks(e, pending) {
				pending = e
			}
			continue
		}
		if winner == nil || naiveOutranks(e, winner) {
			winner = e
		}
	}
	s.Fence = c.Fence
	if winner != nil {
		s.Decision = naiveDecision(winner)
		s.Fence = winner.Fence
	}
	if pending != nil {
		s.Pending = naiveDecision(pending)
	}
	for name, r := range regions {
		s.Regions = append(s.Regions, fsm.RegionState{
			Region: name, Accepted: r.accepted, WorkerCount: r.workers, Completed: r.completed,
			Failed: r.failed, Stats: naiveStats(r.stats), Done: r.done, CancelAcked: r.acked,
			WorkflowsCancelled: r.workflowsCancelled,
		})
	}
	slices.SortFunc(s.Regions, func(a, b fsm.RegionState) int { return strings.Compare(a.Region, b.Region) })
	s.Status = naiveStatus(s, winner)
	return s
}

// naiveOutranks: cancellation first, then the higher fence, then the
// lower canonical key.
func naiveOutranks(a, b *fsm.Event) bool {
	if isCancel(a) != isCancel(b) {
		return isCancel(a)
	}
	if a.Fence != b.Fence {
		return a.Fence > b.Fence
	}
	return a.Key().Less(b.Key())
}

func naiveDecision(w *fsm.Event) fsm.Decision {
	return fsm.Decision{Type: w.Type, EventID: w.ID, HLC: w.HLC, Fence: w.Fence, Node: w.Node, Body: w.Body}
}

func naiveStatus(s *fsm.JobState, winner *fsm.Event) fsm.JobStatus {
	if winner == nil {
		for _, r := range s.Regions {
			if r.Accepted {
				return fsm.JobStatusRunning
			}
		}
		return fsm.JobStatusPending
	}
	switch winner.Type {
	case fsm.TypeJobCancellationRequested:
		for _, r := range s.Regions {
			if !r.CancelAcked {
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

// naiveEffect is the result of event e that turned job state pre into
// post (fsm/DESIGN.md, "Outcomes"): nil if it took effect, else the
// reason it is reported absorbed.
func naiveEffect(pre, post *fsm.JobState, e *fsm.Event) error {
	id, st := pre.JobID, pre.Status
	switch e.Type {
	case fsm.TypeJobAccepted, fsm.TypeJobProgressReported:
		if terminal(st) && post.Status == st && post.Decision.EventID == pre.Decision.EventID {
			return fsm.ErrTerminal
		}
		return nil
	case fsm.TypeJobAdmitted:
		switch {
		case !pre.Spec.Held || pre.Admitted:
			return fsm.ErrNotQueued
		case terminal(st):
			return fsm.ErrTerminal
		}
		return nil
	case fsm.TypeJobCancellationAcked:
		switch pre.Decision.Type {
		case fsm.TypeJobCancellationRequested, fsm.TypeJobFailed, fsm.TypeJobTimedOut:
			return nil
		}
		if terminal(st) {
			return fsm.ErrTerminal
		}
		return &fsm.TransitionError{JobID: id, From: st, To: fsm.JobStatusCancelled, Event: e.Type}
	}
	if post.Decision.EventID == e.ID {
		return nil
	}
	if e.Fence < pre.Fence {
		return &fsm.FenceError{Subject: id, Fence: e.Fence, Current: pre.Fence}
	}
	to := map[fsm.EventType]fsm.JobStatus{
		fsm.TypeJobCancellationRequested: fsm.JobStatusCancelling,
		fsm.TypeJobCompleted:             fsm.JobStatusCompleted,
		fsm.TypeJobFailed:                fsm.JobStatusFailed,
		fsm.TypeJobTimedOut:              fsm.JobStatusTimedOut,
	}[e.Type]
	accepted := slices.ContainsFunc(pre.Regions, func(r fsm.RegionState) bool { return r.Accepted })
	if e.Type == fsm.TypeJobCompleted && !accepted {
		return &fsm.TransitionError{JobID: id, From: st, To: to, Event: e.Type}
	}
	if terminal(st) {
		return fsm.ErrTerminal
	}
	return &fsm.TransitionError{JobID: id, From: st, To: to, Event: e.Type}
}

type naiveRegion struct {
	accepted           bool
	workers            uint32
	completed, failed  uint64
	stats              map[string]uint64
	done, acked        bool
	workflowsCancelled uint32
}

func terminal(s fsm.JobStatus) bool {
	return s == fsm.JobStatusCompleted || s == fsm.JobStatusFailed || s == fsm.JobStatusCancelled || s == fsm.JobStatusTimedOut
}

func isCancel(e *fsm.Event) bool { return e.Type == fsm.TypeJobCancellationRequested }

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
