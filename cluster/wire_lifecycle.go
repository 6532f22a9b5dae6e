package cluster

import (
	"context"
	"time"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/lifecycle"
	"github.com/strata-ledger/strata/fsm"
)

// newLifecycle builds the node's job-lifecycle runtime (cluster/lifecycle)
// from the parts openClockAndLedger opened. Its loops read the store's
// last commit and wake on commits (n.commits), and learn of entries once
// committed (openRaft's group.CommittedObserver): on a region's leader
// their reads had committed the store after nearly every entry. Raft and the pipeline open
// after it (the FSM feeds its dirty set), so the adapters below read them
// at call time; Run starts only once StartNode opened everything.
func (n *Node) newLifecycle() (*lifecycle.Lifecycle, error) {
	w := lifecycleWiring{n}
	var lose func(*fsm.Event) bool
	if n.cfg.EnableFaultInjection {
		lose = func(e *fsm.Event) bool { return n.faults != nil && n.faults.LosesForwarded(e.JobID) }
	}
	return lifecycle.New(lifecycle.Config{
		LoseForwarded: lose,
		NodeID:        n.cfg.NodeID, Region: n.cfg.Region, Global: n.role.gate, Group: n.role.group, GlobalGroup: GlobalGroup,
		Store: n.store, CommittedView: n.store.ViewCommitted, Positions: n.ledger,
		Submitter: tracedSubmitter(n.opts.Tracer.Proposals(w.Submit, n.cfg.Region, n.jobTraceparent)),
		Deliverer: w, Leadership: w, Applied: n.commits,
		Stamper: n.stamper, Decisive: n.decisive, Now: time.Now, Logger: n.log, Registerer: n.reg,
		ReconcileInterval: n.cfg.ReconcileInterval, WorkerAckWindow: n.cfg.WorkerAckWindow, BreakerCooldown: n.cfg.BreakerCooldown,
		Breakers: n.cfg.Breakers.Govern(), RetryDefaults: n.cfg.retryDefaults(), Regions: func() []string { return n.members.Regions() },
	})
}

// lifecycleWiring gives the lifecycle the node's pipeline (at its tier),
// cross-group delivery and leadership.
type lifecycleWiring struct{ n *Node }

var (
	_ lifecycle.Submitter  = lifecycleWiring{}
	_ lifecycle.Deliverer  = lifecycleWiring{}
	_ lifecycle.Leadership = lifecycleWiring{}
	_ group.ApplyObserver  = (*lifecycle.Lifecycle)(nil)
)

func (w lifecycleWiring) Submit(ctx context.Context, events []fsm.Event) ([]fsm.Result, error) {
	res, err := w.n.pipe.Submit(ctx, events, w.n.role.tier)
	return res.Results, err
}

func (w lifecycleWiring) Deliver(ctx context.Context, grp string, batch []byte) ([]fsm.Result, error) {
	p, err := w.n.peers.Deliver(ctx, grp, batch)
	return p.Results, err
}

// IsLeader is false once the node is closing: a draining node stops its
// reconcilers before it hands leadership over.
func (w lifecycleWiring) IsLeader() bool { return w.n.raft.IsLeader() && !w.n.closing.Load() }

func (w lifecycleWiring) Barrier(timeout time.Duration) error { return w.n.raft.Barrier(timeout) }

// tracedSubmitter is a lifecycle.Submitter made of a function.
type tracedSubmitter func(ctx context.Context, events []fsm.Event) ([]fsm.Result, error)

func (f tracedSubmitter) Submit(ctx context.Context, events []fsm.Event) ([]fsm.Result, error) {
	return f(ctx, events)
}

// jobTraceparent is the trace context job was submitted under, as this
// node's ledger holds it; "" when unknown.
func (n *Node) jobTraceparent(jobID string) string {
	var tp string
	_ = n.store.View(func(tx fsm.ReadTx) error {
		if js, err := tx.Job(jobID); err == nil && js != nil {
			tp = js.Spec.Traceparent
		}
		return nil
	})
	return tp
}
