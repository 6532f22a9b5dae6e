package cluster

import (
	"cmp"
	"context"
	"encoding/base64"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/httpapi"
	"github.com/strata-ledger/strata/cluster/livestats"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/gossip"
	"github.com/strata-ledger/strata/transport/progress"
	"github.com/strata-ledger/strata/wal"
)

// The progress data plane on a manager (issue 14): a progress.Receiver on
// data_plane_addr (UDP and TCP) folds workers' frames; every
// data_plane_commit_interval the changed aggregates become WorkflowProgress
// events (the HTTP progress call's, httpapi.DataPlaneEvents) submitted at
// LOCAL through the node's pipeline, which group-commits them to the
// NodeWAL and climbs them to the regional ledger (a follower's forwards
// them to the leader). Any manager of the region serves any worker: the
// keys are derived (dataplane_views.go), not handed between managers.
// The latency histograms the frames carry are not written anywhere: each
// flush turns them into per-job live samples (cluster/livestats) pushed
// to every gate, which serve them in job views (stats at NONE).

// Data-plane timings and bounds.
const (
	// DefaultDataPlaneCommitInterval is how often aggregates are
	// committed to the regional ledger (DESIGN §4: every 500 ms);
	// MinDataPlaneCommitInterval keeps a config from turning every
	// staging tick into ledger events.
	DefaultDataPlaneCommitInterval = 500 * time.Millisecond
	MinDataPlaneCommitInterval     = 50 * time.Millisecond
	// livePushInterval is how often live statistics go to the gates.
	livePushInterval = 500 * time.Millisecond
	// dataPlaneStageInterval is how often what was folded is staged in
	// the NodeWAL (LOCAL): the bound on how long a folded update waits
	// to be durable, besides the fsync.
	dataPlaneStageInterval = 2 * time.Millisecond
	// dataPlaneSweepEvery: every this many flushes, aggregates whose
	// lease ended (and whose counters were submitted) are forgotten.
	dataPlaneSweepEvery = 10
	// dataPlaneFinalFlush bounds the last flush at Close.
	dataPlaneFinalFlush = 2 * time.Second
	// dataPlaneBatchEvents bounds one Submit (the ledger's batch limit).
	dataPlaneBatchEvents = fsm.MaxBatchEvents
)

// localBuckets are strata_progress_local_seconds' bounds: fine around
// the 2 ms staging tick and an fsync.
var localBuckets = []float64{.0005, .001, .002, .003, .004, .005, .0075, .01, .025, .05, .1, .25, .5, 1, 2.5}

// aggKey names one aggregate: a workflow as one worker reports it.
type aggKey struct{ workflow, worker string }

// dataPlane is the manager's receiver and its flush loop.
type dataPlane struct {
	n           *Node
	rcv         *progress.Receiver
	addr        string // data_plane_addr, as advertised in gossip
	keys        *regKeys
	clock       *foldClock
	coarse      *coarseClock // the key and lease caches' clock
	flush       prometheus.Histogram
	local       prometheus.Histogram // strata_progress_local_seconds
	localEvents prometheus.Counter   // events acknowledged at LOCAL
	live        *livestats.Tracker
	push        *livestats.Pusher

	// Owned by the flush loop.
	pending  map[aggKey]progress.Progress // drained, not yet submitted
	tracked  map[aggKey]uint64            // in the receiver: its fence
	flushes  int
	stager   *progress.StageEncoder
	stageBuf []byte
	held     []wal.LSN // staged records pending's next commit covers
	unstage  progress.StageDecoder
	// recovered: staged records Recover handed back; refolded counts them.
	recovered stagedRecords
	refolded  prometheus.Counter

	closeOnce sync.Once
}

// openDataPlane starts the receiver on a manager with a data_plane_addr;
// runDataPlane starts its flush loop once the API exists.
func (n *Node) openDataPlane() error {
	if n.role.gate || n.cfg.DataPlaneAddr == "" {
		return nil
	}
	coarse := newCoarseClock()
	d := &dataPlane{n: n, addr: n.cfg.DataPlaneAddr, pending: map[aggKey]progress.Progress{}, tracked: map[aggKey]uint64{},
		stager: progress.NewStageEncoder(uint64(time.Now().UnixNano())),
		live:   livestats.NewTracker(),
		coarse: coarse,
		keys:   &regKeys{token: n.cfg.ClusterToken, store: n.store, now: coarse.now},
		clock:  &foldClock{Leases: &leaseTable{store: n.store, now: coarse.now}},
		flush: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_progress_flush_duration_seconds",
			Help: "Time to turn drained progress aggregates into events and submit them at LOCAL."}),
		local: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_progress_local_seconds",
			Help:    "Per staged record: from the fold of its oldest update to its fsync in the NodeWAL (LOCAL).",
			Buckets: localBuckets}),
		localEvents: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_progress_local_events_total",
			Help: "WorkflowProgress events from the data plane acknowledged at LOCAL (in the NodeWAL)."}),
		refolded: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_progress_staged_recovered_total",
			Help: "Staged progress records recovered from the NodeWAL after a restart and folded again."})}
	for _, c := range []prometheus.Collector{d.flush, d.local, d.localEvents, d.refolded} {
		if err := n.reg.Register(c); err != nil {
			return err
		}
	}
	push, err := livestats.NewPusher(livestats.PusherConfig{Client: n.peers.HTTPClient(), ClusterToken: n.cfg.ClusterToken,
		Gates: n.gateAPIAddrs, Logger: n.log.With("component", "livestats"), Registerer: n.reg})
	if err != nil {
		return err
	}
	d.push = push
	rcv, err := progress.New(progress.Config{UDPAddr: d.addr, TCPAddr: d.addr, Keys: d.keys,
		Leases: d.clock, Registerer: n.reg, Logger: n.log.With("component", "progress")})
	if err != nil {
		return err
	}
	if err := rcv.Start(); err != nil {
		return err
	}
	d.rcv, n.dp = rcv, d
	return nil
}

// runDataPlane runs the flush loop until the node closes.
func (n *Node) runDataPlane() {
	if n.dp != nil {
		n.bg.Go(func() { n.dp.run(n.ctx) })
		n.bg.Go(func() { n.dp.push.Run(n.ctx) })
		n.bg.Go(func() { n.dp.coarse.run(n.ctx) })
	}
}

// gateAPIAddrs are the API addresses of every gate gossip knows.
func (n *Node) gateAPIAddrs() []string {
	var out []string
	for _, m := range n.members.Members() {
		if m.Meta.Role == gossip.RoleGate && m.Meta.APIAddr != "" {
			out = append(out, m.Meta.APIAddr)
		}
	}
	return out
}

// dataPlaneAPI is the receiver as the worker API sees it, nil without one.
func (n *Node) dataPlaneAPI() httpapi.DataPlane {
	if n.dp == nil {
		return nil
	}
	return n.dp
}

// liveAPI is the gate's board of live statistics for job views, nil on
// managers (their job reads go to a gate).
func (n *Node) liveAPI() httpapi.Live {
	if n.live == nil {
		return nil
	}
	return n.live
}

// Access is the data-plane access of worker's registration joined at
// joined; only the registration answer carries it.
func (d *dataPlane) Access(worker string, joined hlc.Timestamp) api.DataPlaneAccess {
	rk := registrationKey(d.keys.token, &fsm.WorkerState{ID: worker, HLC: joined})
	return api.DataPlaneAccess{UDPAddr: d.addr, TCPAddr: d.addr, KeyID: rk.id, Key: base64.StdEncoding.EncodeToString(rk.key)}
}

// QueueFill is the receive queue's fill (the heartbeat's backpressure).
func (d *dataPlane) QueueFill() float64 { return d.rcv.QueueFill() }

// Status is the receiver's running totals for GET /v1/cluster/raft.
func (d *dataPlane) Status() api.DataPlaneStatus {
	st := d.rcv.Stats()
	return api.DataPlaneStatus{Frames: st.Frames, Updates: st.Updates, Dropped: st.Dropped,
		QueueFill: st.QueueFill, Backpressure: st.Level.String()}
}

// close closes the receiver (once): it folds what is queued.
func (d *dataPlane) close() {
	d.closeOnce.Do(func() { _ = d.rcv.Close() })
}

// run stages what was folded every dataPlaneStageInterval and commits
// the aggregates every data_plane_commit_interval, in the background so
// that staging never waits behind a commit; at the end it stops the
// receiver and commits what it folded last.
func (d *dataPlane) run(ctx context.Context) {
	stage := time.NewTicker(dataPlaneStageInterval)
	defer stage.Stop()
	flush := time.NewTicker(d.n.cfg.DataPlaneCommitInterval)
	defer flush.Stop()
	live := time.NewTicker(livePushInterval)
	defer live.Stop()
	done := make(chan commitResult, 1)
	inFlight := false
	for {
		select {
		case <-stage.C:
			d.stageOnce(ctx)
		case <-live.C:
			if samples, dropped := d.live.Take(livePushInterval); len(samples) > 0 {
				d.push.Send(&livestats.Push{Node: d.n.cfg.NodeID, Region: d.n.cfg.Region, Samples: samples}, dropped)
			}
		case <-flush.C:
			if !inFlight {
				d.stageOnce(ctx)
				inFlight = d.startCommit(ctx, done)
			}
		case r := <-done:
			inFlight = false
			d.commitDone(r)
		case <-ctx.Done():
			d.close()
			if inFlight {
				d.commitDone(<-done) // cut short by ctx: what failed is pending again
			}
			fctx, cancel := context.WithTimeout(context.Background(), dataPlaneFinalFlush)
			d.drain()
			if d.startCommit(fctx, done) {
				d.commitDone(<-done)
			}
			cancel()
			return
		}
	}
}

// drain moves what the receiver folded since the last drain into
// pending and returns it.
func (d *dataPlane) drain() []progress.Progress {
	changed := d.rcv.Drain()
	for _, p := range changed {
		k := aggKey{p.Workflow, p.Worker}
		d.pending[k], d.tracked[k] = p, p.Fence
		d.live.Add(p)
	}
	return changed
}

// commitResult is what a background commit hands back to the loop.
type commitResult struct {
	failed []httpapi.DataPlaneUpdate // not in the NodeWAL: pending again
	held   []wal.LSN                 // the staged records it covers
}

// startCommit hands the pending aggregates and the staged records that
// hold them to a background commit, which answers on done, and starts a
// new staging epoch; false when there was nothing to commit (the staged
// records are then released at once).
func (d *dataPlane) startCommit(ctx context.Context, done chan<- commitResult) bool {
	if len(d.pending) == 0 {
		d.commitDone(commitResult{held: d.held})
		d.held = nil
		return false
	}
	ups, held := pendingUpdates(d.pending), d.held
	d.pending, d.held = make(map[aggKey]progress.Progress, len(d.pending)), nil
	d.stager.NewEpoch()
	go func() { done <- d.commit(ctx, ups, held) }()
	return true
}

// commitDone takes a commit's result on the loop: the staged records it
// covers are released once every aggregate of it is in the NodeWAL as
// ledger records (or was refused); what failed is pending again, and the
// records stay held until it is committed. Every few commits it forgets
// the aggregates of leases that ended.
func (d *dataPlane) commitDone(r commitResult) {
	for _, u := range r.failed {
		p := progress.Progress{Workflow: u.Workflow, Worker: u.Worker, Fence: u.Fence, Completed: u.Completed, Failed: u.Failed}
		k := aggKey{p.Workflow, p.Worker}
		if cur, ok := d.pending[k]; ok {
			p = maxProgress(cur, p)
		}
		d.pending[k] = p
	}
	if len(r.failed) == 0 {
		d.n.pipe.Release(r.held)
	} else {
		d.held = append(d.held, r.held...)
	}
	if d.flushes++; d.flushes%dataPlaneSweepEvery == 0 {
		d.sweep()
	}
}

// commit proposes ups at LOCAL as WorkflowProgress events, in batches of
// at most dataPlaneBatchEvents, off the loop (it touches none of its
// maps); an update the ledger check refuses is dropped (its lease moved
// on), one whose Submit failed is returned.
func (d *dataPlane) commit(ctx context.Context, ups []httpapi.DataPlaneUpdate, held []wal.LSN) commitResult {
	start := time.Now()
	defer func() { d.flush.Observe(time.Since(start).Seconds()) }()
	events, passed, err := d.n.api.DataPlaneEvents(ups)
	if err != nil {
		d.n.log.Warn("progress commit: read ledger", "err", err)
		return commitResult{failed: ups, held: held}
	}
	var owners []httpapi.DataPlaneUpdate // owners[k]: the update of events[k]
	for i, u := range ups {
		if passed[i] {
			owners = append(owners, u)
		}
	}
	var failed []httpapi.DataPlaneUpdate
	for lo := 0; lo < len(events); lo += dataPlaneBatchEvents {
		hi := min(lo+dataPlaneBatchEvents, len(events))
		if _, err := d.n.pipe.Submit(ctx, events[lo:hi], commit.DurabilityLocal); err != nil {
			d.n.log.Warn("progress commit: submit", "events", hi-lo, "err", err)
			failed = append(failed, owners[lo:hi]...)
			continue
		}
		d.localEvents.Add(float64(hi - lo))
	}
	return commitResult{failed: failed, held: held}
}

// pendingUpdates is pending as the worker API's updates, in a stable
// order (workflow, worker).
func pendingUpdates(pending map[aggKey]progress.Progress) []httpapi.DataPlaneUpdate {
	ups := make([]httpapi.DataPlaneUpdate, 0, len(pending))
	for _, p := range pending {
		ups = append(ups, httpapi.DataPlaneUpdate{Worker: p.Worker, Workflow: p.Workflow, Fence: p.Fence,
			Completed: p.Completed, Failed: p.Failed})
	}
	slices.SortFunc(ups, func(a, b httpapi.DataPlaneUpdate) int {
		return cmp.Or(cmp.Compare(a.Workflow, b.Workflow), cmp.Compare(a.Worker, b.Worker))
	})
	return ups
}

// sweep forgets the aggregates whose lease is no longer held at their
// fence and that have nothing left to submit: their last counters are
// committed (or were refused), and without Forget the receiver would keep
// them for ever. A worker's later frame for a forgotten aggregate is
// refused by Holds, or, under a new lease, starts it afresh.
func (d *dataPlane) sweep() {
	var ended []aggKey
	err := d.n.store.View(func(tx fsm.ReadTx) error {
		for k, fence := range d.tracked {
			if _, waiting := d.pending[k]; waiting {
				continue
			}
			wf, err := tx.Workflow(k.workflow)
			if err != nil {
				return err
			}
			if h := holderOf(wf); h.worker != k.worker || h.fence != fence {
				ended = append(ended, k)
			}
		}
		return nil
	})
	if err != nil {
		d.n.log.Warn("progress sweep: read ledger", "err", err)
		return
	}
	for _, k := range ended {
		d.rcv.Forget(k.workflow, k.worker)
		d.live.Forget(k.workflow, k.worker)
		delete(d.tracked, k)
	}
}

// foldClock is the receiver's Leases, noting when the first update that
// passed the lease check was folded since the last take: the start of
// strata_progress_local_seconds (fold → LOCAL), which `strata bench
// progress` reports as p99_ms_to_local. It is called on the fold
// goroutine once per update, so it reads the clock only for the first.
type foldClock struct {
	progress.Leases
	first atomic.Int64 // Unix ns of the first passing update since take; 0: none
}

func (f *foldClock) Holds(worker, workflow string, fence uint64) bool {
	ok := f.Leases.Holds(worker, workflow, fence)
	if ok && f.first.Load() == 0 {
		f.first.CompareAndSwap(0, time.Now().UnixNano())
	}
	return ok
}

// take returns the first fold's time since the last take (zero if none)
// and starts afresh.
func (f *foldClock) take() time.Time {
	if ns := f.first.Swap(0); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}
