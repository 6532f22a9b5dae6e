package group

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/internal/metrics"
	"github.com/strata-ledger/strata/fsm"
)

// ErrFSMFailed marks a ledger whose store failed during an apply. The
// replica stops applying (it cannot skip an entry and stay equal to the
// others) and refuses snapshots; the node must be restarted, which
// replays the entries its store had not committed.
var ErrFSMFailed = errors.New("cluster: ledger fsm failed")

// FSM is the raft.FSM of a group: it applies Raft entries (entry.go
// envelopes of fsm batches) to an fsm.Ledger.
//
// Every command entry is one ledger transaction at its Raft index: all
// events of all its batches go to the Ledger in one call, because the
// Ledger skips an index at or below its applied index wholesale. (The
// node's bbolt store may then let several entries' transactions share
// one commit — group commit, fsm/boltstore — which keeps that rule: the
// applied index commits with the state it describes.) An entry
// with one batch goes through Ledger.ApplyEncoded (it reuses the encoded
// bodies for hashing); an entry with several is decoded batch by batch and
// applied with one Ledger.Apply. A batch that does not decode is rejected
// on its own (one OutcomeRejected result), the same way on every replica;
// an entry whose envelope does not decode is rejected whole, and its index
// is still recorded as applied.
//
// Raft calls ApplyBatch, Snapshot and Restore from one goroutine;
// FSMSnapshot.Persist runs concurrently with ApplyBatch, which the Ledger
// allows (Snapshot reads one consistent store view).
type FSM struct {
	ledger    *fsm.Ledger
	log       *slog.Logger
	m         *fsmMetrics
	onFatal   func(error)
	onApplied func(uint64)
	observer  ApplyObserver

	mu     sync.Mutex // guards failed
	failed error
}

var (
	_ raft.BatchingFSM = (*FSM)(nil)
	_ raft.FSMSnapshot = (*ledgerSnapshot)(nil)
)

// FSMConfig configures a FSM.
type FSMConfig struct {
	// Ledger is the state machine. Required.
	Ledger *fsm.Ledger
	// OnFatal, if set, is called once when the ledger's store fails an
	// apply (the node should stop).
	OnFatal func(error)
	// OnApplied, if set, is called after every ApplyBatch and Restore with
	// the ledger's applied index (session reads wait on it).
	OnApplied func(index uint64)
	// Observer, if set, learns what every applied entry changed (a
	// restore changes everything), before OnApplied wakes whoever waits.
	Observer ApplyObserver
	// Logger defaults to discarding; Registerer nil registers nothing.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// ApplyObserver learns what the ledger applied, on every replica, in
// apply order, from Raft's apply goroutine: it must be quick and must not
// call back into the group. The lifecycle reconcilers use it to visit only
// the jobs an entry changed.
type ApplyObserver interface {
	// Entry is called after a command entry applied, with the results of
	// each of its batches (fsm.Result names each event's type and job).
	Entry(results [][]fsm.Result)
	// Restored is called after a snapshot replaced the ledger's state:
	// anything may have changed.
	Restored()
}

// entryResponse is the FSM's answer for one command entry, handed to the
// proposer through ApplyFuture.Response on the node that proposed it.
type entryResponse struct {
	// batches holds the results of each batch of the entry, in entry
	// order, one per event (a single rejection for a batch that did not
	// decode).
	batches [][]fsm.Result
	// err is set when the entry was not applied (ErrBadEntry, ErrFSMFailed,
	// or an already applied index).
	err error
}

// EntryResults unpacks the FSM's answer for one command entry (what
// raft.ApplyFuture.Response returns on the node that proposed it): each
// batch's results, or why the entry was not applied.
func EntryResults(resp any) ([][]fsm.Result, error) {
	r, ok := resp.(*entryResponse)
	if !ok {
		return nil, fmt.Errorf("cluster: not an entry response: %T", resp)
	}
	return r.batches, r.err
}

// NewFSM wraps cfg.Ledger as a raft.BatchingFSM.
func NewFSM(cfg FSMConfig) (*FSM, error) {
	if cfg.Ledger == nil {
		return nil, errors.New("cluster: ledger fsm: Ledger is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	m, err := newFSMMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	return &FSM{ledger: cfg.Ledger, log: cfg.Logger, m: m, onFatal: cfg.OnFatal, onApplied: cfg.OnApplied,
		observer: cfg.Observer}, nil
}

// Apply implements raft.FSM for one entry.
func (f *FSM) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch implements raft.BatchingFSM: one response per log, in order;
// logs other than commands (configuration changes) get nil.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	start := time.Now()
	out := make([]any, len(logs))
	commands := 0
	for i, l := range logs {
		if l.Type != raft.LogCommand {
			continue
		}
		commands++
		out[i] = f.applyEntry(l.Index, l.Data)
	}
	f.m.applyBatchSeconds.Observe(time.Since(start).Seconds())
	f.m.applyBatchEntries.Observe(float64(commands))
	f.notifyApplied()
	return out
}

func (f *FSM) notifyApplied() {
	if f.onApplied != nil {
		f.onApplied(f.ledger.AppliedIndex())
	}
}

// applyEntry applies one command entry at index.
func (f *FSM) applyEntry(index uint64, data []byte) *entryResponse {
	if err := f.failure(); err != nil {
		return &entryResponse{err: err}
	}
	if IsMark(data) {
		if err := f.ledger.Mark(index); err != nil {
			return &entryResponse{err: f.fail(index, err)}
		}
		f.m.entries.Inc()
		return &entryResponse{}
	}
	batches, derr := DecodeEntry(data)
	var resp *entryResponse
	var err error
	switch {
	case derr != nil:
		// Record the index as applied, so the ledger's applied index keeps
		// pace with Raft's; every replica rejects the same bytes.
		_, err = f.ledger.Apply(index, nil)
		resp = &entryResponse{err: fmt.Errorf("entry %d: %w", index, derr)}
	default:
		resp, err = f.applyBatches(index, batches)
	}
	if err != nil {
		return &entryResponse{err: f.fail(index, err)}
	}
	if f.observer != nil && resp.err == nil {
		f.observer.Entry(resp.batches)
	}
	f.m.entries.Inc()
	for _, rs := range resp.batches {
		for _, r := range rs {
			f.m.countOutcome(r.Outcome)
		}
	}
	return resp
}

// applyBatches applies the batches of an entry in one transaction.
func (f *FSM) applyBatches(index uint64, batches [][]byte) (*entryResponse, error) {
	results, err := f.ledger.ApplyEncodedMany(index, batches)
	if err != nil {
		return nil, err
	}
	if results == nil {
		return &entryResponse{err: alreadyApplied(index, f.ledger.AppliedIndex())}, nil
	}
	return &entryResponse{batches: results}, nil
}

func alreadyApplied(index, applied uint64) error {
	return fmt.Errorf("cluster: entry %d skipped: ledger already applied index %d", index, applied)
}

// fail records the first store failure, reports it, and returns the error
// every later apply returns.
func (f *FSM) fail(index uint64, cause error) error {
	f.mu.Lock()
	first := f.failed == nil
	if first {
		f.failed = fmt.Errorf("%w: apply entry %d: %w", ErrFSMFailed, index, cause)
	}
	err := f.failed
	f.mu.Unlock()
	if first {
		f.m.failed.Set(1)
		f.log.Error("ledger apply failed; this replica stops applying", "index", index, "err", cause)
		if f.onFatal != nil {
			f.onFatal(err)
		}
	}
	return err
}

// failure returns the recorded store failure, or nil.
func (f *FSM) failure() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// Snapshot implements raft.FSM. It captures nothing: Persist streams the
// ledger's state as of one store view taken then. That state may include
// entries applied after the index Raft records for the snapshot; the
// Ledger's own applied index travels in the snapshot header, so entries
// Raft replays after a restore are skipped, and re-applied events would be
// duplicates anyway (idempotent by event id).
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.failure(); err != nil {
		return nil, err
	}
	return &ledgerSnapshot{f: f}, nil
}

// Restore implements raft.FSM: it replaces the ledger's state with the
// snapshot; on error the ledger keeps its previous state.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	if err := f.ledger.Restore(rc); err != nil {
		return fmt.Errorf("cluster: restore ledger snapshot: %w", err)
	}
	f.m.restores.Inc()
	if f.observer != nil {
		f.observer.Restored()
	}
	f.notifyApplied()
	return nil
}

// ledgerSnapshot is the raft.FSMSnapshot of a FSM.
type ledgerSnapshot struct{ f *FSM }

// Persist streams the ledger's snapshot into sink and closes it, or
// cancels it on error.
func (s *ledgerSnapshot) Persist(sink raft.SnapshotSink) error {
	start := time.Now()
	if err := s.f.ledger.Snapshot(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("cluster: persist ledger snapshot %s: %w", sink.ID(), err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("cluster: close ledger snapshot %s: %w", sink.ID(), err)
	}
	s.f.m.snapshotSeconds.Observe(time.Since(start).Seconds())
	return nil
}

// Release implements raft.FSMSnapshot; nothing is held.
func (s *ledgerSnapshot) Release() {}

// fsmMetrics are the strata_raft_* collectors of the FSM (DESIGN §12).
type fsmMetrics struct {
	entries           prometheus.Counter
	events            *prometheus.CounterVec
	outcomes          [5]prometheus.Counter // by fsm.Outcome
	applyBatchSeconds prometheus.Histogram
	applyBatchEntries prometheus.Histogram
	snapshotSeconds   prometheus.Histogram
	restores          prometheus.Counter
	failed            prometheus.Gauge
}

func newFSMMetrics(reg prometheus.Registerer) (*fsmMetrics, error) {
	m := &fsmMetrics{
		entries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_raft_applied_entries_total",
			Help: "Raft command entries applied to the ledger (one ledger transaction each).",
		}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_raft_applied_events_total",
			Help: "Events of applied Raft entries, by outcome (applied, duplicate, absorbed, rejected).",
		}, []string{"outcome"}),
		applyBatchSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_raft_apply_batch_seconds",
			Help:    "Time one ApplyBatch call (many committed entries) took.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16),
		}),
		applyBatchEntries: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_raft_apply_batch_entries",
			Help:    "Command entries applied by one ApplyBatch call.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		snapshotSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_raft_snapshot_persist_seconds",
			Help:    "Time to stream the ledger into a Raft snapshot.",
			Buckets: prometheus.ExponentialBuckets(1e-3, 4, 10),
		}),
		restores: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_raft_snapshot_restores_total",
			Help: "Ledger restores from a Raft snapshot.",
		}),
		failed: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_raft_fsm_failed",
			Help: "1 once the ledger's store failed an apply: the replica stopped applying.",
		}),
	}
	for o := fsm.OutcomeApplied; o <= fsm.OutcomeRejected; o++ {
		m.outcomes[o] = m.events.WithLabelValues(o.String())
	}
	return m, metrics.Register(reg, "raft fsm", m.entries, m.events, m.applyBatchSeconds, m.applyBatchEntries, m.snapshotSeconds, m.restores, m.failed)
}

func (m *fsmMetrics) countOutcome(o fsm.Outcome) {
	if int(o) < len(m.outcomes) && m.outcomes[o] != nil {
		m.outcomes[o].Inc()
	}
}
