package lifecycle

import (
	"maps"
	"sort"
	"time"

	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/cluster/lifecycle/plan"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// jobProgressInterval rate-limits a region's job-level progress reports
// (each climbs to the global ledger through the forwarder).
const jobProgressInterval = time.Second

// regionReconciler is a regional leader's reconciler (DESIGN §4): it
// accepts and dispatches the jobs the gates deliver, leases workflows to
// live workers, takes leases back from silent ones, reports progress and
// the region's end, and stops workflows when a job is cancelled, failed or
// timed out.
//
// It is the decide half of decide-then-do (etcd-io/raft's RawNode and
// Ready): step reads one view of the ledger and returns the work to do, a
// regionWork, which the driver (regionDriver) carries out. It does no I/O
// of its own — it takes the dirty set, reads the ledger and the workers'
// liveness (and resets the liveness once per term, inherit), but never
// proposes, publishes the lease view, or starts a goroutine; the wall
// time is its argument.
//
// It plans incrementally (cluster/DESIGN.md, "Job lifecycle"). A pass
// visits the jobs the ledger changed (the lifecycle's dirty set), the jobs
// whose progress report is due, and the jobs whose last plan had output;
// when a worker joined, left, went silent or came back, every job with
// work in flight (active); while a live worker has room, the active jobs
// with DISPATCHED workflows. Every resyncInterval, on its first pass and
// when the dirty set overflowed, it scans every live job instead. A
// settled job drops out of every index. Only the pass goroutine touches
// the reconciler's fields.
type regionReconciler struct {
	store        Store
	region       string
	window       time.Duration // WorkerAckWindow
	dirty        *dirtySet
	heard        *liveness        // when each worker was last heard from
	lastProgress map[string]int64 // job id → ms of its last job-level report, while within jobProgressInterval
	// active holds, per job with work in flight, its DISPATCHED and
	// LEASED workflows as its last visit read them. Every change to a
	// job's workflows marks the job dirty and its next visit re-reads
	// them, so the lease view and the workers' loads come from here
	// rather than from a scan.
	active    map[string]map[string]*fsm.WorkflowState
	waiting   map[string]bool    // active jobs with DISPATCHED workflows
	pending   map[string]bool    // jobs whose last plan had output
	due       *dueSet            // job id → ms its next progress report may go
	workers   []*fsm.WorkerState // the region's registered workers
	haveWkrs  bool               // workers was read (a join or leave reads it again)
	inherited bool               // the term's liveness was reset from workers
	live      map[string]bool    // active workers live at the last pass
	lastFull  int64              // ms of the last full scan; 0: none yet
	visited   int                // jobs the last pass planned
	// leases is the lease view's map, built from active when it changed
	// and shared (never changed in place) by every view published until
	// then.
	leases map[string][]*fsm.WorkflowState
	// gov is the term's governance (govern.go); jobType holds the type of
	// each active job (half-open breakers count their running workflows).
	gov     *regionGov
	jobType map[string]string
}

func newRegionReconciler(l *Lifecycle) *regionReconciler {
	return &regionReconciler{store: l.reads, region: l.cfg.Region, window: l.cfg.WorkerAckWindow, dirty: l.dirty,
		heard: l.live, lastProgress: map[string]int64{}, active: map[string]map[string]*fsm.WorkflowState{},
		waiting: map[string]bool{}, pending: map[string]bool{}, due: newDueSet(), live: map[string]bool{},
		gov: newRegionGov(l), jobType: map[string]string{}}
}

// inherit counts every worker of the region registered in the ledger as
// heard from now, once per term, from the first read of the workers: a
// new leader cannot know better, and a worker that really is gone loses
// its leases one ack window later. Done by the pass rather than before
// it, so a failed read fails the pass (and is read again) instead of
// leaving every worker silent and expired at once.
func (rr *regionReconciler) inherit() {
	if rr.inherited {
		return
	}
	var ids []string
	for _, w := range rr.workers {
		if w.Active {
			ids = append(ids, w.ID)
		}
	}
	rr.heard.Reset(ids)
	rr.inherited = true
}

// regionJob is a live job of the region with its workflows.
type regionJob struct {
	s   *fsm.JobState
	wfs map[string]*fsm.WorkflowState
}

// regionWork is what one step of the regional reconciler decided, its
// Ready: nothing in it has been done yet.
type regionWork struct {
	// propose are the planned events (the workers' expiries, then each
	// visited job's, in the order the step read the jobs), not stamped
	// yet: the driver stamps them after after (the newest event of the
	// jobs and workflows they react to) and proposes them in order.
	propose []fsm.Event
	after   hlc.Timestamp
	// view is the lease view the step read, for the driver to publish
	// before it proposes.
	view *View
	// forget are the workers propose expires (WorkerLeft): the driver
	// drops them from the liveness.
	forget []string
}

// regionVisit is what one pass read: the jobs it visits, in the order it
// read them, and whether the active set changed since the lease view's
// maps were built.
type regionVisit struct {
	jobs    []*regionJob
	byID    map[string]*regionJob
	changed bool
}

// step reads the jobs this pass visits (every live job when full, or
// when a resync is due) and the region's workers in one view at now,
// plans, updates the indexes, and returns the work to do.
func (rr *regionReconciler) step(now time.Time, full bool) (regionWork, error) {
	region, window, nowMs := rr.region, rr.window, now.UnixMilli()
	d := rr.dirty.take()
	full = full || d.All || rr.lastFull == 0 || nowMs-rr.lastFull >= resyncInterval.Milliseconds()
	v := &regionVisit{byID: map[string]*regionJob{}, changed: full || rr.leases == nil}
	var index uint64
	err := rr.store.View(func(tx fsm.ReadTx) error {
		var err error
		if index, err = tx.AppliedIndex(); err != nil {
			return err
		}
		if full || d.Workers || !rr.haveWkrs {
			if err := rr.readWorkers(tx); err != nil {
				return err
			}
		}
		rr.inherit()
		if err := rr.gov.read(tx); err != nil {
			return err
		}
		live := map[string]bool{}
		for _, w := range rr.workers {
			if w.Active && rr.heard.Live(w.ID, window) {
				live[w.ID] = true
			}
		}
		workersMoved := d.Workers || !maps.Equal(live, rr.live)
		rr.live = live
		if full {
			rr.active, rr.waiting, rr.pending = map[string]map[string]*fsm.WorkflowState{}, map[string]bool{}, map[string]bool{}
			rr.due.reset()
			err := eachLiveJob(tx, region, func(s *fsm.JobState) error { return rr.read(tx, s, v) })
			for id := range rr.lastProgress {
				if v.byID[id] == nil {
					delete(rr.lastProgress, id)
				}
			}
			rr.lastFull = nowMs
			rr.rebuildView(v)
			return err
		}
		ids := unionIDs(d.Jobs, rr.due.popDue(nowMs), plan.SortedKeys(rr.pending))
		if workersMoved {
			ids = unionIDs(ids, plan.SortedKeys(rr.active))
		}
		ids = unionIDs(ids, rr.drainVisits()) // maintenance.go
		sort.Strings(ids)
		if err := rr.readIDs(tx, ids, v); err != nil {
			return err
		}
		rr.rebuildView(v)
		if err := rr.readIDs(tx, rr.waitingForRoom(v), v); err != nil {
			return err
		}
		rr.rebuildView(v)
		return nil
	})
	if err != nil {
		rr.lastFull = 0 // what this pass took is lost: the next one scans everything
		return regionWork{}, err
	}
	w := regionWork{view: &View{Index: index, Leases: rr.leases}}

	var slots []*plan.WorkerSlot
	for _, w := range rr.workers {
		if w.Active {
			slots = append(slots, &plan.WorkerSlot{ID: w.ID, Capacity: w.Capacity, Live: rr.live[w.ID], Load: uint32(len(rr.leases[w.ID]))})
		}
	}
	p := plan.NewRegionPass(region, nowMs, window.Milliseconds(), slots)
	w.propose = plan.Workers(rr.workers, p)
	for _, j := range v.jobs {
		rr.gov.observe(j.s, j.wfs, nowMs)
	}
	rr.gov.tick(nowMs)
	w.propose = append(w.propose, rr.gov.propose...)
	p.Gov = rr.gov.governance(rr.leasedOfType)
	rr.visited = len(v.jobs)
	for _, j := range v.jobs {
		id := j.s.JobID
		w.after = maxTS(w.after, j.s.Last.HLC)
		for _, wf := range j.wfs {
			w.after = maxTS(w.after, wf.HLC)
		}
		last, reported := rr.lastProgress[id]
		due := !reported || nowMs-last >= jobProgressInterval.Milliseconds()
		if due {
			delete(rr.lastProgress, id)
		}
		planned := plan.RegionJob(j.s, j.wfs, p, due)
		for _, e := range planned {
			if e.Type == fsm.TypeJobProgressReported {
				rr.lastProgress[id] = nowMs
			}
		}
		if len(planned) > 0 {
			rr.pending[id] = true
		} else {
			delete(rr.pending, id)
		}
		if last, ok := rr.lastProgress[id]; ok {
			rr.due.set(id, last+jobProgressInterval.Milliseconds())
		} else {
			rr.due.remove(id)
		}
		w.propose = append(w.propose, planned...)
	}
	for _, e := range w.propose {
		if e.Type == fsm.TypeWorkerLeft {
			w.forget = append(w.forget, e.Body.(*fsm.WorkerLeft).Worker)
		}
	}
	return w, nil
}

// readWorkers reads the region's registered workers.
func (rr *regionReconciler) readWorkers(tx fsm.ReadTx) error {
	rr.workers, rr.haveWkrs = nil, true
	return tx.Workers(func(w *fsm.WorkerState) error {
		if w.Region == rr.region {
			rr.workers = append(rr.workers, w)
		}
		return nil
	})
}

// readIDs reads and visits the jobs ids names that v has not visited; a
// job gone or no longer live drops out of the indexes.
func (rr *regionReconciler) readIDs(tx fsm.ReadTx, ids []string, v *regionVisit) error {
	for _, id := range ids {
		if v.byID[id] != nil {
			continue
		}
		s, err := tx.Job(id)
		if err != nil {
			return err
		}
		if s == nil || !liveJob(s, rr.region) {
			v.changed = rr.drop(id) || v.changed
			continue
		}
		if err := rr.read(tx, s, v); err != nil {
			return err
		}
	}
	return nil
}

// read visits live job s: a settled one drops out of the indexes, any
// other is read with its workflows and its work in flight recorded.
func (rr *regionReconciler) read(tx fsm.ReadTx, s *fsm.JobState, v *regionVisit) error {
	region := rr.region
	if regionSettled(s, region) {
		v.changed = rr.drop(s.JobID) || v.changed
		return nil
	}
	j := &regionJob{s: s, wfs: map[string]*fsm.WorkflowState{}}
	err := tx.Workflows(s.JobID+"/"+region+"/", func(w *fsm.WorkflowState) error {
		j.wfs[w.ID] = w
		return nil
	})
	if err != nil {
		return err
	}
	v.jobs = append(v.jobs, j)
	v.byID[s.JobID] = j
	var inFlight map[string]*fsm.WorkflowState
	for id, w := range j.wfs {
		if !w.Status.Terminal() {
			if inFlight == nil {
				inFlight = map[string]*fsm.WorkflowState{}
			}
			inFlight[id] = w
		}
	}
	_, was := rr.active[s.JobID]
	delete(rr.waiting, s.JobID)
	rr.jobType[s.JobID] = s.Spec.Type
	if inFlight != nil {
		rr.active[s.JobID] = inFlight
		for _, w := range inFlight {
			if w.Status == fsm.WorkflowStatusDispatched {
				rr.waiting[s.JobID] = true
				break
			}
		}
	} else {
		delete(rr.active, s.JobID)
	}
	v.changed = v.changed || was || inFlight != nil
	return nil
}

// drop forgets a job that no longer needs the reconciler; true if it had
// work in flight.
func (rr *regionReconciler) drop(id string) bool {
	_, was := rr.active[id]
	delete(rr.active, id)
	delete(rr.waiting, id)
	delete(rr.pending, id)
	delete(rr.lastProgress, id)
	delete(rr.jobType, id)
	rr.gov.forget(id)
	rr.due.remove(id)
	return was
}

// leasedOfType counts the LEASED workflows of the active jobs of the
// breaker key "{tenant}/{job_type}" (half-open admission).
func (rr *regionReconciler) leasedOfType(key string) int {
	n := 0
	for id, wfs := range rr.active {
		t := rr.jobType[id]
		if t == "" {
			continue
		}
		for _, w := range wfs {
			if w.Status == fsm.WorkflowStatusLeased && govern.BreakerKey(w.Tenant, t) == key {
				n++
			}
		}
	}
	return n
}

// waitingForRoom lists, in id order, the jobs with DISPATCHED workflows
// not visited yet, when a live worker has room for one: a worker's load
// fell (or it appeared) without their jobs changing. With no room, or no
// live worker, they wait without being read.
func (rr *regionReconciler) waitingForRoom(v *regionVisit) []string {
	if len(rr.waiting) == 0 {
		return nil
	}
	room := false
	for _, w := range rr.workers {
		if w.Active && rr.live[w.ID] && uint32(len(rr.leases[w.ID])) < w.Capacity {
			room = true
			break
		}
	}
	if !room {
		return nil
	}
	var ids []string
	for id := range rr.waiting {
		if v.byID[id] == nil {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// rebuildView rebuilds the lease view's maps from active if v changed it.
func (rr *regionReconciler) rebuildView(v *regionVisit) {
	if !v.changed {
		return
	}
	v.changed = false
	rr.leases = map[string][]*fsm.WorkflowState{}
	for _, wfs := range rr.active {
		for _, w := range wfs {
			if w.Status == fsm.WorkflowStatusLeased {
				rr.leases[w.Worker] = append(rr.leases[w.Worker], w)
			}
		}
	}
}

// regionSettled reports whether region has nothing left to do for job s:
// it reported done with no decision taken, or it acknowledged the
// decision that stopped the job, or the job completed.
func regionSettled(s *fsm.JobState, region string) bool {
	r := s.Region(region)
	switch {
	case r == nil:
		return true
	case s.Decision.Type == 0:
		return r.Done
	case plan.StopsWorkflows(s.Decision.Type):
		return r.CancelAcked
	}
	return true
}
