package fsmtest

import (
	"errors"
	"slices"
	"unicode/utf8"

	"github.com/strata-ledger/strata/fsm"
)

// applyWorkflow: the workflow rules, again from fsm/DESIGN.md, applied in
// arrival order; an illegal event is rejected.
func (m *Model) applyWorkflow(e *fsm.Event) fsm.Result {
	var id string
	switch b := e.Body.(type) {
	case *fsm.WorkflowDispatched:
		if m.workflows[b.Workflow] != nil {
			return reject(fsm.ErrWorkflowExists)
		}
		if evs := m.jobEvents[e.JobID]; len(evs) > 0 && evs[0].Tenant != e.Tenant {
			return reject(fsm.ErrTenantMismatch)
		}
		m.workflows[b.Workflow] = &fsm.WorkflowState{ID: b.Workflow, JobID: e.JobID, Tenant: e.Tenant,
			Region: e.Region, Name: b.Name, Instance: b.Instance, Spec: b.Spec,
			Status: fsm.WorkflowStatusDispatched, HLC: e.HLC}
		return fsm.Result{Outcome: fsm.OutcomeApplied}
	case *fsm.WorkflowLeased:
		id = b.Workflow
	case *fsm.WorkflowProgress:
		id = b.Workflow
	case *fsm.WorkflowCompleted:
		id = b.Workflow
	case *fsm.WorkflowFailed:
		id = b.Workflow
	case *fsm.WorkflowRescheduled:
		id = b.Workflow
	case *fsm.WorkflowCancelled:
		id = b.Workflow
	case *fsm.WorkflowRetryScheduled:
		id = b.Workflow
	}
	old := m.workflows[id]
	if old == nil {
		return reject(fsm.ErrUnknownWorkflow)
	}
	if old.Tenant != e.Tenant { // reads as an unknown workflow
		return reject(errors.Join(fsm.ErrUnknownWorkflow, fsm.ErrTenantMismatch))
	}
	w := *old
	if err := m.workflowStep(&w, e); err != nil {
		return reject(err)
	}
	w.HLC = e.HLC
	m.workflows[id] = &w
	return fsm.Result{Outcome: fsm.OutcomeApplied}
}

func (m *Model) workflowStep(w *fsm.WorkflowState, e *fsm.Event) error {
	illegal := func(to fsm.WorkflowStatus) error {
		return &fsm.WorkflowTransitionError{Workflow: w.ID, From: w.Status, To: to, Event: e.Type}
	}
	leased := w.Status == fsm.WorkflowStatusLeased
	report := func(to fsm.WorkflowStatus) error {
		if !leased {
			return illegal(to)
		}
		if e.Fence != w.LeaseFence {
			return &fsm.FenceError{Subject: w.ID, Fence: e.Fence, Current: w.LeaseFence}
		}
		return nil
	}
	switch b := e.Body.(type) {
	case *fsm.WorkflowLeased:
		if w.Status != fsm.WorkflowStatusDispatched {
			return illegal(fsm.WorkflowStatusLeased)
		}
		if b.LeaseFence <= w.LeaseFence {
			return &fsm.FenceError{Subject: w.ID, Fence: b.LeaseFence, Current: w.LeaseFence}
		}
		if wk := m.workers[b.Worker]; wk == nil || !wk.Active {
			return fsm.ErrUnknownWorker
		}
		w.Status, w.Worker, w.LeaseUntilMs, w.LeaseFence = fsm.WorkflowStatusLeased, b.Worker, b.LeaseUntilMs, b.LeaseFence
	case *fsm.WorkflowProgress:
		if err := report(fsm.WorkflowStatusLeased); err != nil {
			return err
		}
		w.Completed, w.Failed = max(w.Completed, b.Completed), max(w.Failed, b.Failed)
		all := map[string]uint64{}
		for _, s := range w.Stats {
			all[s.Name] = s.Value
		}
		for _, s := range b.Stats {
			all[s.Name] = max(all[s.Name], s.Value)
		}
		w.Stats = naiveStats(all)
	case *fsm.WorkflowCompleted:
		if err := report(fsm.WorkflowStatusCompleted); err != nil {
			return err
		}
		w.Status, w.Worker, w.LeaseUntilMs = fsm.WorkflowStatusCompleted, "", 0
	case *fsm.WorkflowFailed:
		if err := report(fsm.WorkflowStatusFailed); err != nil {
			return err
		}
		w.Status, w.Worker, w.LeaseUntilMs, w.Error = fsm.WorkflowStatusFailed, "", 0, b.Error
	case *fsm.WorkflowRescheduled:
		if !leased {
			return illegal(fsm.WorkflowStatusDispatched)
		}
		if b.FromWorker != w.Worker {
			return fsm.ErrWorkerMismatch
		}
		w.Status, w.Worker, w.LeaseUntilMs = fsm.WorkflowStatusDispatched, "", 0
		w.Reschedules++
	case *fsm.WorkflowCancelled:
		if w.Status != fsm.WorkflowStatusDispatched && !leased {
			return illegal(fsm.WorkflowStatusCancelled)
		}
		w.Status, w.Worker, w.LeaseUntilMs = fsm.WorkflowStatusCancelled, "", 0
	case *fsm.WorkflowRetryScheduled:
		if w.Status != fsm.WorkflowStatusFailed {
			return illegal(fsm.WorkflowStatusDispatched)
		}
		if b.Attempt != w.Retries+2 {
			return fsm.ErrInvalidEvent
		}
		msg := w.Error
		if len(msg) > fsm.MaxRetryErrorBytes {
			msg = msg[:fsm.MaxRetryErrorBytes]
		}
		for !utf8.ValidString(msg) {
			msg = msg[:len(msg)-1]
		}
		w.RetryHistory = append(slices.Clone(w.RetryHistory), fsm.WorkflowAttempt{Attempt: b.Attempt - 1, Cause: b.Cause,
			Error: msg, Completed: w.Completed, Failed: w.Failed, FailedAt: w.HLC, NotBeforeMs: b.NotBeforeMs})
		w.Status, w.Retries, w.NotBeforeMs, w.Error = fsm.WorkflowStatusDispatched, w.Retries+1, b.NotBeforeMs, ""
		w.PriorCompleted, w.PriorFailed = w.PriorCompleted+w.Completed, w.PriorFailed+w.Failed
		w.Completed, w.Failed = 0, 0
	}
	return nil
}

func (m *Model) applyWorker(e *fsm.Event) fsm.Result {
	switch b := e.Body.(type) {
	case *fsm.WorkerJoined:
		if w := m.workers[b.Worker]; w != nil && w.Active {
			return reject(fsm.ErrWorkerExists)
		}
		m.workers[b.Worker] = &fsm.WorkerState{ID: b.Worker, Region: e.Region, Capacity: b.Capacity, Active: true, HLC: e.HLC}
	case *fsm.WorkerLeft:
		w := m.workers[b.Worker]
		if w == nil || !w.Active {
			return reject(fsm.ErrUnknownWorker)
		}
		n := *w
		n.Active, n.Reason, n.HLC = false, b.Reason, e.HLC
		m.workers[b.Worker] = &n
	}
	return fsm.Result{Outcome: fsm.OutcomeApplied}
}
