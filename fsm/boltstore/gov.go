package boltstore

import (
	"bytes"
	"fmt"

	"github.com/strata-ledger/strata/fsm"
)

// Governance records (fsm.Policy): the bucket gov, kind ‖ 0 ‖ key →
// policy record (fsm.AppendPolicy). The bucket is optional within layout
// 3: created by the first PutPolicy, read as empty while absent, so a
// file written before governance existed opens unchanged, and a store
// image carries it like every other bucket. Few keys, rewritten in place.

var bucketGov = []byte("gov")

func appendPolicyKey(b []byte, kind, key string) []byte {
	b = append(b, kind...)
	b = append(b, 0)
	return append(b, key...)
}

func (t *tx) Policy(kind, key string) (*fsm.Policy, error) {
	bk := t.btx.Bucket(bucketGov)
	if bk == nil {
		return nil, nil
	}
	v := bk.Get(appendPolicyKey(nil, kind, key))
	if v == nil {
		return nil, nil
	}
	p, err := fsm.DecodePolicy(v)
	if err != nil {
		return nil, fmt.Errorf("%w: policy %s/%s: %w", ErrCorrupt, kind, key, err)
	}
	if p.Kind != kind || p.Key != key {
		return nil, fmt.Errorf("%w: policy key %s/%s holds %s/%s", ErrCorrupt, kind, key, p.Kind, p.Key)
	}
	return p, nil
}

func (t *tx) Policies(kind string, fn func(*fsm.Policy) error) error {
	bk := t.btx.Bucket(bucketGov)
	if bk == nil {
		return nil
	}
	var prefix []byte
	if kind != "" {
		prefix = append([]byte(kind), 0)
	}
	c := bk.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		p, err := fsm.DecodePolicy(v)
		if err != nil {
			return fmt.Errorf("%w: policy %q: %w", ErrCorrupt, k, err)
		}
		if !bytes.Equal(k, appendPolicyKey(nil, p.Kind, p.Key)) {
			return fmt.Errorf("%w: policy key %q holds %s/%s", ErrCorrupt, k, p.Kind, p.Key)
		}
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) PutPolicy(p *fsm.Policy) error {
	if !t.write {
		return errReadOnly
	}
	if err := checkKeyPart("policy kind", p.Kind); err != nil {
		return err
	}
	bk, err := t.btx.CreateBucketIfNotExists(bucketGov)
	if err != nil {
		return fmt.Errorf("boltstore: create bucket %s: %w", bucketGov, err)
	}
	v, err := fsm.AppendPolicy(t.ar.room(256+len(p.Value)), p)
	if err != nil {
		return fmt.Errorf("boltstore: put policy %s/%s: %w", p.Kind, p.Key, err)
	}
	v = t.ar.keep(v)
	k := t.ar.keep(appendPolicyKey(t.ar.room(len(p.Kind)+1+len(p.Key)), p.Kind, p.Key))
	if err := bk.Put(k, v); err != nil {
		return fmt.Errorf("boltstore: put policy %s/%s: %w", p.Kind, p.Key, err)
	}
	return t.maybeCommit()
}

func (t *tx) DeletePolicy(kind, key string) error {
	if !t.write {
		return errReadOnly
	}
	bk := t.btx.Bucket(bucketGov)
	if bk == nil {
		return nil
	}
	if err := bk.Delete(appendPolicyKey(nil, kind, key)); err != nil {
		return fmt.Errorf("boltstore: delete policy %s/%s: %w", kind, key, err)
	}
	return t.maybeCommit()
}
