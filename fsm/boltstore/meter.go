package boltstore

import (
	"bytes"
	"fmt"

	"github.com/strata-ledger/strata/fsm"
)

// Rate meters (fsm.Meter): the bucket meter, kind ‖ 0 ‖ key of the
// meter's governance record → meter record (fsm.AppendMeter). Like gov,
// the bucket is optional within layout 3: created by the first PutMeter,
// read as empty while absent, so a file written before meters existed
// opens unchanged, and a store image carries it like every other bucket.
// At most one meter per governance record; rewritten in place.

var bucketMeter = []byte("meter")

func (t *tx) Meter(kind, key string) (*fsm.Meter, error) {
	bk := t.btx.Bucket(bucketMeter)
	if bk == nil {
		return nil, nil
	}
	v := bk.Get(appendPolicyKey(nil, kind, key))
	if v == nil {
		return nil, nil
	}
	m, err := fsm.DecodeMeter(v)
	if err != nil {
		return nil, fmt.Errorf("%w: meter %s/%s: %w", ErrCorrupt, kind, key, err)
	}
	if m.Kind != kind || m.Key != key {
		return nil, fmt.Errorf("%w: meter key %s/%s holds %s/%s", ErrCorrupt, kind, key, m.Kind, m.Key)
	}
	return m, nil
}

func (t *tx) Meters(fn func(*fsm.Meter) error) error {
	bk := t.btx.Bucket(bucketMeter)
	if bk == nil {
		return nil
	}
	c := bk.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		m, err := fsm.DecodeMeter(v)
		if err != nil {
			return fmt.Errorf("%w: meter %q: %w", ErrCorrupt, k, err)
		}
		if !bytes.Equal(k, appendPolicyKey(nil, m.Kind, m.Key)) {
			return fmt.Errorf("%w: meter key %q holds %s/%s", ErrCorrupt, k, m.Kind, m.Key)
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) PutMeter(m *fsm.Meter) error {
	if !t.write {
		return errReadOnly
	}
	if err := checkKeyPart("meter kind", m.Kind); err != nil {
		return err
	}
	bk, err := t.btx.CreateBucketIfNotExists(bucketMeter)
	if err != nil {
		return fmt.Errorf("boltstore: create bucket %s: %w", bucketMeter, err)
	}
	v, err := fsm.AppendMeter(t.ar.room(64+len(m.Kind)+len(m.Key)), m)
	if err != nil {
		return fmt.Errorf("boltstore: put meter %s/%s: %w", m.Kind, m.Key, err)
	}
	v = t.ar.keep(v)
	k := t.ar.keep(appendPolicyKey(t.ar.room(len(m.Kind)+1+len(m.Key)), m.Kind, m.Key))
	if err := bk.Put(k, v); err != nil {
		return fmt.Errorf("boltstore: put meter %s/%s: %w", m.Kind, m.Key, err)
	}
	return t.maybeCommit()
}

func (t *tx) DeleteMeter(kind, key string) error {
	if !t.write {
		return errReadOnly
	}
	bk := t.btx.Bucket(bucketMeter)
	if bk == nil {
		return nil
	}
	if err := bk.Delete(appendPolicyKey(nil, kind, key)); err != nil {
		return fmt.Errorf("boltstore: delete meter %s/%s: %w", kind, key, err)
	}
	return t.maybeCommit()
}
