package fsm

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Outcome is what applying one event did.
type Outcome uint8

// Outcomes of Apply, per event.
const (
	// OutcomeApplied: stored, and it changed the state.
	OutcomeApplied Outcome = 1
	// OutcomeDuplicate: an event with this id and the same content is
	// already stored; nothing changed.
	OutcomeDuplicate Outcome = 2
	// OutcomeAbsorbed: stored in the job's history and the audit chain,
	// but it did not take effect as asked: it changed neither the job's
	// status nor its decision (a report may still be recorded in the
	// region's fields, fsm/DESIGN.md "Outcomes"); Err says why
	// (ErrTerminal, *TransitionError, *FenceError).
	OutcomeAbsorbed Outcome = 3
	// OutcomeRejected: not stored; Err says why.
	OutcomeRejected Outcome = 4
)

var outcomeNames = [...]string{"", "applied", "duplicate", "absorbed", "rejected"}

// String returns the outcome's name.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && o != 0 {
		return outcomeNames[o]
	}
	return fmt.Sprintf("Outcome(%d)", uint8(o))
}

// Stored reports whether the event is in the ledger after the outcome.
func (o Outcome) Stored() bool { return o != OutcomeRejected }

// Result is the outcome of one event of a batch.
type Result struct {
	Outcome Outcome
	// Err is the reason of an absorbed or rejected event, nil otherwise.
	Err error
	// Seq is the event's position in its tenant's audit chain (of the
	// stored original for a duplicate); 0 when rejected.
	Seq uint64
	// Type and JobID repeat the event's, so a caller that holds only the
	// encoded batch (the Raft FSM) learns which jobs an apply touched
	// without decoding it again. Both are zero for a batch that did not
	// decode.
	Type  EventType
	JobID string
}

// Config configures a Ledger.
type Config struct {
	// Store keeps the state. Required.
	Store Store
	// MaxListScan bounds the jobs one ListJobs call over every tenant
	// examines; default DefaultMaxListScan.
	MaxListScan int
	// Observer, if set, learns what each applied batch changed (anti-
	// entropy keeps its Merkle tree current with it).
	Observer Observer
	// Admission, if set, decides whether a JobAdmitted may admit a queued
	// job (JobState.Queued) now: nil admits, an error wrapping
	// ErrOverQuota rejects the event, any other error is a store failure
	// (the batch fails). It reads the state through tx, which holds every
	// change of the batch before the event. It must be deterministic (a
	// function of what tx reads): every replica calls it at the same
	// point of the same state.
	Admission func(tx ReadTx, job *JobState) error
	// Ended, if set, hears of every job a batch ended (JobEnd), in apply
	// order, after the batch committed (a failed batch ends nothing). The
	// Ledger calls it from Apply with its apply lock held: it must be
	// quick (a node counts with it) and must not call the Ledger.
	Ended func(JobEnd)
	// Meter, if set, decides at the apply of every new JobCreated what
	// the job takes from its rate meters and whether it must wait
	// (fsm/meter.go): the ledger stores the meters it returns and, for a
	// hold, makes the job queued (Spec.Held) until HoldUntilMs. It reads
	// the state through tx (the batch's earlier meters included) and
	// must be deterministic, like Admission; an error is a store failure
	// (the batch fails).
	Meter MeterHook
}

// Validate fills defaults and checks c.
func (c *Config) Validate() error {
	if c.MaxListScan == 0 {
		c.MaxListScan = DefaultMaxListScan
	}
	switch {
	case c.Store == nil:
		return errors.New("fsm: config: Store is required")
	case c.MaxListScan < 1:
		return fmt.Errorf("fsm: config: MaxListScan %d is below 1", c.MaxListScan)
	}
	return nil
}

// Ledger is the replicated state machine of one Raft group: it applies
// batches of events to a Store under the rules of fsm/DESIGN.md and serves
// the reads the API needs. It does not import hashicorp/raft; package
// cluster wraps it as a raft.FSM (Apply/ApplyEncoded, Snapshot, Restore,
// AppliedIndex).
//
// Apply, ApplyEncoded and Restore are serialized by the Ledger (Raft calls
// them from one goroutine anyway). Reads, Snapshot included, may run
// concurrently with them and see the state of some applied batch.
type Ledger struct {
	store   Store
	maxScan int
	obs     Observer
	ended   func(JobEnd)

	applyMu sync.Mutex // serializes Apply and Restore
	ap      applier    // scratch of Apply, guarded by applyMu
	bodies  [][]byte   // scratch of ApplyEncoded, guarded by applyMu
	applied atomic.Uint64
}

// New returns a ledger over cfg.Store, resuming at its applied index.
func New(cfg Config) (*Ledger, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Ledger{store: cfg.Store, maxScan: cfg.MaxListScan, obs: cfg.Observer, ended: cfg.Ended}
	l.ap.init()
	l.ap.admission = cfg.Admission
	l.ap.endedSet = cfg.Ended != nil
	l.ap.meter = cfg.Meter
	var applied uint64
	err := cfg.Store.View(func(tx ReadTx) error {
		var err error
		applied, err = tx.AppliedIndex()
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("fsm: open ledger: %w", err)
	}
	l.applied.Store(applied)
	return l, nil
}

// AppliedIndex returns the Raft index of the last applied batch.
func (l *Ledger) AppliedIndex() uint64 { return l.applied.Load() }

// Apply applies a batch of events carried by the Raft entry at index, in
// one store transaction, and returns one Result per event. It is
// deterministic: replicas that apply the same entries in the same order
// hold the same state. A batch whose index is not above the applied index
// was applied before and is skipped wholesale: Apply returns nil results.
//
// Apply takes ownership of the events (they are stored, not copied). An
// error means the store failed; the batch is then not applied at all and
// the caller must stop (a replica that cannot apply cannot go on).
func (l *Ledger) Apply(index uint64, batch []Event) ([]Result, error) {
	if index == 0 {
		return nil, errors.New("fsm: apply: raft index 0")
	}
	l.applyMu.Lock()
	defer l.applyMu.Unlock()
	return l.applyLocked(index, batch, nil)
}

// applyLocked applies a batch; bodies, if not nil, holds each event's
// encoded body.
func (l *Ledger) applyLocked(index uint64, batch []Event, bodies [][]byte) ([]Result, error) {
	if index <= l.applied.Load() {
		return nil, nil
	}
	results := make([]Result, len(batch))
	a := &l.ap
	err := l.store.Update(func(tx Tx) error {
		a.begin(tx)
		for i := range batch {
			var raw []byte
			if bodies != nil {
				raw = bodies[i]
			}
			r, err := a.apply(&batch[i], raw)
			if err != nil {
				return fmt.Errorf("event %d (%s): %w", i, batch[i].ID, err)
			}
			r.Type, r.JobID = batch[i].Type, batch[i].JobID
			results[i] = r
		}
		if err := a.flush(); err != nil {
			return err
		}
		return tx.SetAppliedIndex(index)
	})
	a.end()
	if err != nil {
		return nil, fmt.Errorf("fsm: apply index %d: %w", index, err)
	}
	l.applied.Store(index)
	if l.obs != nil {
		l.obs.Applied(index, a.changed, l.store.View)
	}
	for _, end := range a.ended {
		l.ended(end)
	}
	return results, nil
}

// Mark applies a checkpoint mark carried by the Raft entry at index: it
// changes nothing but the applied index and tells the Observer, which
// records what it compares with other replicas there (anti-entropy). An
// index not above the applied index is skipped, as Apply skips it.
func (l *Ledger) Mark(index uint64) error {
	if index == 0 {
		return errors.New("fsm: mark: raft index 0")
	}
	l.applyMu.Lock()
	defer l.applyMu.Unlock()
	if index <= l.applied.Load() {
		return nil
	}
	if err := l.store.Update(func(tx Tx) error { return tx.SetAppliedIndex(index) }); err != nil {
		return fmt.Errorf("fsm: mark index %d: %w", index, err)
	}
	l.applied.Store(index)
	if l.obs != nil {
		l.obs.Mark(index, l.store.View)
	}
	return nil
}

// ApplyEncoded decodes a batch (EncodeBatch) and applies it at index. A
// batch that does not decode is rejected as a whole, deterministically:
// its index is recorded as applied and the single result says why.
func (l *Ledger) ApplyEncoded(index uint64, data []byte) ([]Result, error) {
	rs, err := l.ApplyEncodedMany(index, [][]byte{data})
	if rs == nil {
		return nil, err
	}
	return rs[0], err
}

// ApplyEncodedMany applies several encoded batches (the client batches of
// one Raft entry) at index in one transaction, each event with the body
// bytes it arrived in, so bodies are hashed without being encoded again.
// A batch that does not decode is rejected as a whole (one result saying
// why) and the others apply. Results come per batch, nil when index was
// already applied.
func (l *Ledger) ApplyEncodedMany(index uint64, batches [][]byte) ([][]Result, error) {
	if index == 0 {
		return nil, errors.New("fsm: apply: raft index 0")
	}
	l.applyMu.Lock()
	defer l.applyMu.Unlock()
	if index <= l.applied.Load() {
		return nil, nil
	}
	out := make([][]Result, len(batches))
	counts := make([]int, len(batches))
	decoded := make([][]Event, len(batches))
	bodies, total := l.bodies[:0], 0
	defer func() { clear(bodies); l.bodies = bodies[:0] }()
	for i, b := range batches {
		before := len(bodies)
		evs, bs, err := decodeBatch(b, bodies)
		if err != nil {
			bodies = bs[:before]
			out[i] = []Result{{Outcome: OutcomeRejected, Err: err}}
			continue
		}
		bodies, decoded[i], counts[i] = bs, evs, len(evs)
		total += len(evs)
	}
	events := decoded[0] // the Ledger keeps the events it stores: fresh slices
	if len(batches) > 1 {
		events = make([]Event, 0, total)
		for _, evs := range decoded {
			events = append(events, evs...)
		}
	}
	results, err := l.applyLocked(index, events, bodies)
	if err != nil {
		return nil, err
	}
	at := 0
	for i, n := range counts {
		if out[i] == nil {
			out[i] = results[at : at+n : at+n]
			at += n
		}
	}
	return out, nil
}
