package lifecycle

import (
	"slices"
	"sort"
	"time"

	"github.com/strata-ledger/strata/cluster/lifecycle/plan"
	"github.com/strata-ledger/strata/cluster/throttle"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// Global reconciler timings.
const (
	// deliverTimeout bounds one delivery of a batch to a region.
	deliverTimeout = 5 * time.Second
	// redeliverMin and redeliverMax bound the wait before a job's
	// JobCreated or decision is sent to a region again (it doubles each
	// time the region has still not reacted).
	redeliverMin = time.Second
	redeliverMax = 30 * time.Second
)

// globalReconciler is the global leader's reconciler (DESIGN §4): it sends
// jobs and their stop decisions to the regions until they react, completes
// jobs whose regions are all done, and times jobs out.
//
// It is the decide half of decide-then-do (etcd-io/raft's RawNode and
// Ready): step reads one view of the ledger and returns the work to do, a
// globalWork; advance takes back what the driver (globalDriver) reports
// of it. It does no I/O of its own — it takes the dirty set and reads the
// ledger, but never proposes, delivers, reads a clock or starts a
// goroutine — and only the goroutine of the term's passes calls it.
//
// It plans incrementally (cluster/DESIGN.md, "Job lifecycle"): a pass
// visits the jobs the ledger changed (the lifecycle's dirty set), the jobs
// whose time-out or redelivery is due, and the jobs it proposed a
// decision for last pass (in case the proposal failed); every
// resyncInterval, on its first pass and when the dirty set overflowed, it
// scans every live job instead. A job with nothing planned and nothing
// due drops out of its indexes.
type globalReconciler struct {
	store   Store
	dirty   *dirtySet
	retry   map[string]map[string]*redelivery // job id → region → redelivery
	pending map[string]bool                   // jobs whose last plan emitted a decision
	// held are, per region, the jobs planned for it while a delivery to
	// it ran: the first pass that finds it free visits them again.
	held     map[string]map[string]bool
	due      *dueSet // job id → next time-out or redelivery (HLC wall ms)
	lastFull int64   // HLC wall ms of the last full scan; 0: none yet
	visited  int     // jobs the last pass planned
	// inflight are the regions a delivery runs to: a step that returns a
	// delivery to a region marks it, advance frees it when the driver
	// reports that the delivery ended. One delivery per region at a time.
	inflight map[string]bool
	// queued are the tenants a visit saw a queued job of (issue 18): the
	// only tenants admit looks at; a full pass rebuilds it.
	queued map[string]bool
}

// redelivery tracks when a (job, region) delivery may be sent again.
type redelivery struct {
	next    int64 // HLC wall ms
	backoff time.Duration
}

func newGlobalReconciler(l *Lifecycle) *globalReconciler {
	return &globalReconciler{store: l.reads, dirty: l.dirty, retry: map[string]map[string]*redelivery{},
		pending: map[string]bool{}, held: map[string]map[string]bool{}, due: newDueSet(), inflight: map[string]bool{},
		queued: map[string]bool{}}
}

// globalWork is what one step of the global reconciler decided, its
// Ready: nothing in it has been done yet.
type globalWork struct {
	// propose are the decisions to propose, in the order the step visited
	// their jobs, not stamped yet: the driver stamps them after after (the
	// newest event of the jobs they decide on) and proposes them in order.
	propose []fsm.Event
	after   hlc.Timestamp
	// deliver holds, per region, what to deliver to it (each job's
	// JobCreated and, when it stops, its decision), in the order the step
	// visited the jobs. The step marked these regions in flight; the
	// driver reports the end of each delivery through advance.
	deliver map[string][]fsm.Event
}

// globalResult is what the driver reports back to the global reconciler.
type globalResult struct {
	// ended are the regions whose delivery ended (delivered or failed)
	// since the last report: the next step may deliver to them again. A
	// failed delivery changes nothing else: redelivery is level-triggered
	// (the backoff a (job, region) delivery booked when it was planned
	// holds until the region reacts).
	ended []string
}

// advance takes the driver's report: the regions whose delivery ended are
// free.
func (g *globalReconciler) advance(r globalResult) {
	for _, region := range r.ended {
		delete(g.inflight, region)
	}
}

// step reads the jobs this pass visits (every live job when full, or
// when a resync is due) in one view at HLC wall time nowMs, plans them,
// updates the indexes, and returns the work to do. The regions a delivery
// runs to (inflight) are busy for the whole step: their jobs are held,
// without booking a redelivery.
func (g *globalReconciler) step(nowMs int64, full bool) (globalWork, error) {
	w := globalWork{deliver: map[string][]fsm.Event{}}
	g.visited = 0
	d := g.dirty.take()
	full = full || d.All || g.lastFull == 0 || nowMs-g.lastFull >= resyncInterval.Milliseconds()
	var ids []string
	if !full {
		ids = unionIDs(d.Jobs, g.due.popDue(nowMs), plan.SortedKeys(g.pending), g.release())
		sort.Strings(ids)
	}
	err := g.store.View(func(tx fsm.ReadTx) error {
		visit := func(s *fsm.JobState) error { return g.visit(tx, s, nowMs, &w) }
		tenants := map[string]bool{} // whose queued jobs may be admitted now
		if full {
			seen := map[string]bool{}
			g.pending, g.held, g.queued = map[string]bool{}, map[string]map[string]bool{}, map[string]bool{}
			g.due.reset()
			err := eachLiveJob(tx, "", func(s *fsm.JobState) error {
				seen[s.JobID] = true
				tenants[s.Tenant] = true
				return visit(s)
			})
			for id := range g.retry {
				if !seen[id] {
					delete(g.retry, id)
				}
			}
			if err != nil {
				return err
			}
			return g.admit(tx, tenants, nowMs, &w)
		}
		for _, id := range ids {
			s, err := tx.Job(id)
			if err != nil {
				return err
			}
			if s != nil {
				tenants[s.Tenant] = true
			}
			if s == nil || !liveJob(s, "") {
				g.drop(id)
				continue
			}
			if err := visit(s); err != nil {
				return err
			}
		}
		return g.admit(tx, tenants, nowMs, &w)
	})
	switch {
	case err != nil:
		g.lastFull = 0 // what this pass took is lost: the next one scans everything
	case full:
		g.lastFull = nowMs
	}
	if err != nil {
		return globalWork{}, err
	}
	for region := range w.deliver {
		g.inflight[region] = true
	}
	return w, nil
}

// visit plans job s, adds its decision and deliveries to w, and files it
// under the indexes its plan calls for: pending while it emits a
// decision, due at its next redelivery or its time-out, held for a
// region a delivery was running to (its delivery goes with the first
// pass that finds the region free, without waiting out a backoff).
func (g *globalReconciler) visit(tx fsm.ReadTx, s *fsm.JobState, nowMs int64, w *globalWork) error {
	g.visited++
	if s.Queued() {
		g.queued[s.Tenant] = true
	}
	p := plan.Global(s, nowMs)
	if len(p.Dispatch) > 0 {
		// A throttle holds what has not started (issue 18).
		paused, err := throttle.Paused(tx, s.Tenant, s.Spec.Type)
		if err != nil {
			return err
		}
		if paused {
			p.Dispatch = nil
		}
	}
	if p.Emit != nil {
		w.propose = append(w.propose, *p.Emit)
		w.after = maxTS(w.after, s.Last.HLC)
		g.pending[s.JobID] = true
	} else {
		delete(g.pending, s.JobID)
	}
	planned := map[string]bool{}
	var evs []fsm.Event // what every region gets of s, read once
	for _, regions := range [][]string{p.Dispatch, p.Stop} {
		for _, r := range regions {
			planned[r] = true
			if g.inflight[r] {
				g.hold(r, s.JobID)
				continue
			}
			if !g.deliverable(s.JobID, r, nowMs) {
				continue
			}
			if evs == nil {
				var err error
				if evs, err = plan.Delivery(tx, s, len(p.Stop) > 0); err != nil {
					return err
				}
			}
			w.deliver[r] = append(w.deliver[r], evs...)
		}
	}
	next := int64(0)
	for r, rd := range g.retry[s.JobID] {
		switch {
		case !planned[r]:
			delete(g.retry[s.JobID], r)
		case next == 0 || rd.next < next:
			next = rd.next
		}
	}
	if len(g.retry[s.JobID]) == 0 {
		delete(g.retry, s.JobID)
	}
	// The time-out plan.Global judges (created + timeout by HLC wall
	// time) while the job has no decision.
	if t := time.Duration(s.Spec.Timeout); t > 0 && s.Decision.Type == 0 && p.Emit == nil {
		if at := s.Created.HLC.WallMs + t.Milliseconds(); next == 0 || at < next {
			next = at
		}
	}
	// A queued job held by a rate limit is visited again when it becomes
	// eligible, so its tenant's admissions are planned then.
	if at := s.Spec.EligibleAtMs; s.Queued() && at > nowMs && (next == 0 || at < next) {
		next = at
	}
	if next > 0 {
		g.due.set(s.JobID, next)
	} else {
		g.due.remove(s.JobID)
	}
	return nil
}

// drop forgets a job that no longer needs the reconciler.
func (g *globalReconciler) drop(id string) {
	delete(g.pending, id)
	delete(g.retry, id)
	g.due.remove(id)
}

// deliverable reports whether job's delivery to region may be sent at
// nowMs, and if so books the next attempt (backing off while the region
// does not react). The caller checked that no delivery to region is
// running, so what it books goes out with the step's work.
func (g *globalReconciler) deliverable(job, region string, nowMs int64) bool {
	rs := g.retry[job]
	if rs == nil {
		rs = map[string]*redelivery{}
		g.retry[job] = rs
	}
	r := rs[region]
	if r == nil {
		r = &redelivery{backoff: redeliverMin}
		rs[region] = r
	} else if nowMs < r.next {
		return false
	} else {
		r.backoff = min(2*r.backoff, redeliverMax)
	}
	r.next = nowMs + r.backoff.Milliseconds()
	return true
}

// hold files job under region's held jobs.
func (g *globalReconciler) hold(region, job string) {
	if g.held[region] == nil {
		g.held[region] = map[string]bool{}
	}
	g.held[region][job] = true
}

// release returns the jobs held for the regions not in flight, and
// forgets them.
func (g *globalReconciler) release() []string {
	var out []string
	for r, jobs := range g.held {
		if !g.inflight[r] {
			out = append(out, plan.SortedKeys(jobs)...)
			delete(g.held, r)
		}
	}
	return out
}

// liveJob reports whether s is one eachLiveJob(region) would visit.
func liveJob(s *fsm.JobState, region string) bool {
	f := fsm.JobFilter{Tenant: s.Tenant, Region: region}
	return s.Tenant != "" && slices.Contains(liveJobStatuses, s.Status) && f.Matches(s)
}

// unionIDs returns the distinct ids of every list, in first-seen order.
func unionIDs(lists ...[]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range lists {
		for _, id := range l {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// eachLiveJob calls fn for every job that may still need a reconciler
// (liveJobStatuses), of every tenant, assigned to region (any when empty).
func eachLiveJob(tx fsm.ReadTx, region string, fn func(*fsm.JobState) error) error {
	return tx.ChainHeads(func(tenant string, _ fsm.ChainHead) error {
		if tenant == "" {
			return nil
		}
		for _, st := range liveJobStatuses {
			if err := tx.JobsMatching(fsm.JobFilter{Tenant: tenant, Status: st, Region: region}, "", fn); err != nil {
				return err
			}
		}
		return nil
	})
}
