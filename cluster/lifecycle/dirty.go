package lifecycle

import (
	"sync"

	"github.com/strata-ledger/strata/fsm"
)

// dirtyLimit bounds the job ids a dirtySet holds between two takes. Past
// it the set collapses into "resync everything": one full scan costs less
// than tracking that many ids, and a follower (whose set nobody takes)
// holds at most this many.
const dirtyLimit = 16_384

// dirtySet is what the ledger changed since the reconcilers last looked
// (cluster/DESIGN.md, "Job lifecycle"): the ids of the jobs whose job or
// workflow events were applied, whether a worker joined or left, and
// whether the state changed wholesale (a snapshot restore) or too much to
// track. The FSM adds after each applied entry is committed to the store;
// the leader's reconciler takes it before reading the store, so whatever
// it takes is in the state it then reads, and whatever lands later is in
// the next take. Safe for concurrent use.
type dirtySet struct {
	mu      sync.Mutex
	limit   int
	jobs    map[string]struct{}
	all     bool
	workers bool
}

// dirtyTake is one take of a dirtySet.
type dirtyTake struct {
	// Jobs are the job ids touched (empty when All).
	Jobs []string
	// All: resync every job (overflow, restore).
	All bool
	// Workers: a worker joined or left.
	Workers bool
}

func newDirtySet(limit int) *dirtySet {
	return &dirtySet{limit: limit, jobs: map[string]struct{}{}}
}

// add records job ids; past the limit the set collapses into All.
func (d *dirtySet) add(ids ...string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range ids {
		d.addLocked(id)
	}
}

func (d *dirtySet) addLocked(id string) {
	if d.all {
		return
	}
	if _, ok := d.jobs[id]; ok {
		return
	}
	if len(d.jobs) >= d.limit {
		d.overflowLocked()
		return
	}
	d.jobs[id] = struct{}{}
}

func (d *dirtySet) overflowLocked() {
	d.all = true
	clear(d.jobs)
}

// addAll asks for a resync of every job (the state was replaced).
func (d *dirtySet) addAll() {
	d.mu.Lock()
	d.overflowLocked()
	d.mu.Unlock()
}

// addWorkers records that a worker joined or left.
func (d *dirtySet) addWorkers() {
	d.mu.Lock()
	d.workers = true
	d.mu.Unlock()
}

// take returns what was recorded and empties the set.
func (d *dirtySet) take() dirtyTake {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := dirtyTake{All: d.all, Workers: d.workers}
	if !d.all && len(d.jobs) > 0 {
		t.Jobs = make([]string, 0, len(d.jobs))
		for id := range d.jobs {
			t.Jobs = append(t.Jobs, id)
		}
	}
	d.all, d.workers = false, false
	if len(d.jobs) > d.limit/4 {
		d.jobs = map[string]struct{}{} // give a burst's memory back
	} else {
		clear(d.jobs)
	}
	return t
}

// Entry records what an applied Raft entry changed: the job ids of
// the events that changed the ledger (applied or absorbed: duplicates and
// rejections change nothing), and worker joins and leaves. The ledger's
// results name each event's type and job, so the entry is not decoded
// again here.
func (d *dirtySet) Entry(results [][]fsm.Result) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, rs := range results {
		for i := range rs {
			r := &rs[i]
			switch {
			case r.Outcome != fsm.OutcomeApplied && r.Outcome != fsm.OutcomeAbsorbed:
			case r.JobID != "":
				if _, ok := d.jobs[r.JobID]; !ok && !d.all {
					d.addLocked(r.JobID)
				}
			case r.Type == fsm.TypeWorkerJoined || r.Type == fsm.TypeWorkerLeft:
				d.workers = true
			case r.Type.IsGovernance():
				// A quota or throttle changed (issue 18): which jobs it
				// frees is not known here, so the next pass scans all.
				d.overflowLocked()
			}
		}
	}
}

// Restored records that a snapshot replaced the state.
func (d *dirtySet) Restored() { d.addAll() }
