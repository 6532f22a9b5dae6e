package boltstore

import (
	"fmt"

	"github.com/strata-ledger/strata/fsm"
)

// Forward marks (fsm.ForwardMark): the bucket marks, tenant → forward
// mark record (fsm.AppendForwardMark). Few keys (one per tenant the
// region forwards), rewritten in place.

func (t *tx) ForwardMark(tenant string) (uint64, error) {
	if tenant == "" {
		return 0, nil // bbolt has no empty key
	}
	v := t.marks.Get([]byte(tenant))
	if v == nil {
		return 0, nil
	}
	seq, err := fsm.DecodeForwardMark(v)
	if err != nil {
		return 0, fmt.Errorf("%w: forward mark of %q: %w", ErrCorrupt, tenant, err)
	}
	return seq, nil
}

func (t *tx) ForwardMarks(fn func(string, uint64) error) error {
	c := t.marks.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		seq, err := fsm.DecodeForwardMark(v)
		if err != nil {
			return fmt.Errorf("%w: forward mark of %q: %w", ErrCorrupt, k, err)
		}
		if err := fn(string(k), seq); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) PutForwardMark(tenant string, seq uint64) error {
	if !t.write {
		return errReadOnly
	}
	if tenant == "" {
		return fmt.Errorf("boltstore: forward mark of the empty tenant")
	}
	if err := checkKeyPart("tenant", tenant); err != nil {
		return err
	}
	v, err := fsm.AppendForwardMark(t.ar.room(16), seq)
	if err != nil {
		return fmt.Errorf("boltstore: put forward mark of %q: %w", tenant, err)
	}
	v = t.ar.keep(v)
	if err := t.marks.Put(t.ar.bytes(tenant), v); err != nil {
		return fmt.Errorf("boltstore: put forward mark of %q: %w", tenant, err)
	}
	return t.maybeCommit()
}
