package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/lifecycle/plan"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Forwarder limits and timings (DESIGN §4, §13).
const (
	// forwarderQueueLimit bounds the events read ahead of delivery while
	// the gates are unreachable; the rest wait in the ledger.
	forwarderQueueLimit = 100_000
	// forwardBatchEvents bounds one delivery to the gates.
	forwardBatchEvents = 500
	// forwardAttemptTimeout bounds one delivery: a black-holed gate costs
	// this much per attempt, and five attempts open the breaker.
	forwardAttemptTimeout = 2 * time.Second
	// forwardBackoffMin and forwardBackoffMax bound the pause after a
	// failed delivery while the breaker is still closed.
	forwardBackoffMin = 100 * time.Millisecond
	forwardBackoffMax = 5 * time.Second
	// forwardMarkInterval rate-limits position updates that forward
	// nothing (the region's own workflow events move the chains too).
	forwardMarkInterval = 500 * time.Millisecond
	// forwardMarksPerEvent keeps a ForwardMark body under the 64 KiB
	// event limit with the longest tenant names (64 bytes each); more
	// tenants wait for the next mark.
	forwardMarksPerEvent = 512
)

// queued is a forwardable event and its place in its tenant's chain.
type queued struct {
	tenant string
	seq    uint64
	event  fsm.Event
}

// forwarder carries a regional leader's job events to the global group:
// per tenant in chain order (FIFO), batched, retried with backoff, behind
// a circuit breaker. Its position is the ForwardMark in the regional
// ledger, so a new leader resumes where the old one stopped; the global
// apply is idempotent by event id, so events sent but not yet marked are
// merely sent again. Wall time (backoff, breaker, lag) comes from
// Config.Now.
type forwarder struct {
	l  *Lifecycle
	m  *forwarderMetrics
	br *breaker

	queue    []queued
	queued   map[string]int    // tenant → its events in the queue
	readPos  map[string]uint64 // tenant → last chain seq read into the queue
	marked   map[string]uint64 // tenant → replicated position
	lastMark time.Time
	backoff  time.Duration

	mu     sync.Mutex
	status api.ForwarderStatus
}

func newForwarder(l *Lifecycle) *forwarder {
	f := &forwarder{l: l, m: l.fwdM, queued: map[string]int{}, readPos: map[string]uint64{}, marked: map[string]uint64{}}
	f.br = newBreaker(l.cfg.BreakerCooldown, func(from, to breakerState) {
		l.log.Warn("forwarder breaker", "from", from.String(), "to", to.String())
		f.m.transitions.WithLabelValues(to.String()).Inc()
		f.m.state.Set(float64(to))
	})
	f.m.state.Set(float64(breakerClosed))
	return f
}

// run forwards until ctx ends (leadership lost or node closing).
func (f *forwarder) run(ctx context.Context) {
	if !f.start(ctx) {
		return
	}
	tick := time.NewTicker(f.l.cfg.ReconcileInterval)
	defer tick.Stop()
	for ctx.Err() == nil {
		moved := f.l.cfg.Applied.Changed()
		wait, err := f.step(ctx)
		f.report(err)
		if wait == 0 {
			continue
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
		case <-moved:
			waitOrDone(ctx, reconcileCoalesce)
		case <-timer.C:
		case <-tick.C:
		}
		timer.Stop()
	}
}

// start reads the replicated positions, retrying every
// ReconcileInterval (with the error in the status) until it can: a
// forwarder that gave up would stop forwarding for the whole term. False
// if ctx ended first.
func (f *forwarder) start(ctx context.Context) bool {
	var last string
	for {
		marks, err := f.l.cfg.Positions.ForwardMarks()
		if err == nil {
			for t, s := range marks {
				f.readPos[t], f.marked[t] = s, s
			}
			return true
		}
		err = fmt.Errorf("forwarder: read positions: %w", err)
		if err.Error() != last {
			f.l.log.Warn("forwarder cannot start", "err", err)
			last = err.Error()
		}
		f.report(err)
		if !waitOrDone(ctx, f.l.cfg.ReconcileInterval) {
			return false
		}
	}
}

// step reads new events into the queue, delivers the queue's head and
// records the new position. It returns how long to wait before the next
// step (0: go on at once).
func (f *forwarder) step(ctx context.Context) (time.Duration, error) {
	if err := f.fill(); err != nil {
		return f.l.cfg.ReconcileInterval, err
	}
	now := f.l.cfg.Now()
	if len(f.queue) == 0 {
		if err := f.mark(ctx, now, false); err != nil {
			return f.l.cfg.ReconcileInterval, err
		}
		return time.Hour, nil // woken by the next apply or tick
	}
	if !f.br.allow(now) {
		_, until := f.br.State()
		return max(until.Sub(now), reconcileCoalesce), nil
	}
	head := f.queue[:min(len(f.queue), forwardBatchEvents)]
	events := make([]fsm.Event, len(head))
	for i := range head {
		events[i] = head[i].event
	}
	chunks, err := chunkEvents(events)
	if err != nil {
		return f.l.cfg.ReconcileInterval, err
	}
	sent := chunks[0]
	deliver := f.lose(sent)
	if len(deliver) > 0 {
		var batch []byte
		if batch, err = fsm.EncodeBatch(deliver); err == nil {
			dctx, cancel := context.WithTimeout(ctx, forwardAttemptTimeout)
			var results []fsm.Result
			results, err = f.l.cfg.Deliverer.Deliver(dctx, f.l.cfg.GlobalGroup, batch)
			cancel()
			if err == nil {
				f.logRejections(deliver, results)
			}
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil
		}
		f.br.failure(f.l.cfg.Now())
		f.m.failures.Inc()
		f.backoff = min(max(2*f.backoff, forwardBackoffMin), forwardBackoffMax)
		return f.backoff, fmt.Errorf("forward %d events to the gates: %w", len(sent), err)
	}
	f.br.success()
	f.backoff = 0
	f.m.forwarded.Add(float64(len(sent)))
	f.sent(len(sent))
	return 0, f.mark(ctx, now, true)
}

// lose drops the events fault injection says to lose (Config.LoseForwarded).
func (f *forwarder) lose(sent []fsm.Event) []fsm.Event {
	if f.l.cfg.LoseForwarded == nil {
		return sent
	}
	kept := slices.DeleteFunc(slices.Clone(sent), func(e fsm.Event) bool { return f.l.cfg.LoseForwarded(&e) })
	if n := len(sent) - len(kept); n > 0 {
		f.l.log.Warn("fault injection: the forwarder lost events on their way to the gates", "events", n)
	}
	return kept
}

// fill reads events past each tenant's read position into the queue, up
// to forwarderQueueLimit.
func (f *forwarder) fill() error {
	errFull := errors.New("queue full")
	region := f.l.cfg.Region
	var lag uint64
	err := f.l.reads.View(func(tx fsm.ReadTx) error {
		return tx.ChainHeads(func(tenant string, head fsm.ChainHead) error {
			if tenant == "" {
				return nil
			}
			lag += head.Seq - min(head.Seq, f.marked[tenant])
			if len(f.queue) >= forwarderQueueLimit || head.Seq <= f.readPos[tenant] {
				return nil
			}
			err := tx.ChainEvents(tenant, f.readPos[tenant], func(se *fsm.StoredEvent) error {
				if len(f.queue) >= forwarderQueueLimit {
					return errFull
				}
				if plan.Forwarded(&se.Event, region) {
					f.queue = append(f.queue, queued{tenant: tenant, seq: se.Seq, event: se.Event})
					f.queued[tenant]++
				}
				f.readPos[tenant] = se.Seq
				return nil
			})
			if errors.Is(err, errFull) {
				return nil
			}
			return err
		})
	})
	f.m.lagEvents.Set(float64(lag))
	f.m.queueDepth.Set(float64(len(f.queue)))
	if len(f.queue) > 0 {
		f.m.lagSeconds.Set(max(0, f.l.cfg.Now().Sub(time.UnixMilli(f.queue[0].event.HLC.WallMs)).Seconds()))
	} else {
		f.m.lagSeconds.Set(0)
	}
	return err
}

// mark proposes the positions that moved: for a tenant with events still
// queued, just before its first queued event; otherwise its read
// position. Without forwarded events (force false) it waits
// forwardMarkInterval between proposals.
func (f *forwarder) mark(ctx context.Context, now time.Time, force bool) error {
	if !force && now.Sub(f.lastMark) < forwardMarkInterval {
		return nil
	}
	marks := f.positions()
	if len(marks) == 0 {
		return nil
	}
	marks = marks[:min(len(marks), forwardMarksPerEvent)]
	// A random id: positions are not decisions, two leaders' marks need
	// not be one event.
	e := []fsm.Event{{Type: fsm.TypeForwardMark, Body: &fsm.ForwardMark{Marks: marks}}}
	if err := f.l.cfg.Stamper.Own(&e[0]); err != nil {
		return err
	}
	if _, err := f.l.cfg.Submitter.Submit(ctx, e); err != nil {
		return fmt.Errorf("forwarder: record position: %w", err)
	}
	f.lastMark = now
	for _, m := range marks {
		f.marked[m.Tenant] = m.Seq
	}
	return nil
}

// sent drops the first n queued events, delivered. It does not copy the
// rest (a replay after a long outage sends up to forwarderQueueLimit
// events, batch by batch); append reallocates to the live part once the
// capacity is used.
func (f *forwarder) sent(n int) {
	for _, q := range f.queue[:n] {
		f.queued[q.tenant]--
	}
	clear(f.queue[:n])
	f.queue = f.queue[n:]
}

// positions returns, in tenant order, the positions that moved past the
// replicated ones: for a tenant with events still queued, just before its
// first queued event; otherwise its read position.
func (f *forwarder) positions() []fsm.ForwardPosition {
	pos := make(map[string]uint64, len(f.readPos))
	for t, s := range f.readPos {
		pos[t] = s
	}
	// Each tenant's queued events are in seq order: its first one found
	// from the head bounds its position; stop once every tenant with
	// queued events was found.
	pending := 0
	for _, n := range f.queued {
		if n > 0 {
			pending++
		}
	}
	seen := make(map[string]bool, pending)
	for i := 0; i < len(f.queue) && len(seen) < pending; i++ {
		if q := f.queue[i]; !seen[q.tenant] {
			seen[q.tenant] = true
			pos[q.tenant] = q.seq - 1
		}
	}
	var marks []fsm.ForwardPosition
	for t, s := range pos {
		if s > f.marked[t] {
			marks = append(marks, fsm.ForwardPosition{Tenant: t, Seq: s})
		}
	}
	sort.Slice(marks, func(i, j int) bool { return marks[i].Tenant < marks[j].Tenant })
	return marks
}

// logRejections logs forwarded events the global ledger refused (other
// than as duplicates): they are not retried, which would block the queue.
func (f *forwarder) logRejections(sent []fsm.Event, results []fsm.Result) {
	for i, r := range results {
		if i < len(sent) && r.Outcome == fsm.OutcomeRejected && !errors.Is(r.Err, fsm.ErrEventConflict) {
			f.m.rejected.Inc()
			f.l.log.Warn("forwarded event rejected by the global ledger", "type", sent[i].Type, "job", sent[i].JobID, "err", r.Err)
		}
	}
}

// report refreshes the status GET /v1/cluster/raft shows.
func (f *forwarder) report(err error) {
	st, until := f.br.State()
	s := api.ForwarderStatus{Breaker: st.String(), QueueDepth: len(f.queue)}
	if st == breakerOpen {
		s.HalfOpenAt = until.UTC().Format(time.RFC3339Nano)
	}
	if len(f.queue) > 0 {
		s.OldestQueuedHLC = f.queue[0].event.HLC.String()
	}
	f.mu.Lock()
	s.LastError = f.status.LastError // the last one, kept until another
	if err != nil {
		s.LastError = err.Error()
	}
	f.status = s
	f.mu.Unlock()
}

// Status returns the forwarder's last reported status.
func (f *forwarder) Status() api.ForwarderStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status
}

// forwarderMetrics are strata_forwarder_* (DESIGN §12).
type forwarderMetrics struct {
	lagEvents, lagSeconds, queueDepth, state prometheus.Gauge
	transitions                              *prometheus.CounterVec
	forwarded, failures, rejected            prometheus.Counter
}

func newForwarderMetrics(reg prometheus.Registerer) *forwarderMetrics {
	g := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_forwarder_" + name, Help: help})
	}
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_forwarder_" + name, Help: help})
	}
	m := &forwarderMetrics{
		lagEvents:  g("lag_events", "Regional ledger events (of tenant chains) past the forwarder's replicated position."),
		lagSeconds: g("lag_seconds", "Age of the oldest event waiting to be forwarded to the gates."),
		queueDepth: g("queue_depth", "Forwardable events read ahead and waiting for delivery (bounded)."),
		state:      g("breaker_state", "Circuit breaker towards the gates: 0 closed, 1 open, 2 half-open."),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_forwarder_breaker_transitions_total",
			Help: "Circuit breaker transitions by the state entered."}, []string{"to"}),
		forwarded: c("events_total", "Events delivered to the global ledger."),
		failures:  c("failures_total", "Failed deliveries to the global ledger."),
		rejected:  c("rejected_total", "Forwarded events the global ledger rejected (not as duplicates)."),
	}
	reg.MustRegister(m.lagEvents, m.lagSeconds, m.queueDepth, m.state, m.transitions, m.forwarded, m.failures, m.rejected)
	return m
}
