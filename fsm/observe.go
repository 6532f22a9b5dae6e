package fsm

import (
	"crypto/sha256"
	"fmt"
)

// The state a Ledger holds, seen as keyed records whose digests another
// replica (or anti-entropy, DESIGN §11) can compare: jobs, workflows,
// workers, tenants' chain heads and forward marks. An Observer learns
// after each batch which of them it changed; StateDigest hashes one; and
// AllStateKeys lists them all. The Ledger knows nothing of Merkle trees:
// package antientropy/ledgertree keeps one from these.

// StateKind says which part of the state a StateKey names.
type StateKind uint8

// The kinds of state.
const (
	StateJob      StateKind = 1 + iota // a job (global ledger), by job id
	StateWorkflow                      // a workflow (regional ledger), by workflow id
	StateWorker                        // a worker (regional ledger), by worker id
	StateChain                         // a tenant's chain head, by tenant
	StateMark                          // a tenant's forward mark, by tenant
	StatePolicy                        // a governance record, by PolicyStateID(kind, key)
	StateMeter                         // a rate meter, by PolicyStateID(kind, key) of its record
)

// StateKey names one record of the state.
type StateKey struct {
	Kind StateKind
	ID   string
}

// TreeID is the key as one string in a single space: job and workflow
// ids as they are (a workflow id holds '/', a job id never does), the
// others behind a prefix that no job or workflow id starts with (job ids
// start with a region code, workflow ids with a job id).
func (k StateKey) TreeID() string {
	switch k.Kind {
	case StateJob, StateWorkflow:
		return k.ID
	case StateWorker:
		return "~worker/" + k.ID
	case StateChain:
		return "~chain/" + k.ID
	case StateMark:
		return "~mark/" + k.ID
	case StatePolicy:
		if kind, key, ok := splitPolicyStateID(k.ID); ok {
			return "~policy/" + kind + "/" + key
		}
	case StateMeter:
		if kind, key, ok := splitPolicyStateID(k.ID); ok {
			return "~meter/" + kind + "/" + key
		}
	}
	return fmt.Sprintf("~kind%d/%s", k.Kind, k.ID)
}

// Observer learns what each applied batch changed. The Ledger calls it
// with its apply lock held, after the batch's transaction committed and
// before the next batch applies, so rd reads the state exactly as of
// index. Calls never overlap. It must not call the Ledger's Apply or
// Restore, and should be quick: the group's apply waits for it.
type Observer interface {
	// Applied is called after the batch at index, with the keys whose
	// state it changed (possibly repeated). keys is reused afterwards.
	Applied(index uint64, keys []StateKey, rd func(func(ReadTx) error) error)
	// Reset is called after Restore replaced the whole state with a
	// snapshot's, applied up to index.
	Reset(index uint64, rd func(func(ReadTx) error) error)
	// Mark is called for a checkpoint mark (Ledger.Mark) at index: every
	// replica of the group meets it at the same index, with the same
	// state, so what the Observer records there can be compared.
	Mark(index uint64, rd func(func(ReadTx) error) error)
}

// StateDigest returns the SHA-256 of k's record in its canonical
// encoding, false if the state holds no such record.
func StateDigest(tx ReadTx, k StateKey) (Hash, bool, error) {
	var (
		b   []byte
		err error
	)
	switch k.Kind {
	case StateJob:
		var s *JobState
		if s, err = tx.Job(k.ID); err == nil && s != nil {
			b, err = AppendJobState(nil, s)
		}
	case StateWorkflow:
		var w *WorkflowState
		if w, err = tx.Workflow(k.ID); err == nil && w != nil {
			b, err = AppendWorkflowState(nil, w)
		}
	case StateWorker:
		var w *WorkerState
		if w, err = tx.Worker(k.ID); err == nil && w != nil {
			b, err = AppendWorkerState(nil, w)
		}
	case StateChain:
		var h ChainHead
		var ok bool
		if h, ok, err = tx.ChainHead(k.ID); err == nil && ok {
			b, err = AppendChainHead(nil, h)
		}
	case StateMark:
		var seq uint64
		if seq, err = tx.ForwardMark(k.ID); err == nil && seq != 0 {
			b, err = AppendForwardMark(nil, seq)
		}
	case StatePolicy:
		kind, key, _ := splitPolicyStateID(k.ID)
		var p *Policy
		if p, err = tx.Policy(kind, key); err == nil && p != nil {
			b, err = AppendPolicy(nil, p)
		}
	case StateMeter:
		kind, key, _ := splitPolicyStateID(k.ID)
		var m *Meter
		if m, err = tx.Meter(kind, key); err == nil && m != nil {
			b, err = AppendMeter(nil, m)
		}
	default:
		return Hash{}, false, fmt.Errorf("fsm: state digest: unknown kind %d", k.Kind)
	}
	if err != nil || b == nil {
		return Hash{}, false, err
	}
	return sha256.Sum256(b), true, nil
}

// AllStateKeys calls fn for every record of the state: jobs, workflows,
// workers, chain heads, forward marks, governance records, rate meters,
// each kind in id order.
func AllStateKeys(tx ReadTx, fn func(StateKey) error) error {
	if err := tx.Jobs("", "", func(s *JobState) error { return fn(StateKey{StateJob, s.JobID}) }); err != nil {
		return err
	}
	if err := tx.Workflows("", func(w *WorkflowState) error { return fn(StateKey{StateWorkflow, w.ID}) }); err != nil {
		return err
	}
	if err := tx.Workers(func(w *WorkerState) error { return fn(StateKey{StateWorker, w.ID}) }); err != nil {
		return err
	}
	if err := tx.ChainHeads(func(t string, _ ChainHead) error { return fn(StateKey{StateChain, t}) }); err != nil {
		return err
	}
	if err := tx.ForwardMarks(func(t string, _ uint64) error { return fn(StateKey{StateMark, t}) }); err != nil {
		return err
	}
	if err := tx.Policies("", func(p *Policy) error { return fn(StateKey{StatePolicy, PolicyStateID(p.Kind, p.Key)}) }); err != nil {
		return err
	}
	return tx.Meters(func(m *Meter) error { return fn(StateKey{StateMeter, PolicyStateID(m.Kind, m.Key)}) })
}

// RegionDigest is the SHA-256 of the canonical encoding of region's entry
// of job s: what the region reported of the job (accepted, progress,
// done, cancellation ack), as both the region's own ledger and the global
// ledger fold it, in any order. Anti-entropy compares it between the two
// (DESIGN §11, regional ↔ global). False if the job is not assigned to
// region.
func RegionDigest(s *JobState, region string) (Hash, bool, error) {
	i := s.regionIndex(region)
	if i < 0 {
		return Hash{}, false, nil
	}
	e := beginRecord(nil)
	e.regionState(&s.Regions[i])
	b, err := e.endRecord(nil, "region")
	if err != nil {
		return Hash{}, false, err
	}
	return sha256.Sum256(b), true, nil
}
