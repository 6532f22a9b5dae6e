package cluster

import (
	"context"
	"time"

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
type regionReconciler struct {
	n            *Node
	lastProgress map[string]time.Time // job id → last job-level report
}

func newRegionReconciler(n *Node) *regionReconciler {
	r := &regionReconciler{n: n, lastProgress: map[string]time.Time{}}
	// A new leader counts every worker registered in the ledger as heard
	// from now: it cannot know better, and a worker that really is gone
	// loses its leases one ack window later.
	var ids []string
	_ = n.store.View(func(tx fsm.ReadTx) error {
		return tx.Workers(func(w *fsm.WorkerState) error {
			if w.Active && w.Region == n.cfg.Region {
				ids = append(ids, w.ID)
			}
			return nil
		})
	})
	n.live.Reset(ids)
	return r
}

// regionJob is a live job of the region with its workflows.
type regionJob struct {
	s   *fsm.JobState
	wfs map[string]*fsm.WorkflowState
}

// pass reads the region's live jobs and workers in one view, plans, and
// proposes the plan; it publishes the view the worker API serves leases
// from.
func (rr *regionReconciler) pass(ctx context.Context) error {
	n := rr.n
	region := n.cfg.Region
	now := time.Now()
	var (
		index   uint64
		workers []*fsm.WorkerState
		jobs    []regionJob
		newest  hlc.Timestamp
	)
	err := n.store.View(func(tx fsm.ReadTx) error {
		var err error
		if index, err = tx.AppliedIndex(); err != nil {
			return err
		}
		if err := tx.Workers(func(w *fsm.WorkerState) error {
			if w.Region == region {
				workers = append(workers, w)
			}
			return nil
		}); err != nil {
			return err
		}
		return eachLiveJob(tx, region, func(s *fsm.JobState) error {
			if regionSettled(s, region) {
				return nil
			}
			j := regionJob{s: s, wfs: map[string]*fsm.WorkflowState{}}
			newest = maxTS(newest, s.Last.HLC)
			err := tx.Workflows(s.JobID+"/"+region+"/", func(w *fsm.WorkflowState) error {
				j.wfs[w.ID] = w
				newest = maxTS(newest, w.HLC)
				return nil
			})
			jobs = append(jobs, j)
			return err
		})
	})
	if err != nil {
		return err
	}
	window := n.cfg.WorkerAckWindow
	var slots []*workerSlot
	for _, w := range workers {
		if w.Active {
			slots = append(slots, &workerSlot{ID: w.ID, Capacity: w.Capacity, Live: n.live.Live(w.ID, window)})
		}
	}
	p := newRegionPass(region, now.UnixMilli(), window.Milliseconds(), slots)
	view := &regionView{Index: index, Leases: map[string][]*fsm.WorkflowState{}, Workflows: map[string]*fsm.WorkflowState{}}
	for _, j := range jobs {
		for _, w := range j.wfs {
			if w.Status.Terminal() {
				continue
			}
			view.Workflows[w.ID] = w
			if w.Status == fsm.WorkflowStatusLeased {
				view.Leases[w.Worker] = append(view.Leases[w.Worker], w)
				if slot := p.byID[w.Worker]; slot != nil {
					slot.Load++
				}
			}
		}
	}
	n.views.publish(view)

	events := planWorkers(workers, p)
	live := map[string]bool{}
	for _, j := range jobs {
		live[j.s.JobID] = true
		due := now.Sub(rr.lastProgress[j.s.JobID]) >= jobProgressInterval
		planned := planRegionJob(j.s, j.wfs, p, due)
		for _, e := range planned {
			if e.Type == fsm.TypeJobProgressReported {
				rr.lastProgress[j.s.JobID] = now
			}
		}
		events = append(events, planned...)
	}
	for id := range rr.lastProgress {
		if !live[id] {
			delete(rr.lastProgress, id)
		}
	}
	for _, e := range events {
		if e.Type == fsm.TypeWorkerLeft {
			n.live.Forget(e.Body.(*fsm.WorkerLeft).Worker)
		}
	}
	if len(events) == 0 {
		return nil
	}
	if err := n.stamp(events, newest); err != nil {
		return err
	}
	return n.proposeAll(ctx, events)
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
	case stopsWorkflows(s.Decision.Type):
		return r.CancelAcked
	}
	return true
}
