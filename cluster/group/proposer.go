package group

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/fsm"
)

// Sentinel errors of the commit path.
var (
	// ErrNotLeader is matched (errors.Is) by *NotLeaderError.
	ErrNotLeader = errors.New("cluster: not the raft leader")
	// ErrBackpressure is returned when a bounded queue of the commit path
	// is full; nothing was queued. Retry later or shed.
	ErrBackpressure = errors.New("cluster: commit queue full")
	// ErrClosed is returned by a Proposer or Pipeline after Close.
	ErrClosed = errors.New("cluster: closed")
)

// Leader names a Raft group's leader: where a follower forwards writes.
type Leader struct {
	ID   string // Raft server id, the node id
	Addr string // Raft address
}

// NotLeaderError is returned to a write that reached a node which is not
// (or stopped being) the leader. Leader is the leader this node knows of,
// zero when there is none (an election is running or there is no
// quorum). A write that fails with it may or may not have been committed
// (leadership lost while in flight): proposing it again is safe, applying
// is idempotent by event id.
type NotLeaderError struct {
	Leader Leader
	Err    error // cause: raft.ErrNotLeader, raft.ErrLeadershipLost, ...
}

func (e *NotLeaderError) Error() string {
	if e.Leader.ID == "" {
		return fmt.Sprintf("cluster: not the raft leader, no leader known: %v", e.Err)
	}
	return fmt.Sprintf("cluster: not the raft leader, leader is %s at %s: %v", e.Leader.ID, e.Leader.Addr, e.Err)
}

// Is makes errors.Is(err, ErrNotLeader) hold.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// Unwrap returns the cause.
func (e *NotLeaderError) Unwrap() error { return e.Err }

// Proposal is the outcome of a committed batch: the Raft index of the
// entry that carried it (for session tokens) and one result per event of
// the batch, in batch order.
type Proposal struct {
	Index   uint64
	Results []fsm.Result
}

// Defaults of ProposerConfig.
const (
	// DefaultProposerInFlight is the number of raft.Apply calls kept in
	// flight. hashicorp/raft pipelines them (one log write and one
	// AppendEntries for many); more depth means smaller entries. See
	// BenchmarkProposerDepth for the measurement behind the value.
	DefaultProposerInFlight    = 2
	DefaultProposerQueueCount  = 4096
	DefaultProposerQueueBytes  = 64 << 20
	DefaultProposerEnqueueWait = time.Second
)

// ProposerConfig configures a Proposer. Zero fields take the defaults.
type ProposerConfig struct {
	// MaxEntryBytes, MaxEntryBatches and MaxEntryEvents close an entry
	// (defaults MaxEntryBytes, MaxEntryBatches, MaxEntryEvents; they may
	// only be lowered). MaxEntryBatches 1 turns batching off.
	MaxEntryBytes   int
	MaxEntryBatches int
	MaxEntryEvents  int
	// MaxInFlight bounds the raft.Apply calls not yet applied.
	MaxInFlight int
	// QueueBatches and QueueBytes bound what waits for an entry; beyond
	// either, Propose fails at once with ErrBackpressure.
	QueueBatches int
	QueueBytes   int
	// EnqueueTimeout bounds how long raft.Apply may wait to hand an entry
	// to the Raft leader loop.
	EnqueueTimeout time.Duration
	// Registerer nil registers nothing.
	Registerer prometheus.Registerer
}

// Validate fills the defaults of zero fields and checks c.
func (c *ProposerConfig) Validate() error {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxEntryBytes, MaxEntryBytes)
	def(&c.MaxEntryBatches, MaxEntryBatches)
	def(&c.MaxEntryEvents, MaxEntryEvents)
	def(&c.MaxInFlight, DefaultProposerInFlight)
	def(&c.QueueBatches, DefaultProposerQueueCount)
	def(&c.QueueBytes, DefaultProposerQueueBytes)
	if c.EnqueueTimeout == 0 {
		c.EnqueueTimeout = DefaultProposerEnqueueWait
	}
	switch {
	case c.MaxEntryBytes < fsm.MaxBatchBytes+entryOverheadBytes/2 || c.MaxEntryBytes > MaxEntryBytes:
		return fmt.Errorf("cluster: proposer config: MaxEntryBytes %d outside [%d, %d]", c.MaxEntryBytes, fsm.MaxBatchBytes+entryOverheadBytes/2, MaxEntryBytes)
	case c.MaxEntryBatches < 1 || c.MaxEntryBatches > MaxEntryBatches:
		return fmt.Errorf("cluster: proposer config: MaxEntryBatches %d outside [1, %d]", c.MaxEntryBatches, MaxEntryBatches)
	case c.MaxEntryEvents < fsm.MaxBatchEvents || c.MaxEntryEvents > MaxEntryEvents:
		return fmt.Errorf("cluster: proposer config: MaxEntryEvents %d outside [%d, %d]", c.MaxEntryEvents, fsm.MaxBatchEvents, MaxEntryEvents)
	case c.MaxInFlight < 1 || c.MaxInFlight > 1024:
		return fmt.Errorf("cluster: proposer config: MaxInFlight %d outside [1, 1024]", c.MaxInFlight)
	case c.QueueBatches < 1 || c.QueueBytes < fsm.MaxBatchBytes:
		return fmt.Errorf("cluster: proposer config: QueueBatches %d < 1 or QueueBytes %d < %d", c.QueueBatches, c.QueueBytes, fsm.MaxBatchBytes)
	case c.EnqueueTimeout < 0:
		return fmt.Errorf("cluster: proposer config: EnqueueTimeout %s is negative", c.EnqueueTimeout)
	}
	return nil
}

// Proposer is the leader side of the commit path: concurrent callers hand
// it encoded fsm batches; it packs the batches waiting while earlier
// entries are in flight into one Raft entry (up to MaxEntryBytes,
// MaxEntryBatches, MaxEntryEvents), so Raft's fsync and round trip are
// shared, and hands each caller the index of its entry and its own
// results once the entry is applied on this node.
//
// One goroutine (run) builds entries and calls raft.Apply, keeping at most
// MaxInFlight of them unapplied; another (wait) waits for their futures in
// order (Raft applies in index order) and answers the callers. The queue
// is bounded: Propose never blocks on a full one, it fails with
// ErrBackpressure. On a node that is not the leader, Propose fails at once
// with a *NotLeaderError naming the leader, so the caller can forward.
//
// Methods are safe for concurrent use.
type Proposer struct {
	cfg  ProposerConfig
	raft *raft.Raft
	m    *proposerMetrics

	mu          sync.Mutex // guards the queue and closed
	queue       []*proposal
	queuedBytes int
	closed      bool

	wake    chan struct{} // run has work; capacity 1
	slots   chan struct{} // one token per entry in flight
	flights chan *flight  // from run to wait, in proposal order
	stop    chan struct{} // closed by Close
	done    sync.WaitGroup
	once    sync.Once
}

// proposal is one caller's batch waiting for its entry.
type proposal struct {
	batch  []byte
	events int
	out    Proposal
	err    error
	done   chan struct{} // closed when out or err is set
}

func (p *proposal) finish(out Proposal, err error) {
	p.out, p.err = out, err
	close(p.done)
}

// flight is one raft.Apply in flight and the proposals it carries, in
// entry order.
type flight struct {
	future raft.ApplyFuture
	props  []*proposal
	start  time.Time
}

// NewProposer starts a proposer over r.
func NewProposer(r *raft.Raft, cfg ProposerConfig) (*Proposer, error) {
	if r == nil {
		return nil, errors.New("cluster: proposer: raft is required")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newProposerMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	p := &Proposer{
		cfg:     cfg,
		raft:    r,
		m:       m,
		wake:    make(chan struct{}, 1),
		slots:   make(chan struct{}, cfg.MaxInFlight),
		flights: make(chan *flight, cfg.MaxInFlight),
		stop:    make(chan struct{}),
	}
	p.done.Add(2)
	go p.run()
	go p.wait()
	return p, nil
}

// Propose commits batch (an fsm.EncodeBatch encoding) through Raft and
// returns once the entry that carries it is applied on this node. Errors:
// ErrInvalidBatch (nothing done), *NotLeaderError (forward to its
// Leader, or retry once one is elected), ErrBackpressure, ErrClosed,
// ctx's error (the batch may still commit), or the Raft or FSM error of
// the entry. After an error other than ErrInvalidBatch the batch may or
// may not have been committed; proposing it again is safe.
func (p *Proposer) Propose(ctx context.Context, batch []byte) (Proposal, error) {
	n, err := batchEventCount(batch)
	if err != nil {
		return Proposal{}, err
	}
	if err := p.notLeader(nil); err != nil {
		p.m.rejected.WithLabelValues("not_leader").Inc()
		return Proposal{}, err
	}
	pr := &proposal{batch: batch, events: n, done: make(chan struct{})}
	if err := p.enqueue(pr)[0]; err != nil {
		return Proposal{}, err
	}
	select {
	case <-pr.done:
		return pr.out, pr.err
	case <-ctx.Done():
		return Proposal{}, fmt.Errorf("cluster: propose: %w", ctx.Err())
	}
}

// ProposeMany is Propose for several batches at once, as a follower's
// coalesced forward hands them over: all are queued together (so they
// share entries) and each gets its own outcome, in order. A batch that
// fails validation or does not fit in the queue fails alone.
func (p *Proposer) ProposeMany(ctx context.Context, batches [][]byte) ([]Proposal, []error) {
	outs, errs := make([]Proposal, len(batches)), make([]error, len(batches))
	if err := p.notLeader(nil); err != nil {
		p.m.rejected.WithLabelValues("not_leader").Add(float64(len(batches)))
		for i := range errs {
			errs[i] = err
		}
		return outs, errs
	}
	props := make([]*proposal, 0, len(batches))
	at := make([]int, 0, len(batches)) // props[k] is batches[at[k]]
	for i, b := range batches {
		n, err := batchEventCount(b)
		if err != nil {
			errs[i] = err
			continue
		}
		props = append(props, &proposal{batch: b, events: n, done: make(chan struct{})})
		at = append(at, i)
	}
	for k, err := range p.enqueue(props...) {
		if err != nil {
			errs[at[k]], props[k] = err, nil
		}
	}
	for k, pr := range props {
		if pr == nil {
			continue
		}
		select {
		case <-pr.done:
			outs[at[k]], errs[at[k]] = pr.out, pr.err
		case <-ctx.Done():
			errs[at[k]] = fmt.Errorf("cluster: propose: %w", ctx.Err())
		}
	}
	return outs, errs
}

// ProposeMark commits a checkpoint mark (EntryMark) and returns its index
// once it is applied on this node: every replica records its anti-entropy
// checkpoint at that index. Only the leader may; others get a
// *NotLeaderError. A mark does not go through the batch queue: it is one
// byte and rare (one per anti-entropy round).
func (p *Proposer) ProposeMark(ctx context.Context) (uint64, error) {
	if err := p.notLeader(nil); err != nil {
		return 0, err
	}
	f := p.raft.Apply(markEntry, p.cfg.EnqueueTimeout)
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
				return 0, p.notLeader(err)
			}
			return 0, fmt.Errorf("cluster: propose mark: %w", err)
		}
		if resp, ok := f.Response().(*entryResponse); ok && resp.err != nil {
			return 0, resp.err
		}
		return f.Index(), nil
	case <-ctx.Done():
		return 0, fmt.Errorf("cluster: propose mark: %w", ctx.Err())
	}
}

// CheckLeader returns a *NotLeaderError (naming the leader this node
// knows of) unless this node leads: a forwarded call is refused before
// anything of it is queued.
func (p *Proposer) CheckLeader() error { return p.notLeader(nil) }

// notLeader returns a *NotLeaderError if this node is not the leader.
func (p *Proposer) notLeader(cause error) error {
	if cause == nil && p.raft.State() == raft.Leader {
		return nil
	}
	if cause == nil {
		cause = raft.ErrNotLeader
	}
	addr, id := p.raft.LeaderWithID()
	return &NotLeaderError{Leader: Leader{ID: string(id), Addr: string(addr)}, Err: cause}
}

// enqueue adds prs to the queue, each if there is room for it, and wakes
// run once; errs[i] is prs[i]'s refusal. Adding them under one lock lets
// a coalesced forward's batches share entries.
func (p *Proposer) enqueue(prs ...*proposal) (errs []error) {
	errs = make([]error, len(prs))
	added := 0
	p.mu.Lock()
	for i, pr := range prs {
		switch {
		case p.closed:
			errs[i] = ErrClosed
		case len(p.queue) >= p.cfg.QueueBatches || p.queuedBytes+len(pr.batch) > p.cfg.QueueBytes:
			p.m.rejected.WithLabelValues("backpressure").Inc()
			errs[i] = fmt.Errorf("%w: proposer queue holds %d batches", ErrBackpressure, p.cfg.QueueBatches)
		default:
			p.queue = append(p.queue, pr)
			p.queuedBytes += len(pr.batch)
			added++
		}
	}
	p.m.queued.Set(float64(len(p.queue)))
	p.mu.Unlock()
	if added > 0 {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
	return errs
}

// run builds entries: it takes a slot (waiting while MaxInFlight entries
// are in flight, during which the queue keeps filling), then takes what
// the queue holds, up to the entry limits, and proposes it.
func (p *Proposer) run() {
	defer p.done.Done()
	defer close(p.flights)
	for {
		select {
		case p.slots <- struct{}{}:
		case <-p.stop:
			return
		}
		props := p.take()
		for props == nil {
			select {
			case <-p.wake:
				props = p.take()
			case <-p.stop:
				return
			}
		}
		p.propose(props)
	}
}

// take removes the next entry's proposals from the queue, nil if empty.
func (p *Proposer) take() []*proposal {
	p.mu.Lock()
	defer p.mu.Unlock()
	size, events, n := 1+UvarintLen(uint64(len(p.queue))), 0, 0
	for n < len(p.queue) && n < p.cfg.MaxEntryBatches {
		pr := p.queue[n]
		grow := UvarintLen(uint64(len(pr.batch))) + len(pr.batch)
		if n > 0 && (size+grow > p.cfg.MaxEntryBytes || events+pr.events > p.cfg.MaxEntryEvents) {
			break
		}
		size += grow
		events += pr.events
		p.queuedBytes -= len(pr.batch)
		n++
	}
	if n == 0 {
		return nil
	}
	props := make([]*proposal, n)
	copy(props, p.queue)
	clear(p.queue[:n])
	p.queue = p.queue[n:]
	if len(p.queue) == 0 {
		p.queue = nil // let the backing array go
	}
	p.m.queued.Set(float64(len(p.queue)))
	return props
}

// propose hands one entry to Raft, or fails its proposals at once.
func (p *Proposer) propose(props []*proposal) {
	if err := p.notLeader(nil); err != nil {
		p.m.rejected.WithLabelValues("not_leader").Add(float64(len(props)))
		p.fail(props, err)
		<-p.slots
		return
	}
	batches := make([][]byte, len(props))
	for i, pr := range props {
		batches[i] = pr.batch
	}
	data := AppendEntry(make([]byte, 0, EncodedEntryLen(batches)), batches)
	p.m.entries.Inc()
	p.m.entryBatches.Observe(float64(len(props)))
	p.m.entryBytes.Observe(float64(len(data)))
	p.m.inFlight.Inc()
	p.flights <- &flight{future: p.raft.Apply(data, p.cfg.EnqueueTimeout), props: props, start: time.Now()}
}

// wait answers the proposals of each flight once Raft has applied (or
// failed) its entry, and frees the flight's slot.
func (p *Proposer) wait() {
	defer p.done.Done()
	for fl := range p.flights {
		err := fl.future.Error()
		p.m.commitSeconds.Observe(time.Since(fl.start).Seconds())
		p.m.inFlight.Dec()
		<-p.slots
		if err != nil {
			p.fail(fl.props, p.raftError(err))
			continue
		}
		resp, ok := fl.future.Response().(*entryResponse)
		switch {
		case !ok:
			p.fail(fl.props, fmt.Errorf("cluster: entry %d: unexpected fsm response %T", fl.future.Index(), fl.future.Response()))
		case resp.err != nil:
			p.fail(fl.props, resp.err)
		case len(resp.batches) != len(fl.props):
			p.fail(fl.props, fmt.Errorf("cluster: entry %d: %d batch results for %d batches", fl.future.Index(), len(resp.batches), len(fl.props)))
		default:
			for i, pr := range fl.props {
				pr.finish(Proposal{Index: fl.future.Index(), Results: resp.batches[i]}, nil)
			}
		}
	}
}

// raftError maps an ApplyFuture error for callers.
func (p *Proposer) raftError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return p.notLeader(err)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: raft: %w", ErrClosed, err)
	}
	return fmt.Errorf("cluster: raft apply: %w", err)
}

func (p *Proposer) fail(props []*proposal, err error) {
	for _, pr := range props {
		pr.finish(Proposal{}, err)
	}
}

// Leader returns the leader this node knows of (zero if none).
func (p *Proposer) Leader() Leader {
	addr, id := p.raft.LeaderWithID()
	return Leader{ID: string(id), Addr: string(addr)}
}

// Close fails what is queued with ErrClosed, waits for the entries in
// flight to be applied or failed (Raft must still run, or have been shut
// down), and stops. It does not stop Raft.
func (p *Proposer) Close() error {
	p.once.Do(func() {
		p.mu.Lock()
		p.closed = true
		queued := p.queue
		p.queue, p.queuedBytes = nil, 0
		p.mu.Unlock()
		p.fail(queued, ErrClosed)
		close(p.stop)
		p.done.Wait()
	})
	return nil
}

// ApplyOne proposes batch alone in one entry with its own raft.Apply,
// without the Proposer's queue: the baseline the Proposer's benchmarks
// compare against (hashicorp/raft still groups concurrent Applies into one
// log write and one AppendEntries).
func (g *Group) ApplyOne(batch []byte, timeout time.Duration) (Proposal, error) {
	f := g.Raft.Apply(AppendEntry(nil, [][]byte{batch}), timeout)
	if err := f.Error(); err != nil {
		return Proposal{}, err
	}
	resp := f.Response().(*entryResponse)
	if resp.err != nil {
		return Proposal{}, resp.err
	}
	return Proposal{Index: f.Index(), Results: resp.batches[0]}, nil
}
