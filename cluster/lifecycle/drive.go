package lifecycle

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/strata-ledger/strata/cluster/decisive"
	"github.com/strata-ledger/strata/fsm"
)

// The drivers are the do half of the reconcilers' decide-then-do
// (etcd-io/raft's RawNode and Ready): a pass takes one step of its
// reconciler and carries out the work it returns through the interfaces
// the Lifecycle was given — stamp and propose (Stamper, Submitter),
// deliver (Deliverer), publish the lease view, forget workers — and
// reports back what the reconciler must know of the outcome. A pass runs
// on the term's pass goroutine (reconcileLoop), one at a time.

// globalDriver drives a global leader's reconciler for one term: it
// proposes its decisions and delivers to the regions in the background,
// one delivery per region at a time (the reconciler asks for no other),
// and reports each delivery's end back at the next pass.
type globalDriver struct {
	l *Lifecycle
	g *globalReconciler
	m *maintDriver // the cluster-wide maintenance mode (clustermaint.go)

	mu    sync.Mutex
	ended []string // regions whose delivery ended since the last pass
	wg    sync.WaitGroup
}

func newGlobalDriver(l *Lifecycle) *globalDriver {
	return &globalDriver{l: l, g: newGlobalReconciler(l), m: newMaintDriver(l)}
}

// pass reports the deliveries that ended, takes a step at the HLC's wall
// time, starts its deliveries and proposes its decisions.
func (d *globalDriver) pass(ctx context.Context) error {
	now, err := d.l.cfg.Stamper.Now()
	if err != nil {
		return err
	}
	d.g.advance(globalResult{ended: d.takeEnded()})
	w, err := d.g.step(now.WallMs, false)
	if err != nil {
		return err
	}
	for region, evs := range w.deliver {
		d.send(ctx, region, evs)
	}
	// The cluster's maintenance mode: its failure fails the pass (logged,
	// tried again) but holds no job decision back.
	maintErr := d.m.pass(ctx, now.WallMs, &d.wg)
	propose, release := takeDecisive(d.l.cfg.Decisive, w.propose)
	if len(propose) == 0 {
		return maintErr
	}
	if err := d.l.stamp(propose, w.after); err != nil {
		release(nil)
		return errors.Join(err, maintErr)
	}
	err = d.l.proposeAll(ctx, propose)
	release(err)
	return errors.Join(err, maintErr)
}

// takeDecisive keeps of events the decisions (completion, time-out) of
// jobs with no decisive write in flight on this node, taking those jobs,
// and drops the others: they are planned again next pass, when the
// cancel in flight has applied (cluster/decisive). release ends the
// holds once the proposal returned: at once if it reached the tier; if it
// failed, the decisions may still apply, so after decisiveHoldOnError.
func takeDecisive(j *decisive.Jobs, events []fsm.Event) (kept []fsm.Event, release func(error)) {
	var held []func()
	kept = events[:0:0]
	for _, e := range events {
		if e.Type == fsm.TypeJobCompleted || e.Type == fsm.TypeJobTimedOut || e.Type == fsm.TypeJobFailed {
			r, ok := j.TryAcquire(e.JobID)
			if !ok {
				continue
			}
			held = append(held, r)
		}
		kept = append(kept, e)
	}
	return kept, func(err error) {
		free := func() {
			for _, r := range held {
				r()
			}
		}
		if err == nil || len(held) == 0 {
			free()
			return
		}
		time.AfterFunc(decisiveHoldOnError, free)
	}
}

// decisiveHoldOnError is how long a job whose decision failed to reach the
// tier takes no cancel on this node: the proposal may still be climbing
// (the pipeline keeps it in the NodeWAL and goes on), and a cancel
// admitted before it applies would overturn it once it has been read.
const decisiveHoldOnError = 10 * time.Second

// takeEnded returns the regions whose delivery ended since the last call.
func (d *globalDriver) takeEnded() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.ended
	d.ended = nil
	return out
}

// send delivers evs to region in the background, in chunks, and files
// the region as ended when it is done (delivered or failed).
func (d *globalDriver) send(ctx context.Context, region string, evs []fsm.Event) {
	d.wg.Go(func() {
		defer func() {
			d.mu.Lock()
			d.ended = append(d.ended, region)
			d.mu.Unlock()
		}()
		chunks, err := chunkEvents(evs)
		for _, c := range chunks {
			if err != nil {
				break
			}
			var batch []byte
			if batch, err = fsm.EncodeBatch(c); err == nil {
				dctx, cancel := context.WithTimeout(ctx, deliverTimeout)
				_, err = d.l.cfg.Deliverer.Deliver(dctx, region, batch)
				cancel()
			}
		}
		if err != nil && ctx.Err() == nil {
			d.l.log.Warn("delivery to region failed", "region", region, "events", len(evs), "err", err)
		}
	})
}

// wait returns when every delivery a pass started has ended.
func (d *globalDriver) wait() { d.wg.Wait() }

// regionDriver drives a regional leader's reconciler for one term: it
// publishes the lease view each step read, drops the workers it expires
// from the liveness, and proposes its events.
type regionDriver struct {
	l  *Lifecycle
	rr *regionReconciler
}

func newRegionDriver(l *Lifecycle) *regionDriver {
	return &regionDriver{l: l, rr: newRegionReconciler(l)}
}

// pass takes a step at the wall time and carries out its work.
func (d *regionDriver) pass(ctx context.Context) error {
	w, err := d.rr.step(d.l.cfg.Now(), false)
	if err != nil {
		return err
	}
	d.l.views.publish(w.view)
	for _, worker := range w.forget {
		d.l.live.Forget(worker)
	}
	if len(w.propose) == 0 {
		return nil
	}
	if err := d.l.stamp(w.propose, w.after); err != nil {
		return err
	}
	return d.l.proposeAll(ctx, w.propose)
}
