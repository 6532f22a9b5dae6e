package lifecycle

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// Cluster-wide maintenance (issue 18 §2). An operator switches it on a
// gate: a PolicySet of govern.KindMaintenance under
// govern.ClusterMaintenanceKey in the global ledger, audited with its
// reason and ticket. The global leader then converges every region to it:
// it delivers a copy of the record (same kind, key, value and audit
// fields) to each region's group, as it delivers jobs, until the region
// holds it, and the regional reconciler reads the copy next to the
// region's own record (govern.EffectiveMaintenance). The copy's id is a
// function of the global change, so every delivery of one change is the
// same event to the region: a region that already holds it answers
// duplicate (or conflict, for a copy a previous leader stamped), which
// counts as held too.
//
// A region that is down when the mode is switched gets it when gossip sees
// one of its gates again and the next delivery gets through; until then
// it keeps the mode it had. Between its return and that delivery (one
// reconcile pass after gossip sees it) it may grant leases under the old
// mode: it cannot know better without the gates, and it must keep working
// without them.
//
// Timings: a region that did not take the copy is tried again after
// redeliverMin, doubling up to redeliverMax; one that did is sent it
// again every maintRecheck (a duplicate, or the record again if the
// region's ledger was restored from a backup older than the change).
const maintRecheck = 5 * time.Minute

// maxMaintRegions bounds the regions one pass converges (DESIGN §13: a
// job names at most 16; a cluster has a few more at most).
const maxMaintRegions = 64

// clusterMaint is the global leader's convergence of the cluster-wide
// maintenance mode for one term: what it knows each region holds. Like
// the job reconciler it decides (step) and is told what came of it
// (advance); its driver delivers. Only the pass goroutine calls it.
type clusterMaint struct {
	regions map[string]*maintTarget
	last    fsm.EventID // the copy the last step read
}

// maintTarget is one region as the term knows it.
type maintTarget struct {
	held     fsm.EventID   // the copy the region confirmed; zero: none this term
	next     int64         // HLC wall ms: no delivery before
	backoff  time.Duration // the wait after the next failure
	inflight bool
}

func newClusterMaint() *clusterMaint { return &clusterMaint{regions: map[string]*maintTarget{}} }

// maintDelivery is one step's work: copy to deliver to each of regions.
type maintDelivery struct {
	copy    fsm.Event
	regions []string
}

// step reads the cluster's record in tx and returns the regions (of
// regions, at most maxMaintRegions, in order) its copy must go to at
// nowMs, marking them in flight; none when there is no record.
func (m *clusterMaint) step(tx fsm.ReadTx, regions []string, node, region string, nowMs int64) (maintDelivery, error) {
	p, err := tx.Policy(govern.KindMaintenance, govern.ClusterMaintenanceKey)
	if err != nil || p == nil {
		return maintDelivery{}, err
	}
	d := maintDelivery{copy: maintCopy(p, node, region)}
	if d.copy.ID != m.last {
		m.changed(d.copy.ID)
		m.last = d.copy.ID
	}
	regions = sortedRegions(regions)
	for _, r := range regions {
		t := m.regions[r]
		if t == nil {
			t = &maintTarget{backoff: redeliverMin}
			m.regions[r] = t
		}
		if t.inflight || nowMs < t.next {
			continue
		}
		t.inflight = true
		d.regions = append(d.regions, r)
	}
	return d, nil
}

// advance takes the outcome of the delivery of copy id to region at
// nowMs: held, or failed (tried again after a backoff).
func (m *clusterMaint) advance(region string, id fsm.EventID, held bool, nowMs int64) {
	t := m.regions[region]
	if t == nil {
		return
	}
	t.inflight = false
	if id != m.last {
		t.next = 0 // the record changed while it was delivered: send the new one
		return
	}
	if held {
		t.held, t.backoff = id, redeliverMin
		t.next = nowMs + maintRecheck.Milliseconds()
		return
	}
	if t.held == id {
		t.held = fsm.EventID{} // a recheck failed: the region's state is unknown again
	}
	t.next = nowMs + t.backoff.Milliseconds()
	t.backoff = min(2*t.backoff, redeliverMax)
}

// changed forgets, when the record changed to the one of copy id, what
// the term knew of the regions that held an older one, so the new one
// goes out at once.
func (m *clusterMaint) changed(id fsm.EventID) {
	for _, t := range m.regions {
		if !t.held.IsZero() && t.held != id {
			t.held, t.next, t.backoff = fsm.EventID{}, 0, redeliverMin
		}
	}
}

// sortedRegions is regions without repeats or bad codes, sorted, at most
// maxMaintRegions.
func sortedRegions(regions []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range regions {
		if fsm.IsRegion(r) && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	sort.Strings(out)
	if len(out) > maxMaintRegions {
		out = out[:maxMaintRegions]
	}
	return out
}

// maintCopy is the regional copy of the cluster's record p, as global
// node of region delivers it: the same kind, key, value and audit fields,
// the global change's HLC, and an id that is a function of the change
// (its HLC and value), so every delivery of one change is one event.
func maintCopy(p *fsm.Policy, node, region string) fsm.Event {
	return fsm.Event{ID: maintCopyID(p.HLC, p.Value), Type: fsm.TypePolicySet, HLC: p.HLC, Node: node, Region: region,
		Body: &fsm.PolicySet{Kind: govern.KindMaintenance, Key: govern.ClusterMaintenanceKey, Value: p.Value,
			Reason: p.Reason, Ticket: p.Ticket, Requestor: p.Requestor}}
}

func maintCopyID(ts hlc.Timestamp, value []byte) fsm.EventID {
	h := sha256.New()
	fmt.Fprintf(h, "strata/maintenance/cluster/v1\x00%s\x00", ts)
	h.Write(value)
	var id fsm.EventID
	copy(id[:], h.Sum(nil))
	return id
}

// maintHeld reports whether a delivery's answer says the region holds
// the copy: applied, a duplicate, or a conflict (the same id stamped by
// another leader's delivery).
func maintHeld(res []fsm.Result, err error) (bool, error) {
	switch {
	case err != nil:
		return false, err
	case len(res) != 1:
		return false, fmt.Errorf("%d results for one event", len(res))
	case res[0].Outcome == fsm.OutcomeApplied, res[0].Outcome == fsm.OutcomeDuplicate:
		return true, nil
	case errors.Is(res[0].Err, fsm.ErrEventConflict):
		return true, nil
	}
	return false, fmt.Errorf("the region refused the copy: %v", res[0].Err)
}

// maintDriver carries out clusterMaint's deliveries for one term, in the
// background, and reports their outcomes at the next pass.
type maintDriver struct {
	l *Lifecycle
	m *clusterMaint

	mu    sync.Mutex
	ended []maintOutcome
}

type maintOutcome struct {
	region string
	id     fsm.EventID
	held   bool
}

func newMaintDriver(l *Lifecycle) *maintDriver { return &maintDriver{l: l, m: newClusterMaint()} }

// pass reports the ended deliveries, steps at HLC wall time nowMs and
// starts the deliveries it asks for (wg tracks them).
func (d *maintDriver) pass(ctx context.Context, nowMs int64, wg *sync.WaitGroup) error {
	d.mu.Lock()
	ended := d.ended
	d.ended = nil
	d.mu.Unlock()
	for _, o := range ended {
		d.m.advance(o.region, o.id, o.held, nowMs)
	}
	var work maintDelivery
	err := d.l.cfg.Store.View(func(tx fsm.ReadTx) error {
		var err error
		work, err = d.m.step(tx, d.l.cfg.Regions(), d.l.cfg.NodeID, d.l.cfg.Region, nowMs)
		return err
	})
	if err != nil || len(work.regions) == 0 {
		return err
	}
	batch, err := fsm.EncodeBatch([]fsm.Event{work.copy})
	if err != nil {
		return err
	}
	for _, region := range work.regions {
		wg.Go(func() {
			dctx, cancel := context.WithTimeout(ctx, deliverTimeout)
			res, err := d.l.cfg.Deliverer.Deliver(dctx, region, batch)
			cancel()
			held, err := maintHeld(res, err)
			if err != nil && ctx.Err() == nil {
				d.l.log.Warn("cluster maintenance: delivery to region failed", "region", region, "err", err)
			}
			d.mu.Lock()
			d.ended = append(d.ended, maintOutcome{region: region, id: work.copy.ID, held: held})
			d.mu.Unlock()
		})
	}
	return nil
}
