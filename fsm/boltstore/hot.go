package boltstore

import "github.com/strata-ledger/strata/fsm"

// hotState is what Update keeps in memory between transactions (issue
// 19, "hot state in memory"): the job cache and the workflow cache
// (cache.go) and the event id bounds (idbounds.go). It describes the
// state as applied, never anything the file does not hold or will not
// hold once the open transaction commits; clear drops it all whenever
// that could stop being true (a lost group, a new file, Close). Only
// Update uses it, under Store.writeMu; Views read the file. A nil
// *hotState (Replace's transactions) holds nothing.
type hotState struct {
	jobs      *jobCache
	workflows *workflowCache
	ids       *idBounds
}

func newHotState(cfg Config) *hotState {
	return &hotState{jobs: newLRU[*jobEntry](cfg.JobCacheEntries),
		workflows: newLRU[*fsm.WorkflowState](cfg.WorkflowCacheEntries), ids: newIDBounds(maxIDBounds)}
}

// job returns the cached entry of a job, nil if none.
func (h *hotState) job(id string) *jobEntry {
	if h == nil {
		return nil
	}
	e, _ := h.jobs.get(id)
	return e
}

// workflow returns the cached record of a workflow, nil if none.
func (h *hotState) workflow(id string) *fsm.WorkflowState {
	if h == nil {
		return nil
	}
	w, _ := h.workflows.get(id)
	return w
}

// installWorkflows keeps the leased workflows a transaction put if it
// committed, and forgets the others, and all if it did not. Only leased
// ones: their worker's reports and end read them, while a dispatched
// workflow is read once, by its lease, and a region may hold many
// (keeping every dispatch cost the dispatch-only workload 11 % of its
// CPU in GC and churn, BENCHMARKS.md).
func (h *hotState) installWorkflows(put map[string]*fsm.WorkflowState, committed bool) {
	for id, w := range put {
		if committed && w.Status == fsm.WorkflowStatusLeased {
			h.workflows.put(id, w)
		} else {
			h.workflows.forget(id)
		}
	}
}

// idBounds returns the event id bounds, nil if none.
func (h *hotState) idBounds() *idBounds {
	if h == nil {
		return nil
	}
	return h.ids
}

func (h *hotState) clear() {
	h.jobs.clear()
	h.workflows.clear()
	h.ids.clear()
}
