package fsmtest

import (
	"errors"
	"sync"

	"github.com/strata-ledger/strata/fsm"
)

// ErrInjected is the failure a FaultyStore injects.
var ErrInjected = errors.New("fsmtest: injected store failure")

// FaultyStore wraps a Store and fails a write of an Update on demand (a
// fake for fault injection only).
type FaultyStore struct {
	fsm.Store
	mu     sync.Mutex
	writes int // writes left before the failure; < 0: never fail
}

// NewFaultyStore wraps st; it does not fail until FailAfter is called.
func NewFaultyStore(st fsm.Store) *FaultyStore { return &FaultyStore{Store: st, writes: -1} }

// FailAfter makes the write after the next n writes fail (and every write
// after it, until Heal).
func (f *FaultyStore) FailAfter(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes = n
}

// Heal stops the failures.
func (f *FaultyStore) Heal() { f.FailAfter(-1) }

func (f *FaultyStore) write() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.writes < 0:
		return nil
	case f.writes == 0:
		return ErrInjected
	}
	f.writes--
	return nil
}

// Update implements fsm.Store, handing fn a Tx whose writes may fail.
func (f *FaultyStore) Update(fn func(fsm.Tx) error) error {
	return f.Store.Update(func(tx fsm.Tx) error { return fn(&faultyTx{Tx: tx, f: f}) })
}

type faultyTx struct {
	fsm.Tx
	f *FaultyStore
}

func (t *faultyTx) SetAppliedIndex(i uint64) error {
	if err := t.f.write(); err != nil {
		return err
	}
	return t.Tx.SetAppliedIndex(i)
}

func (t *faultyTx) PutEvent(se *fsm.StoredEvent) error {
	if err := t.f.write(); err != nil {
		return err
	}
	return t.Tx.PutEvent(se)
}

func (t *faultyTx) PutChainHead(tenant string, h fsm.ChainHead) error {
	if err := t.f.write(); err != nil {
		return err
	}
	return t.Tx.PutChainHead(tenant, h)
}

func (t *faultyTx) PutJob(s *fsm.JobState) error {
	if err := t.f.write(); err != nil {
		return err
	}
	return t.Tx.PutJob(s)
}

func (t *faultyTx) PutWorkflow(w *fsm.WorkflowState) error {
	if err := t.f.write(); err != nil {
		return err
	}
	return t.Tx.PutWorkflow(w)
}

func (t *faultyTx) PutWorker(w *fsm.WorkerState) error {
	if err := t.f.write(); err != nil {
		return err
	}
	return t.Tx.PutWorker(w)
}

func (t *faultyTx) PutForwardMark(tenant string, seq uint64) error {
	if err := t.f.write(); err != nil {
		return err
	}
	return t.Tx.PutForwardMark(tenant, seq)
}

func (t *faultyTx) PutMeter(m *fsm.Meter) error {
	if err := t.f.write(); err != nil {
		return err
	}
	return t.Tx.PutMeter(m)
}

func (t *faultyTx) DeleteMeter(kind, key string) error {
	if err := t.f.write(); err != nil {
		return err
	}
	return t.Tx.DeleteMeter(kind, key)
}
