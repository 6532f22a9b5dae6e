package cluster

import (
	"context"
	"sync"
	"time"

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
type globalReconciler struct {
	n        *Node
	mu       sync.Mutex
	retry    map[string]*redelivery // job id + "/" + region
	inflight map[string]bool        // region → a delivery is running
	wg       sync.WaitGroup
}

// redelivery tracks when a (job, region) delivery may be sent again.
type redelivery struct {
	next    time.Time
	backoff time.Duration
}

func newGlobalReconciler(n *Node) *globalReconciler {
	return &globalReconciler{n: n, retry: map[string]*redelivery{}, inflight: map[string]bool{}}
}

// wait returns when every delivery started by pass has ended.
func (g *globalReconciler) wait() { g.wg.Wait() }

// pass plans every live job once: decisions are proposed now, deliveries
// start in the background (one per region at a time).
func (g *globalReconciler) pass(ctx context.Context) error {
	now, err := g.n.clock.Now()
	if err != nil {
		return err
	}
	var emit []fsm.Event
	var newest hlc.Timestamp
	sends := map[string][]fsm.Event{}
	seen := map[string]bool{}
	err = g.n.store.View(func(tx fsm.ReadTx) error {
		return eachLiveJob(tx, "", func(s *fsm.JobState) error {
			p := planGlobal(s, now.WallMs)
			if p.Emit != nil {
				emit = append(emit, *p.Emit)
				newest = maxTS(newest, s.Last.HLC)
			}
			for _, regions := range [][]string{p.Dispatch, p.Stop} {
				for _, r := range regions {
					key := s.JobID + "/" + r
					seen[key] = true
					if !g.due(key, time.Now()) {
						continue
					}
					evs, err := jobDelivery(tx, s, len(p.Stop) > 0)
					if err != nil {
						return err
					}
					sends[r] = append(sends[r], evs...)
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	g.forget(seen)
	for region, evs := range sends {
		g.send(ctx, region, evs)
	}
	if len(emit) == 0 {
		return nil
	}
	if err := g.n.stamp(emit, newest); err != nil {
		return err
	}
	return g.n.proposeAll(ctx, emit)
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

// due reports whether key may be delivered at now, and if so books the
// next attempt (backing off while the region does not react).
func (g *globalReconciler) due(key string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.retry[key]
	if r == nil {
		r = &redelivery{backoff: redeliverMin}
		g.retry[key] = r
	} else if now.Before(r.next) {
		return false
	} else {
		r.backoff = min(2*r.backoff, redeliverMax)
	}
	r.next = now.Add(r.backoff)
	return true
}

// forget drops the retry state of deliveries no longer planned.
func (g *globalReconciler) forget(seen map[string]bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k := range g.retry {
		if !seen[k] {
			delete(g.retry, k)
		}
	}
}

// send delivers evs to region in the background unless a delivery to it
// is already running (the next pass will retry what this one skipped).
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
				_, err = g.n.deliver(dctx, region, batch, nil)
				cancel()
			}
		}
		if err != nil && ctx.Err() == nil {
			g.n.log.Warn("delivery to region failed", "region", region, "events", len(evs), "err", err)
		}
	})
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
