package memstore

import (
	"github.com/strata-ledger/strata/fsm"
)

// undo records what one write replaced, so a failed Update can be rolled
// back by replaying the log backwards.
type undo struct {
	kind undoKind
	key  string
	u64  uint64
	ev   *fsm.StoredEvent
	head fsm.ChainHead
	had  bool
	job  *fsm.JobState
	wf   *fsm.WorkflowState
	wk   *fsm.WorkerState
	pol  *fsm.Policy
	mtr  *fsm.Meter
}

type undoKind uint8

const (
	undoApplied      undoKind = iota // u64: the old applied index
	undoEventNew                     // ev: the event added
	undoEventReplace                 // ev: the event replaced
	undoHead                         // key: tenant; head, had: the old head
	undoJob                          // key: job id; job: the old state or nil
	undoWorkflow                     // key: workflow id; wf: old or nil
	undoWorker                       // key: worker id; wk: old or nil
	undoMark                         // key: tenant; u64, had: the old forward mark
	undoPolicy                       // key: policy state id; pol: old or nil
	undoMeter                        // key: meter state id; mtr: old or nil
)

// log records an undo entry while an Update runs (not during Replace,
// which discards its state whole on failure).
func (t *tx) log(u undo) {
	if t.s.logging && t.st == t.s.st {
		t.s.undo = append(t.s.undo, u)
	}
}

func (s *Store) rollback() {
	st := s.st
	for i := len(s.undo) - 1; i >= 0; i-- {
		u := &s.undo[i]
		switch u.kind {
		case undoApplied:
			st.applied = u.u64
		case undoEventNew:
			st.dropEvent(u.ev)
		case undoEventReplace:
			st.swapEvent(st.events[keyOf(u.ev)], u.ev)
		case undoHead:
			st.restoreHead(u.key, u.head, u.had)
		case undoJob:
			st.restoreJob(u.key, u.job)
		case undoWorkflow:
			if u.wf == nil {
				delete(st.workflows, u.key)
				st.wfIDs = removeSorted(st.wfIDs, u.key)
			} else {
				st.workflows[u.key] = u.wf
			}
		case undoWorker:
			if u.wk == nil {
				delete(st.workers, u.key)
				st.workerIDs = removeSorted(st.workerIDs, u.key)
			} else {
				st.workers[u.key] = u.wk
			}
		case undoPolicy:
			st.setPolicy(u.key, u.pol)
		case undoMeter:
			st.setMeter(u.key, u.mtr)
		case undoMark:
			if !u.had {
				delete(st.marks, u.key)
				st.markIDs = removeSorted(st.markIDs, u.key)
			} else {
				st.marks[u.key] = u.u64
			}
		}
	}
}

// dropEvent removes the last event added (rollback runs backwards, so it
// is the last of its chain).
func (st *state) dropEvent(se *fsm.StoredEvent) {
	delete(st.events, keyOf(se))
	c := st.chains[se.Tenant]
	c.events[len(c.events)-1] = nil
	c.events = c.events[:len(c.events)-1]
	if se.JobID == "" {
		return
	}
	h := st.history[se.JobID]
	for i := len(h) - 1; i >= 0; i-- {
		if h[i] == se {
			h = append(h[:i], h[i+1:]...)
			break
		}
	}
	if len(h) == 0 {
		delete(st.history, se.JobID)
		return
	}
	st.history[se.JobID] = h
}

func (st *state) restoreHead(tenant string, head fsm.ChainHead, had bool) {
	c := st.chains[tenant]
	c.head, c.hasHead = head, had
	if !had {
		st.tenants = removeSorted(st.tenants, tenant)
	}
}

func (st *state) restoreJob(id string, old *fsm.JobState) {
	if old != nil {
		st.jobs[id] = old
		return
	}
	s := st.jobs[id]
	delete(st.jobs, id)
	st.jobIDs = removeSorted(st.jobIDs, id)
	st.byTenant[s.Tenant] = removeSorted(st.byTenant[s.Tenant], id)
}
