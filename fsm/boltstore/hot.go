package boltstore

// hotState is what Update keeps in memory between transactions (issue
// 19, "hot state in memory"): the job cache (cache.go) and the event id
// bounds (idbounds.go). It describes the state as applied, never
// anything the file does not hold or will not hold once the open
// transaction commits; clear drops it all, whenever that could stop
// being true (a lost group, a new file, Close). Only Update uses it, under
// Store.writeMu; Views read the file. A nil *hotState (Replace's
// transactions) holds nothing.
type hotState struct {
	jobs *jobCache
	ids  *idBounds
}

func newHotState(cfg Config) *hotState {
	return &hotState{jobs: newJobCache(cfg.JobCacheEntries), ids: newIDBounds(maxIDBounds)}
}

// job returns the cached entry of a job, nil if none.
func (h *hotState) job(id string) *jobEntry {
	if h == nil {
		return nil
	}
	return h.jobs.get(id)
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
	h.ids.clear()
}
