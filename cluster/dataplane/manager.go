package dataplane

import (
	"cmp"
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
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
	"github.com/strata-ledger/strata/transport/progress"
	"github.com/strata-ledger/strata/wal"
)

// Data-plane timings and bounds.
const (
	// DefaultCommitInterval is how often aggregates are
	// committed to the regional ledger (DESIGN §4: every 500 ms);
	// MinCommitInterval keeps a config from turning every
	// staging tick into ledger events.
	DefaultCommitInterval = 500 * time.Millisecond
	MinCommitInterval     = 50 * time.Millisecond
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

// Config is what a Manager needs of its node: narrow views of the
// ledger, the commit pipeline and the API's report rules.
type Config struct {
	NodeID, Region string
	// Addr is data_plane_addr (UDP and TCP), as advertised in gossip.
	Addr         string
	ClusterToken string
	// CommitInterval is data_plane_commit_interval.
	CommitInterval time.Duration
	Store          Viewer
	Pipeline       Pipeline
	// Events turns aggregates into the WorkflowProgress events the HTTP
	// progress call would write, after the same lease checks
	// (httpapi.Server.DataPlaneEvents); passed[i] says whether ups[i]
	// has its event.
	Events func(ups []httpapi.DataPlaneUpdate) (events []fsm.Event, passed []bool, err error)
	// Clock is the node's HLC (the staged records' timestamps).
	Clock func() (hlc.Timestamp, error)
	// Gates and HTTPClient reach the gates for live statistics.
	Gates      func() []string
	HTTPClient *http.Client
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Pipeline is what the Manager uses of the node's commit pipeline.
type Pipeline interface {
	Submit(ctx context.Context, events []fsm.Event, level commit.Durability) (commit.SubmitResult, error)
	Stage(ctx context.Context, payload []byte, ts hlc.Timestamp) (wal.LSN, error)
	Release(lsns []wal.LSN)
}

// Manager is the manager's receiver and its loop.
type Manager struct {
	cfg         Config
	log         *slog.Logger
	rcv         *progress.Receiver
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
	// restage: what the last stage failed to write; stageFailing keeps
	// a failing NodeWAL from logging every tick.
	restage      restage
	stageFailing bool
	// recovered: staged records Recover handed back; refolded counts them.
	recovered stagedRecords
	refolded  prometheus.Counter

	closeOnce sync.Once
}

// Access is the data-plane access of worker's registration joined at
// joined; only the registration answer carries it.
func (d *Manager) Access(worker string, joined hlc.Timestamp) api.DataPlaneAccess {
	rk := registrationKey(d.cfg.ClusterToken, &fsm.WorkerState{ID: worker, HLC: joined})
	return api.DataPlaneAccess{UDPAddr: d.cfg.Addr, TCPAddr: d.cfg.Addr, KeyID: rk.id, Key: base64.StdEncoding.EncodeToString(rk.key)}
}

// QueueFill is the receive queue's fill (the heartbeat's backpressure).
func (d *Manager) QueueFill() float64 { return d.rcv.QueueFill() }

// Status is the receiver's running totals for GET /v1/cluster/raft.
func (d *Manager) Status() api.DataPlaneStatus {
	st := d.rcv.Stats()
	return api.DataPlaneStatus{Frames: st.Frames, Updates: st.Updates, Dropped: st.Dropped,
		QueueFill: st.QueueFill, Backpressure: st.Level.String()}
}

// close closes the receiver (once): it folds what is queued.
func (d *Manager) close() {
	d.closeOnce.Do(func() { _ = d.rcv.Close() })
}

// run stages what was folded every dataPlaneStageInterval and commits
// the aggregates every data_plane_commit_interval, in the background so
// that staging never waits behind a commit; at the end it stops the
// receiver and commits what it folded last.
func (d *Manager) run(ctx context.Context) {
	stage := time.NewTicker(dataPlaneStageInterval)
	defer stage.Stop()
	flush := time.NewTicker(d.cfg.CommitInterval)
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
				d.push.Send(&livestats.Push{Node: d.cfg.NodeID, Region: d.cfg.Region, Samples: samples}, dropped)
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
func (d *Manager) drain() []progress.Progress {
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
func (d *Manager) startCommit(ctx context.Context, done chan<- commitResult) bool {
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
func (d *Manager) commitDone(r commitResult) {
	for _, u := range r.failed {
		p := progress.Progress{Workflow: u.Workflow, Worker: u.Worker, Fence: u.Fence, Completed: u.Completed, Failed: u.Failed}
		k := aggKey{p.Workflow, p.Worker}
		if cur, ok := d.pending[k]; ok {
			p = maxProgress(cur, p)
		}
		d.pending[k] = p
	}
	if len(r.failed) == 0 {
		d.cfg.Pipeline.Release(r.held)
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
func (d *Manager) commit(ctx context.Context, ups []httpapi.DataPlaneUpdate, held []wal.LSN) commitResult {
	start := time.Now()
	defer func() { d.flush.Observe(time.Since(start).Seconds()) }()
	events, passed, err := d.cfg.Events(ups)
	if err != nil {
		d.log.Warn("progress commit: read ledger", "err", err)
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
		if _, err := d.cfg.Pipeline.Submit(ctx, events[lo:hi], commit.DurabilityLocal); err != nil {
			d.log.Warn("progress commit: submit", "events", hi-lo, "err", err)
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
func (d *Manager) sweep() {
	var ended []aggKey
	err := d.cfg.Store.View(func(tx fsm.ReadTx) error {
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
		d.log.Warn("progress sweep: read ledger", "err", err)
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

// New starts the receiver on cfg.Addr; Run runs the loop.
func New(cfg Config) (*Manager, error) {
	coarse := newCoarseClock()
	d := &Manager{cfg: cfg, log: cfg.Logger, pending: map[aggKey]progress.Progress{}, tracked: map[aggKey]uint64{},
		stager: progress.NewStageEncoder(uint64(time.Now().UnixNano())),
		live:   livestats.NewTracker(),
		coarse: coarse,
		keys:   &regKeys{token: cfg.ClusterToken, store: cfg.Store, now: coarse.now},
		clock:  &foldClock{Leases: &leaseTable{store: cfg.Store, now: coarse.now}},
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
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, err
		}
	}
	push, err := livestats.NewPusher(livestats.PusherConfig{Client: cfg.HTTPClient, ClusterToken: cfg.ClusterToken,
		Gates: cfg.Gates, Logger: cfg.Logger.With("component", "livestats"), Registerer: cfg.Registerer})
	if err != nil {
		return nil, err
	}
	d.push = push
	rcv, err := progress.New(progress.Config{UDPAddr: cfg.Addr, TCPAddr: cfg.Addr, Keys: d.keys,
		Leases: d.clock, Registerer: cfg.Registerer, Logger: cfg.Logger.With("component", "progress")})
	if err != nil {
		return nil, err
	}
	if err := rcv.Start(); err != nil {
		return nil, err
	}
	d.rcv = rcv
	return d, nil
}

// Run runs the loop, the live-statistics pusher and the caches' clock
// until ctx ends, then commits what was folded last.
func (d *Manager) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { d.push.Run(ctx) })
	wg.Go(func() { d.coarse.run(ctx) })
	d.run(ctx)
	wg.Wait()
}

// Close stops the receiver (once): it folds what is queued.
func (d *Manager) Close() { d.close() }

// Keys is the receiver's view of the registrations' keys.
func (d *Manager) Keys() progress.Keys { return d.keys }

// Receiver is the progress receiver (its aggregates, for tests and status).
func (d *Manager) Receiver() *progress.Receiver { return d.rcv }
