package lifecycle

import (
	"context"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/strata-ledger/strata/cluster/lifecycle/plan"
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
// It plans incrementally (cluster/DESIGN.md, "Job lifecycle"): a pass
// visits the jobs the ledger changed (the lifecycle's dirty set), the jobs
// whose time-out or redelivery is due, and the jobs it proposed a
// decision for last pass (in case the proposal failed); every
// resyncInterval, on its first pass and when the dirty set overflowed, it
// scans every live job instead. A job with nothing planned and nothing
// due drops out of its indexes. Only the pass goroutine touches retry,
// pending, held, due and lastFull.
type globalReconciler struct {
	l       *Lifecycle
	retry   map[string]map[string]*redelivery // job id → region → redelivery
	pending map[string]bool                   // jobs whose last plan emitted a decision
	// held are, per region, the jobs planned for it while a delivery to
	// it ran: the first pass that finds it free visits them again.
	held     map[string]map[string]bool
	due      *dueSet // job id → next time-out or redelivery (HLC wall ms)
	lastFull int64   // HLC wall ms of the last full scan; 0: none yet
	visited  int     // jobs the last pass planned

	mu       sync.Mutex
	inflight map[string]bool // region → a delivery is running
	wg       sync.WaitGroup
}

// redelivery tracks when a (job, region) delivery may be sent again.
type redelivery struct {
	next    int64 // HLC wall ms
	backoff time.Duration
}

func newGlobalReconciler(l *Lifecycle) *globalReconciler {
	return &globalReconciler{l: l, retry: map[string]map[string]*redelivery{}, pending: map[string]bool{},
		held: map[string]map[string]bool{}, due: newDueSet(), inflight: map[string]bool{}}
}

// wait returns when every delivery started by pass has ended.
func (g *globalReconciler) wait() { g.wg.Wait() }

// globalWork is what one pass decided: decisions to propose (stamped
// after newest) and deliveries to start, by region.
type globalWork struct {
	emit   []fsm.Event
	newest hlc.Timestamp
	sends  map[string][]fsm.Event
	// busy are the regions a delivery was running to when the pass
	// began: their jobs are held, without booking a redelivery.
	busy map[string]bool
}

// pass plans the jobs that may need it: decisions are proposed now,
// deliveries start in the background (one per region at a time).
func (g *globalReconciler) pass(ctx context.Context) error {
	now, err := g.l.cfg.Stamper.Now()
	if err != nil {
		return err
	}
	w, err := g.plan(now.WallMs, false)
	if err != nil {
		return err
	}
	for region, evs := range w.sends {
		g.send(ctx, region, evs)
	}
	if len(w.emit) == 0 {
		return nil
	}
	if err := g.l.stamp(w.emit, w.newest); err != nil {
		return err
	}
	return g.l.proposeAll(ctx, w.emit)
}

// plan reads the jobs this pass visits (every live job when full, or
// when a resync is due) in one view at HLC wall time nowMs, plans them,
// and updates the indexes.
func (g *globalReconciler) plan(nowMs int64, full bool) (globalWork, error) {
	w := globalWork{sends: map[string][]fsm.Event{}, busy: g.busyRegions()}
	g.visited = 0
	d := g.l.dirty.take()
	full = full || d.All || g.lastFull == 0 || nowMs-g.lastFull >= resyncInterval.Milliseconds()
	var ids []string
	if !full {
		ids = unionIDs(d.Jobs, g.due.popDue(nowMs), plan.SortedKeys(g.pending), g.release(w.busy))
		sort.Strings(ids)
	}
	err := g.l.cfg.Store.View(func(tx fsm.ReadTx) error {
		visit := func(s *fsm.JobState) error { return g.visit(tx, s, nowMs, &w) }
		if full {
			seen := map[string]bool{}
			g.pending, g.held = map[string]bool{}, map[string]map[string]bool{}
			g.due.reset()
			err := eachLiveJob(tx, "", func(s *fsm.JobState) error {
				seen[s.JobID] = true
				return visit(s)
			})
			for id := range g.retry {
				if !seen[id] {
					delete(g.retry, id)
				}
			}
			return err
		}
		for _, id := range ids {
			s, err := tx.Job(id)
			if err != nil {
				return err
			}
			if s == nil || !liveJob(s, "") {
				g.drop(id)
				continue
			}
			if err := visit(s); err != nil {
				return err
			}
		}
		return nil
	})
	switch {
	case err != nil:
		g.lastFull = 0 // what this pass took is lost: the next one scans everything
	case full:
		g.lastFull = nowMs
	}
	return w, err
}

// visit plans job s, adds its decision and deliveries to w, and files it
// under the indexes its plan calls for: pending while it emits a
// decision, due at its next redelivery or its time-out, held for a
// region a delivery was running to (its delivery goes with the first
// pass that finds the region free, without waiting out a backoff).
func (g *globalReconciler) visit(tx fsm.ReadTx, s *fsm.JobState, nowMs int64, w *globalWork) error {
	g.visited++
	p := plan.Global(s, nowMs)
	if p.Emit != nil {
		w.emit = append(w.emit, *p.Emit)
		w.newest = maxTS(w.newest, s.Last.HLC)
		g.pending[s.JobID] = true
	} else {
		delete(g.pending, s.JobID)
	}
	planned := map[string]bool{}
	var evs []fsm.Event // what every region gets of s, read once
	for _, regions := range [][]string{p.Dispatch, p.Stop} {
		for _, r := range regions {
			planned[r] = true
			if w.busy[r] {
				g.hold(r, s.JobID)
				continue
			}
			if !g.deliverable(s.JobID, r, nowMs) {
				continue
			}
			if evs == nil {
				var err error
				if evs, err = jobDelivery(tx, s, len(p.Stop) > 0); err != nil {
					return err
				}
			}
			w.sends[r] = append(w.sends[r], evs...)
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

// jobDelivery is what a region needs of job s: its JobCreated and, when
// stop, the decision in force.
func jobDelivery(tx fsm.ReadTx, s *fsm.JobState, stop bool) ([]fsm.Event, error) {
	ids := []fsm.EventID{s.Created.ID}
	if stop {
		ids = append(ids, s.Decision.EventID)
	}
	var out []fsm.Event
	for _, id := range ids {
		se, err := tx.Event(id)
		if err != nil {
			return nil, err
		}
		if se != nil {
			out = append(out, se.Event)
		}
	}
	return out, nil
}

// deliverable reports whether job's delivery to region may be sent at
// nowMs, and if so books the next attempt (backing off while the region
// does not react). The caller checked that no delivery to region is
// running, so what it books is sent.
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

// release returns the jobs held for the regions not busy, and forgets
// them.
func (g *globalReconciler) release(busy map[string]bool) []string {
	var out []string
	for r, jobs := range g.held {
		if !busy[r] {
			out = append(out, plan.SortedKeys(jobs)...)
			delete(g.held, r)
		}
	}
	return out
}

// busyRegions returns the regions a delivery is running to.
func (g *globalReconciler) busyRegions() map[string]bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return maps.Clone(g.inflight)
}

// send delivers evs to region in the background. Only the pass goroutine
// starts deliveries and plan left out the regions busy when it began, so
// region is free; were it not, the skipped jobs would wait out their
// redelivery backoff.
func (g *globalReconciler) send(ctx context.Context, region string, evs []fsm.Event) {
	g.mu.Lock()
	if g.inflight[region] {
		g.mu.Unlock()
		return
	}
	g.inflight[region] = true
	g.mu.Unlock()
	g.wg.Go(func() {
		defer func() {
			g.mu.Lock()
			delete(g.inflight, region)
			g.mu.Unlock()
		}()
		chunks, err := chunkEvents(evs)
		for _, c := range chunks {
			if err != nil {
				break
			}
			var batch []byte
			if batch, err = fsm.EncodeBatch(c); err == nil {
				dctx, cancel := context.WithTimeout(ctx, deliverTimeout)
				_, err = g.l.cfg.Deliverer.Deliver(dctx, region, batch)
				cancel()
			}
		}
		if err != nil && ctx.Err() == nil {
			g.l.log.Warn("delivery to region failed", "region", region, "events", len(evs), "err", err)
		}
	})
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
