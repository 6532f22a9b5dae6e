package commit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/wal"
)

// WALRecordLedgerBatch is the NodeWAL record type of a ledger batch: the
// payload is an fsm.EncodeBatch encoding, the HLC that of the batch's
// first event. It is on disk: never change or reuse it.
const WALRecordLedgerBatch uint8 = 1

// Committer commits a batch in the node's Raft group and returns once it is
// applied: *Proposer. A *NotLeaderError sends the batch to the Forwarder.
type Committer interface {
	Propose(ctx context.Context, batch []byte) (group.Proposal, error)
}

// Forwarder hands a batch to the group's leader, which commits it with its
// own Proposer and answers with the proposal. The node implements it with
// a call to the leader's internal API. It must honour ctx. Every error is
// retried with backoff (a *NotLeaderError when leadership moved, a network
// error, ...), except one wrapping ErrInvalidBatch: the record is then
// refused for good (see Refusal).
type Forwarder interface {
	Forward(ctx context.Context, leader group.Leader, batch []byte) (group.Proposal, error)
}

// ForwarderFunc adapts a function to the Forwarder interface.
type ForwarderFunc func(ctx context.Context, leader group.Leader, batch []byte) (group.Proposal, error)

// Forward calls f.
func (f ForwarderFunc) Forward(ctx context.Context, leader group.Leader, batch []byte) (group.Proposal, error) {
	return f(ctx, leader, batch)
}

// Defaults of PipelineConfig.
const (
	DefaultPipelinePending   = 8192
	DefaultPipelineWindow    = 1 << 20
	DefaultAttemptTimeout    = 10 * time.Second
	DefaultWatermarkInterval = 20 * time.Millisecond
	DefaultProposeRetryFirst = 10 * time.Millisecond
	DefaultProposeRetryMax   = time.Second
	// DefaultMaxAttemptBytes is two Raft entries' worth (group.MaxEntryBytes)
	// of batches in flight: a leader commits that well within
	// AttemptTimeout even on a loaded machine, and it is 100 MiB/s at a
	// 20 ms commit latency.
	DefaultMaxAttemptBytes = 2 << 20
)

// PipelineConfig configures a Pipeline. Zero fields take the defaults.
type PipelineConfig struct {
	// Tier is the level this node's ledger lands in: DurabilityRegional
	// (manager) or DurabilityGlobal (gate). Required.
	Tier Durability
	// WAL is the node's NodeWAL, already open. Required. The pipeline
	// must be its only writer (see Pipeline).
	WAL *wal.WAL
	// Committer proposes on this node (its *Proposer). Required.
	Committer Committer
	// Forwarder reaches the leader from a follower. Nil: a follower
	// retries until this node is leader (a single-node group).
	Forwarder Forwarder
	// MaxPending bounds the records between NodeWAL append and tier
	// (each holds its batch and a goroutine): beyond it, Submit fails with
	// ErrBackpressure and Recover waits.
	MaxPending int
	// MaxWindow bounds the LSNs above the watermark (records pending, or
	// finished above one still pending): beyond it, Submit fails with
	// ErrBackpressure.
	MaxWindow int
	// AttemptTimeout bounds one propose or forward attempt, from when it
	// is admitted (MaxAttemptBytes).
	AttemptTimeout time.Duration
	// MaxAttemptBytes bounds the batch bytes of the attempts in flight at
	// once; records wait for room lowest LSN first (admit.go says why). A
	// batch larger than it goes alone.
	MaxAttemptBytes int
	// Applied, if set, is asked before a record's attempt is retried
	// whether every event of its batch is already in this node's ledger
	// (a prior attempt was committed though its answer was lost or came
	// too late): then the record has reached the tier, and the retry
	// would only commit duplicates. It answers the proposal a retry would
	// have (duplicate outcomes) with Index an applied index of this
	// node's ledger at or above the entry that carried the events, and
	// false whenever it cannot tell.
	Applied func(batch []byte) (group.Proposal, bool)
	// WatermarkInterval is the least time between two checkpoint writes
	// of the tier watermark.
	WatermarkInterval time.Duration
	// RetryFirst and RetryMax bound the backoff between attempts (doubling,
	// with jitter) while there is no leader or the leader fails.
	RetryFirst time.Duration
	RetryMax   time.Duration
	// OnFatal is called once when the NodeWAL has stopped after an I/O
	// error (wal.ErrStopped), or a refusal could not be recorded: nothing
	// can be acknowledged from then on, so the node must stop. Nil: the
	// error is only returned and logged.
	OnFatal func(error)
	// NodeID names this node in the refusals it records. At most
	// fsm.MaxNameBytes.
	NodeID string
	// RefusalFile is where the refusals of records the tier refused for
	// good are kept (refusal_file.go), in the node's data dir, never in
	// the NodeWAL's directory. Empty: kept in memory only and lost at a
	// restart (tests).
	RefusalFile string
	// OnStaged receives, at Recover, every staged record (Stage) above
	// the tier watermark, in NodeWAL order; each stays unfinished until
	// its owner Releases it. Nil: staged records count as reached.
	OnStaged func(lsn wal.LSN, payload []byte)
	// Now is the clock of refusals' times; nil is time.Now.
	Now func() time.Time
	// Logger defaults to discarding; Registerer nil registers nothing.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Validate fills the defaults of zero fields and checks c.
func (c *PipelineConfig) Validate() error {
	if c.MaxPending == 0 {
		c.MaxPending = DefaultPipelinePending
	}
	if c.MaxWindow == 0 {
		c.MaxWindow = DefaultPipelineWindow
	}
	if c.AttemptTimeout == 0 {
		c.AttemptTimeout = DefaultAttemptTimeout
	}
	if c.MaxAttemptBytes == 0 {
		c.MaxAttemptBytes = DefaultMaxAttemptBytes
	}
	if c.WatermarkInterval == 0 {
		c.WatermarkInterval = DefaultWatermarkInterval
	}
	if c.RetryFirst == 0 {
		c.RetryFirst = DefaultProposeRetryFirst
	}
	if c.RetryMax == 0 {
		c.RetryMax = DefaultProposeRetryMax
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if len(c.NodeID) > fsm.MaxNameBytes {
		return fmt.Errorf("cluster: pipeline config: node id of %d bytes, limit %d", len(c.NodeID), fsm.MaxNameBytes)
	}
	if err := checkTier(c.Tier); err != nil {
		return fmt.Errorf("cluster: pipeline config: %w", err)
	}
	switch {
	case c.WAL == nil || c.Committer == nil:
		return errors.New("cluster: pipeline config: WAL and Committer are required")
	case c.MaxPending < 1 || c.MaxWindow < c.MaxPending:
		return fmt.Errorf("cluster: pipeline config: MaxPending %d < 1 or MaxWindow %d below it", c.MaxPending, c.MaxWindow)
	case c.MaxAttemptBytes < 1:
		return fmt.Errorf("cluster: pipeline config: MaxAttemptBytes %d < 1", c.MaxAttemptBytes)
	case c.AttemptTimeout <= 0 || c.WatermarkInterval < 0 || c.RetryFirst <= 0 || c.RetryMax < c.RetryFirst:
		return fmt.Errorf("cluster: pipeline config: AttemptTimeout %s, WatermarkInterval %s, RetryFirst %s, RetryMax %s",
			c.AttemptTimeout, c.WatermarkInterval, c.RetryFirst, c.RetryMax)
	}
	return nil
}

// SubmitResult is what Submit reached.
type SubmitResult struct {
	// Level is the level the batch had reached when Submit returned: the
	// acknowledged level on success; on error, what still holds (LOCAL:
	// fsynced, and climbing to the tier in the background).
	Level Durability
	// LSN is the batch's NodeWAL record.
	LSN wal.LSN
	// Index is the Raft index of the entry that carried the batch (for
	// session tokens); 0 below the tier.
	Index uint64
	// Results has one result per event, in order; nil below the tier.
	Results []fsm.Result
}

// Pipeline is a node's commit path (DESIGN §4, cluster/DESIGN.md):
//
//	Submit ─► encode batch ─► NodeWAL append ─► ack LOCAL
//	        ─► propose (leader: Committer; follower: Forwarder to the leader)
//	        ─► commit + apply ─► ack at the tier ─► advance the tier watermark
//
// Every appended record climbs to the tier in its own goroutine, whatever
// level its caller waits for: a record acknowledged at NONE or LOCAL keeps
// being proposed, with backoff while there is no leader, until it reaches
// the tier or the pipeline is closed.
//
// Watermark: records reach the tier out of order; the tier watermark of
// the NodeWAL (REGIONAL on a manager, GLOBAL on a gate) is advanced to the
// highest LSN at or below which every record has reached it, by one
// goroutine that coalesces progress into few checkpoint writes. The
// pipeline must be the NodeWAL's only writer: an LSN it did not append
// would hold the watermark back. APPLIED is not tracked: on a follower the
// tier is reached when the leader applied, before this node did.
//
// Recovery: after NewPipeline, call Recover once. It re-proposes every
// ledger record above the tier watermark (all that had not reached the
// tier when the node stopped; duplicates of those that had are harmless,
// apply is idempotent by event id). It may run concurrently with Submit.
//
// Methods are safe for concurrent use.
type Pipeline struct {
	cfg   PipelineConfig
	log   *slog.Logger
	m     *pipelineMetrics
	level wal.Level

	marks       *lsnTracker
	epoch       atomic.Uint64 // tags unknown Raft indexes (cover.go); starts at 1
	refusals    *refusalLog
	recoverFrom wal.LSN // first LSN Recover re-proposes
	recoverTo   wal.LSN // last LSN on disk at NewPipeline
	recovered   atomic.Bool

	slots chan struct{} // one token per record between append and tier
	admit *admission    // the bytes of attempts in flight

	writes *writeIndex   // climbing and recent records: for WriteStatus
	scan   chan struct{} // one WriteStatus reading the NodeWAL at a time

	ctx    context.Context // ends at Close; every climb runs under it
	cancel context.CancelFunc

	closeMu sync.RWMutex // closed, and climbs.Add against climbs.Wait
	closed  bool
	climbs  sync.WaitGroup

	leaderMu sync.Mutex
	leaderCh chan struct{} // closed (and replaced) by LeaderChanged

	kick      chan struct{} // the watermark may have moved; capacity 1
	stopFlush chan struct{}
	flushDone chan struct{}
	persisted wal.LSN // owned by the flush goroutine
	closeOnce sync.Once
	fatalOnce sync.Once
}

// op is one record climbing to the tier.
type op struct {
	lsn   wal.LSN
	ts    hlc.Timestamp // the record's
	batch []byte
	epoch uint64 // p.epoch when the last attempt started
	// found: the tier was reached by an earlier attempt, found applied in
	// this node's ledger (PipelineConfig.Applied); out.Index is then an
	// upper bound of the carrying entry's, not an index an attempt of
	// epoch committed at.
	found bool
	out   group.Proposal
	err   error
	done  chan struct{} // closed once out or err is set
}

func (o *op) finish(out group.Proposal, err error) {
	o.out, o.err = out, err
	close(o.done)
}

// NewPipeline returns a pipeline over cfg.WAL, whose tier watermark it
// starts from. Call Recover next.
func NewPipeline(cfg PipelineConfig) (*Pipeline, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newPipelineMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	refusals, err := openRefusalLog(cfg.RefusalFile, MaxRefusals, MaxRefusalBytes)
	if err != nil {
		return nil, err
	}
	level := walLevel(cfg.Tier)
	marks := cfg.WAL.Watermarks()
	mark, last := marks.Get(level), cfg.WAL.LastLSN()
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pipeline{
		cfg:         cfg,
		log:         cfg.Logger,
		m:           m,
		level:       level,
		marks:       newLSNTrackerFrom(mark, last, min(marks.Get(wal.Compacted), mark)),
		refusals:    refusals,
		writes:      newWriteIndex(recentWrites, recentWriteBytes),
		scan:        make(chan struct{}, 1),
		recoverFrom: mark + 1,
		recoverTo:   last,
		slots:       make(chan struct{}, cfg.MaxPending),
		admit:       newAdmission(cfg.MaxAttemptBytes),
		ctx:         ctx,
		cancel:      cancel,
		leaderCh:    make(chan struct{}),
		kick:        make(chan struct{}, 1),
		stopFlush:   make(chan struct{}),
		flushDone:   make(chan struct{}),
		persisted:   mark,
	}
	p.epoch.Store(1)
	m.watermark.Set(float64(mark))
	go p.flushLoop()
	return p, nil
}

// Submit writes events as one batch and returns when it has reached the
// acknowledgement level for level on this node's tier (see ackLevel: a
// level above the tier is a *DurabilityError, one not on the path rounds
// up). NONE returns once the record is queued for the NodeWAL, LOCAL once
// it is fsynced, REGIONAL/GLOBAL once the tier's Raft group applied it.
//
// Errors before the NodeWAL append (invalid level or batch,
// ErrBackpressure, ErrClosed) change nothing. After it, the result's Level
// says what holds, and the record keeps climbing in the background: if
// ctx ends, Submit returns ctx's error with Level LOCAL (once fsynced).
func (p *Pipeline) Submit(ctx context.Context, events []fsm.Event, level Durability) (SubmitResult, error) {
	start := time.Now()
	want, err := AckLevel(level, p.cfg.Tier)
	if err != nil {
		p.m.rejected.WithLabelValues("level").Inc()
		return SubmitResult{}, err
	}
	if len(events) == 0 {
		p.m.rejected.WithLabelValues("invalid").Inc()
		return SubmitResult{}, fmt.Errorf("%w: no events", group.ErrInvalidBatch)
	}
	batch, err := fsm.EncodeBatch(events)
	if err != nil {
		p.m.rejected.WithLabelValues("invalid").Inc()
		return SubmitResult{}, fmt.Errorf("%w: %w", group.ErrInvalidBatch, err)
	}
	o, fut, err := p.append(batch, events[0].HLC)
	if err != nil {
		return SubmitResult{}, err
	}
	res := SubmitResult{Level: DurabilityNone, LSN: o.lsn}
	if want > DurabilityNone {
		if _, err := fut.Wait(ctx); err != nil {
			return res, fmt.Errorf("cluster: submit: NodeWAL LSN %d: %w", o.lsn, err)
		}
		res.Level = DurabilityLocal
	}
	if want > DurabilityLocal {
		select {
		case <-o.done:
		case <-ctx.Done():
			return res, fmt.Errorf("cluster: submit: LSN %d is LOCAL, still climbing to %s: %w", o.lsn, p.cfg.Tier, ctx.Err())
		}
		if o.err != nil {
			return res, o.err
		}
		res.Level, res.Index, res.Results = p.cfg.Tier, o.out.Index, o.out.Results
	}
	p.m.ack[res.Level].Observe(time.Since(start).Seconds())
	return res, nil
}

// append admits a batch (a free slot, room in the window), appends it to
// the NodeWAL and starts its climb.
func (p *Pipeline) append(batch []byte, ts hlc.Timestamp) (*op, *wal.Future, error) {
	select {
	case p.slots <- struct{}{}:
	default:
		p.m.rejected.WithLabelValues("backpressure").Inc()
		return nil, nil, fmt.Errorf("%w: %d records between NodeWAL and tier", group.ErrBackpressure, p.cfg.MaxPending)
	}
	if span := p.marks.span(); span >= uint64(p.cfg.MaxWindow) {
		<-p.slots
		p.m.rejected.WithLabelValues("backpressure").Inc()
		return nil, nil, fmt.Errorf("%w: %d LSNs above the %s watermark", group.ErrBackpressure, span, p.level)
	}
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closed {
		<-p.slots
		return nil, nil, group.ErrClosed
	}
	fut, err := p.cfg.WAL.AppendAsync(wal.Record{Type: WALRecordLedgerBatch, HLC: ts, Payload: batch})
	if err != nil {
		<-p.slots
		if errors.Is(err, wal.ErrBackpressure) {
			p.m.rejected.WithLabelValues("backpressure").Inc()
			return nil, nil, fmt.Errorf("%w: %w", group.ErrBackpressure, err)
		}
		p.walFailed(err)
		return nil, nil, fmt.Errorf("cluster: submit: NodeWAL append: %w", err)
	}
	o := &op{lsn: fut.LSN(), ts: ts, batch: batch, done: make(chan struct{})}
	p.marks.add(o.lsn)
	p.startClimbLocked(o, fut)
	return o, fut, nil
}

// startClimbLocked starts o's climb; the caller holds a slot and
// closeMu.RLock with closed false.
func (p *Pipeline) startClimbLocked(o *op, fut *wal.Future) {
	p.writes.start(o)
	p.climbs.Add(1)
	p.m.inFlight.Inc()
	go p.climb(o, fut)
}

// climb waits for o's fsync (fut, nil for a recovered record), proposes
// it until it reaches the tier, and advances the watermark.
func (p *Pipeline) climb(o *op, fut *wal.Future) {
	defer func() {
		p.writes.end(o)
		<-p.slots
		p.m.inFlight.Dec()
		p.climbs.Done()
	}()
	if fut != nil {
		if _, err := fut.Wait(p.ctx); err != nil {
			p.walFailed(err)
			o.finish(group.Proposal{}, fmt.Errorf("cluster: NodeWAL LSN %d: %w", o.lsn, err))
			return
		}
	}
	out, err := p.propose(o)
	switch {
	case err == nil:
	case errors.Is(err, group.ErrInvalidBatch), errors.Is(err, group.ErrBadEntry):
		// The tier refuses it for good (a bug, or a leader of another
		// version): retrying would hold the watermark back forever, but
		// its caller may hold a NONE or LOCAL ack. Keep the refusal,
		// durably, before the watermark passes the record, so that the
		// client can read it (WriteStatus) instead of losing the write
		// silently.
		if rerr := p.refuse(o, err); rerr != nil {
			o.finish(group.Proposal{}, fmt.Errorf("cluster: NodeWAL LSN %d refused by the tier (%w), and the refusal could not be recorded: %w", o.lsn, err, rerr))
			return
		}
	default:
		o.finish(group.Proposal{}, err)
		return
	}
	switch {
	case err == nil && o.found:
		p.reachedNeeding(o.lsn, need{index: out.Index})
	case err == nil:
		p.reachedAt(o.lsn, out.Index, o.epoch)
	default:
		p.reached(o.lsn) // refused: needs nothing of the ledger
	}
	o.finish(out, err)
}

// refuse records that the tier refused o for good (why), durably.
func (p *Pipeline) refuse(o *op, why error) error {
	r := newRefusal(p.cfg.NodeID, o.lsn, o.ts, p.cfg.Now(), o.batch, why.Error())
	evicted, err := p.refusals.record(r)
	if err != nil {
		p.log.Error("the tier refused a NodeWAL record, and the refusal could not be recorded; it stays pending", "lsn", o.lsn, "refused", why, "err", err)
		if p.cfg.OnFatal != nil {
			p.fatalOnce.Do(func() { p.cfg.OnFatal(err) })
		}
		return err
	}
	p.m.refused.Inc()
	p.m.evicted.Add(float64(evicted))
	p.log.Error("the tier refused a NodeWAL record; its refusal is kept for the client", "lsn", o.lsn, "events", len(r.Events), "err", why)
	return nil
}

// propose tries until o's batch is committed in the tier (or found
// applied before a retry), a permanent error, or Close. Each attempt
// waits for admission (MaxAttemptBytes) first.
func (p *Pipeline) propose(o *op) (group.Proposal, error) {
	wait := p.cfg.RetryFirst
	var last error // of the previous attempt
	for {
		if last != nil && p.cfg.Applied != nil && mayHaveCommitted(last) {
			if out, ok := p.cfg.Applied(o.batch); ok {
				p.m.foundApplied.Inc()
				o.found = true
				return out, nil
			}
		}
		if err := p.admit.acquire(p.ctx, uint64(o.lsn), len(o.batch)); err != nil {
			return group.Proposal{}, fmt.Errorf("%w: LSN %d not yet at %s", group.ErrClosed, o.lsn, p.cfg.Tier)
		}
		changed := p.leaderChange() // before the attempt: a change during it counts
		o.epoch = p.epoch.Load()
		out, err := p.attempt(o.batch)
		p.admit.release(len(o.batch))
		last = err
		if err == nil {
			return out, nil
		}
		if errors.Is(err, group.ErrInvalidBatch) || errors.Is(err, group.ErrBadEntry) {
			return group.Proposal{}, err
		}
		if p.ctx.Err() != nil {
			return group.Proposal{}, fmt.Errorf("%w: LSN %d not yet at %s: %w", group.ErrClosed, o.lsn, p.cfg.Tier, err)
		}
		p.m.retries.Inc()
		p.log.Debug("propose failed, retrying", "lsn", o.lsn, "wait", wait, "err", err)
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-t.C:
			wait = min(2*wait, p.cfg.RetryMax)
		case <-changed:
			t.Stop()
			wait = p.cfg.RetryFirst
		case <-p.ctx.Done():
			t.Stop()
		}
	}
}

// mayHaveCommitted reports whether to ask Applied after a failed attempt:
// it timed out or lost its answer (a network error), the case of a busy
// leader. Not after a refusal before proposing (backpressure) nor after a
// NotLeaderError: without a leader every pending record retries at least
// every RetryMax, and all at once at each leader change, so a ledger read
// per retry would load a node that is already struggling (seen in the 1M
// wal-bound run). A NotLeaderError for leadership lost mid-flight may hide
// a commit; its retry then commits a duplicate, which apply makes
// harmless, and reaches the tier once there is a leader.
func mayHaveCommitted(err error) bool {
	return !errors.Is(err, group.ErrNotLeader) && !errors.Is(err, group.ErrBackpressure)
}

// walFailed calls OnFatal (once) if err says the NodeWAL has stopped.
func (p *Pipeline) walFailed(err error) {
	if p.cfg.OnFatal != nil && errors.Is(err, wal.ErrStopped) {
		p.fatalOnce.Do(func() { p.cfg.OnFatal(fmt.Errorf("nodewal: %w", err)) })
	}
}

// LeaderChanged wakes every record waiting out a retry backoff, to try
// the group's new leader at once: after a failover the backoff had grown
// towards RetryMax and held writes back by up to that long (15-365 ms
// measured after a gate leader's kill). The node calls it on every Raft
// leader observation.
func (p *Pipeline) LeaderChanged() {
	p.leaderMu.Lock()
	close(p.leaderCh)
	p.leaderCh = make(chan struct{})
	p.leaderMu.Unlock()
}

// leaderChange returns a channel closed at the next LeaderChanged.
func (p *Pipeline) leaderChange() <-chan struct{} {
	p.leaderMu.Lock()
	defer p.leaderMu.Unlock()
	return p.leaderCh
}

// attempt proposes batch once: on this node, or, when it is a follower
// that knows the leader, through the Forwarder.
func (p *Pipeline) attempt(batch []byte) (group.Proposal, error) {
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.AttemptTimeout)
	defer cancel()
	out, err := p.cfg.Committer.Propose(ctx, batch)
	var nl *group.NotLeaderError
	if err == nil || p.cfg.Forwarder == nil || !errors.As(err, &nl) || nl.Leader.ID == "" {
		return out, err
	}
	p.m.forwarded.Inc()
	return p.cfg.Forwarder.Forward(ctx, nl.Leader, batch)
}

// reached records that lsn reached the tier, needing nothing of the
// ledger before it may be compacted (refused, or not a ledger batch), and
// wakes the flusher if the watermark moved.
func (p *Pipeline) reached(lsn wal.LSN) { p.reachedNeeding(lsn, need{}) }

// reachedAt records that lsn reached the tier in the entry at Raft index
// index, proposed by an attempt started at epoch (cover.go). An index of 0
// (a leader that did not say) is unknown: a later attempt's index bounds
// it.
func (p *Pipeline) reachedAt(lsn wal.LSN, index, epoch uint64) {
	if index == 0 {
		p.reachedNeeding(lsn, need{epoch: p.epoch.Add(1)})
		return
	}
	p.reachedNeeding(lsn, need{index: index})
	p.marks.resolve(index, epoch)
}

func (p *Pipeline) reachedNeeding(lsn wal.LSN, n need) {
	if _, moved := p.marks.finishNeeding(lsn, n); moved {
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// flushLoop writes the watermark to the NodeWAL's checkpoint whenever it
// moved, at most once per WatermarkInterval: a checkpoint costs two
// fsyncs that compete with the NodeWAL's and Raft's, and progress made in
// between is coalesced into the next write.
func (p *Pipeline) flushLoop() {
	defer close(p.flushDone)
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		select {
		case <-p.kick:
		case <-p.stopFlush:
			p.flush()
			return
		}
		p.flush()
		pause.Reset(p.cfg.WatermarkInterval)
		select {
		case <-pause.C:
		case <-p.stopFlush:
			p.flush()
			return
		}
	}
}

func (p *Pipeline) flush() {
	mark := p.marks.Mark()
	if mark <= p.persisted {
		return
	}
	if err := p.cfg.WAL.SetWatermark(p.level, mark); err != nil {
		p.log.Error("set NodeWAL watermark", "level", p.level, "lsn", mark, "err", err)
		p.walFailed(err)
		return
	}
	p.persisted = mark
	p.m.watermark.Set(float64(mark))
}

// Recover re-proposes every ledger record of the NodeWAL above the tier
// watermark that was on disk when the pipeline was made, each in its own
// background climb like a LOCAL-acknowledged Submit. It returns how many
// it started, once all are started; they reach the tier later (see
// Watermark). Records are admitted as slots free (MaxPending), so Recover
// waits while the pipeline is full, until ctx ends. Records of other types
// count as reached, and so do records already refused. Call it once.
func (p *Pipeline) Recover(ctx context.Context) (int, error) {
	if !p.recovered.CompareAndSwap(false, true) {
		return 0, errors.New("cluster: pipeline: Recover called twice")
	}
	if p.recoverFrom > p.recoverTo {
		return 0, nil
	}
	it, err := p.cfg.WAL.Iterator(p.recoverFrom)
	if err != nil {
		return 0, fmt.Errorf("cluster: recover from LSN %d: %w", p.recoverFrom, err)
	}
	defer it.Close()
	n := 0
	for it.Next() {
		e := it.Entry()
		if e.LSN > p.recoverTo {
			break
		}
		if e.Type == WALRecordStaged && p.cfg.OnStaged != nil {
			p.marks.add(e.LSN) // held until its owner releases it
			p.cfg.OnStaged(e.LSN, bytes.Clone(e.Payload))
			continue
		}
		if e.Type != WALRecordLedgerBatch {
			p.reached(e.LSN)
			continue
		}
		if _, refused, _ := p.refusals.get(e.LSN); refused {
			// Refused before the node stopped, its watermark not yet
			// checkpointed: a refusal is final (its client may have read
			// it and resubmitted), so it is not proposed again.
			p.reached(e.LSN)
			continue
		}
		if err := p.launchRecovered(ctx, e.LSN, e.HLC, bytes.Clone(e.Payload)); err != nil {
			return n, fmt.Errorf("cluster: recover LSN %d: %w", e.LSN, err)
		}
		n++
		p.m.reproposed.Inc()
	}
	if err := it.Err(); err != nil {
		return n, fmt.Errorf("cluster: recover: read NodeWAL: %w", err)
	}
	p.log.Info("recovery: re-proposing NodeWAL records", "from", p.recoverFrom, "to", p.recoverTo, "records", n)
	return n, nil
}

// launchRecovered waits for a slot and starts a recovered record's climb.
func (p *Pipeline) launchRecovered(ctx context.Context, lsn wal.LSN, ts hlc.Timestamp, batch []byte) error {
	select {
	case p.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-p.ctx.Done():
		return group.ErrClosed
	}
	p.closeMu.RLock()
	defer p.closeMu.RUnlock()
	if p.closed {
		<-p.slots
		return group.ErrClosed
	}
	p.startClimbLocked(&op{lsn: lsn, ts: ts, batch: batch, done: make(chan struct{})}, nil)
	return nil
}

// QueueFill is how full the pipeline is, 0 to 1: the records between
// their NodeWAL append and their tier over MaxPending, the queue whose
// overflow turns writes into ErrBackpressure. Workers slow down from it
// (their heartbeat's backpressure level).
func (p *Pipeline) QueueFill() float64 {
	return float64(len(p.slots)) / float64(cap(p.slots))
}

// Watermark returns the tier watermark as this pipeline knows it: every
// record at or below it has reached the tier. The NodeWAL's checkpoint
// follows it shortly.
func (p *Pipeline) Watermark() wal.LSN { return p.marks.Mark() }

// Covered returns the highest LSN L such that every record at or below L
// has reached the tier, with the tier watermark of the NodeWAL's
// checkpoint at L or beyond, and was carried by a Raft entry at or below
// index (cover.go says why and how the index is known). Records at or
// below L need nothing more of the NodeWAL once this node's ledger state
// at index is durable: with index the node's applied index it is the
// APPLIED watermark, with the index of its last Raft snapshot on disk the
// COMPACTED one. It never goes below the COMPACTED watermark the pipeline
// started from or was told of (Forget).
func (p *Pipeline) Covered(index uint64) wal.LSN {
	l := p.marks.coveredBy(index)
	return min(l, max(p.cfg.WAL.Watermarks().Get(p.level), p.marks.base()))
}

// Forget drops what the pipeline knows of records at or below lsn: the
// NodeWAL's COMPACTED watermark, once set.
func (p *Pipeline) Forget(lsn wal.LSN) { p.marks.forgetUpTo(lsn) }

// Tier returns the node's tier.
func (p *Pipeline) Tier() Durability { return p.cfg.Tier }

// Close stops the climbs (records not at the tier stay in the NodeWAL for
// Recover), writes the last watermark and returns. Submits waiting fail
// with ErrClosed. It closes neither the NodeWAL nor the Committer.
func (p *Pipeline) Close() error {
	p.closeOnce.Do(func() {
		p.closeMu.Lock()
		p.closed = true
		p.closeMu.Unlock()
		p.cancel()
		p.climbs.Wait()
		close(p.stopFlush)
		<-p.flushDone
		if err := p.refusals.close(); err != nil {
			p.log.Error("close refusals", "err", err)
		}
	})
	return nil
}
