package boltstore

import (
	"bytes"
	"fmt"

	"github.com/strata-ledger/strata/fsm"
)

// jobEntry is a job's value as a write transaction sees it: its state
// and the tail of its history (FORMAT.md, "Jobs and history"). Its slices
// are its own (not the file's), so it may outlive the transaction in the
// job cache.
type jobEntry struct {
	id        string
	stored    []byte        // state record as stored and indexed; nil: none
	storedDec *fsm.JobState // stored, decoded (lazily)
	state     *fsm.JobState // state put by this transaction, not flushed yet
	sealed    bool
	sealedMax [sortLen]byte
	count     int    // tail entries
	tail      []byte // tail entries, encoded
	lastAt    int    // offset of the last tail entry, if count > 0
	dirty     bool   // the value must be written at flush
}

// lastKey returns the key of the last tail entry, nil if the tail is
// empty: kept as an offset, so adding an event does not walk the tail.
func (e *jobEntry) lastKey() []byte {
	if e.count == 0 {
		return nil
	}
	return e.tail[e.lastAt : e.lastAt+sortLen]
}

// current returns the job's state; nil if it has none.
func (e *jobEntry) current() (*fsm.JobState, error) {
	if e.state != nil {
		return e.state, nil
	}
	return e.storedState()
}

func (e *jobEntry) storedState() (*fsm.JobState, error) {
	if e.storedDec == nil && e.stored != nil {
		s, err := decodeState(e.id, e.stored)
		if err != nil {
			return nil, err
		}
		e.storedDec = s
	}
	return e.storedDec, nil
}

// entry returns the write transaction's entry of a job: from the
// transaction, the job cache or the file. create makes an empty one for
// a job with no value yet; otherwise such a job has none (nil).
func (t *tx) entry(id string, create bool) (*jobEntry, error) {
	if e := t.entries[id]; e != nil {
		return e, nil
	}
	e := t.cache.job(id)
	if e == nil {
		var err error
		if e, err = t.loadEntry(id); err != nil {
			return nil, err
		}
	}
	if e == nil {
		if !create {
			return nil, nil
		}
		if err := checkKeyPart("job id", id); err != nil || id == "" {
			return nil, fmt.Errorf("boltstore: job id %q: %v", id, err)
		}
		e = &jobEntry{id: id}
	}
	t.entries[id] = e
	return e, nil
}

// loadEntry reads a job's value into a new entry (copies: the entry may
// outlive the transaction); nil if the job has none.
func (t *tx) loadEntry(id string) (*jobEntry, error) {
	v := t.jobs.Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	jv, err := decodeJobValue(v)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	e := &jobEntry{id: id, sealed: jv.sealed, sealedMax: jv.sealedMax, count: jv.count}
	if jv.state != nil {
		e.stored = bytes.Clone(jv.state)
	}
	if jv.count > 0 {
		e.tail = make([]byte, len(jv.tail), len(jv.tail)+len(jv.tail)/jv.count*2)
		copy(e.tail, jv.tail)
		e.lastAt = len(jv.tail) - len(lastEntry(jv.tail))
	}
	return e, nil
}

func (t *tx) markDirty(e *jobEntry) {
	if !e.dirty {
		e.dirty = true
		t.dirty = append(t.dirty, e)
	}
}

func (t *tx) PutJob(s *fsm.JobState) error {
	if !t.write {
		return errReadOnly
	}
	e, err := t.entry(s.JobID, true)
	if err != nil {
		return err
	}
	cur, err := e.current()
	if err != nil {
		return err
	}
	if cur != nil && cur.Tenant != s.Tenant {
		return fmt.Errorf("boltstore: put job %s: tenant %q, stored %q", s.JobID, s.Tenant, cur.Tenant)
	}
	if err := checkKeyPart("tenant", s.Tenant); err != nil {
		return err
	}
	for i := range s.Regions {
		if err := checkKeyPart("region", s.Regions[i].Region); err != nil {
			return err
		}
	}
	e.state = s
	t.markDirty(e)
	return t.maybeCommit()
}

// flush puts the open chain blocks and writes every changed entry: its
// state record (encoded once per
// transaction), its index keys if they changed, its value.
func (t *tx) flush() error {
	if !t.write {
		return nil
	}
	if err := t.flushBlocks(); err != nil {
		return err
	}
	for _, e := range t.dirty {
		if err := t.flushEntry(e); err != nil {
			return err
		}
	}
	clear(t.dirty)
	t.dirty = t.dirty[:0]
	return nil
}

func (t *tx) flushEntry(e *jobEntry) error {
	if e.state != nil {
		rec, err := fsm.AppendJobState(make([]byte, 0, len(e.stored)+256), e.state)
		if err != nil {
			return fmt.Errorf("boltstore: put job %s: %w", e.id, err)
		}
		old, err := e.storedState()
		if err != nil {
			return err
		}
		if err := t.reindex(old, e.state); err != nil {
			return err
		}
		e.stored, e.storedDec, e.state = rec, e.state, nil
	}
	v := &jobValue{state: e.stored, sealed: e.sealed, sealedMax: e.sealedMax, count: e.count, tail: e.tail}
	val := t.ar.keep(appendJobValue(t.ar.room(len(e.stored)+len(e.tail)+48), v))
	e.dirty = false
	if err := t.jobs.Put(t.ar.bytes(e.id), val); err != nil { // val is kept before bytes takes room
		return fmt.Errorf("boltstore: put job %s: %w", e.id, err)
	}
	return nil
}

// reindex replaces the index keys of old (nil: none) by those of s.
func (t *tx) reindex(old, s *fsm.JobState) error {
	if old != nil && sameIndexKeys(old, s) {
		return nil
	}
	buf := t.ar.room(indexKeysBytes(old) + indexKeysBytes(s))
	t.keys, buf = appendIndexKeys(t.keys[:0], buf, old)
	n := len(t.keys)
	t.keys, buf = appendIndexKeys(t.keys, buf, s)
	t.ar.keep(buf) // bbolt may keep what Put is given until the transaction ends
	olds, news := t.keys[:n], t.keys[n:]
	for _, k := range olds {
		if !containsKey(news, k) {
			if err := t.index.Delete(k); err != nil {
				return fmt.Errorf("boltstore: index job %s: %w", s.JobID, err)
			}
		}
	}
	for _, k := range news {
		if !containsKey(olds, k) {
			if err := t.index.Put(k, nil); err != nil {
				return fmt.Errorf("boltstore: index job %s: %w", s.JobID, err)
			}
		}
	}
	clear(t.keys)
	return nil
}

func containsKey(keys [][]byte, k []byte) bool {
	for _, x := range keys {
		if bytes.Equal(x, k) {
			return true
		}
	}
	return false
}

// JobsMatching scans the index that fits f: tenant; tenant and status;
// tenant and region; tenant, region and status.
func (t *tx) JobsMatching(f fsm.JobFilter, after string, fn func(*fsm.JobState) error) error {
	if f.Tenant == "" {
		return fmt.Errorf("boltstore: jobs matching a filter without a tenant")
	}
	if checkKeyPart("tenant", f.Tenant) != nil || checkKeyPart("region", f.Region) != nil {
		return nil // no stored job has such a tenant or region
	}
	if err := t.flush(); err != nil {
		return err
	}
	prefix := appendIndexPrefix(nil, f.Tenant, f.Status, f.Region)
	c := t.index.Cursor()
	k, _ := c.Seek(append(prefix[:len(prefix):len(prefix)], after...))
	if after != "" && k != nil && bytes.HasPrefix(k, prefix) && string(k[len(prefix):]) == after {
		k, _ = c.Next()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		id := string(k[len(prefix):])
		s, err := t.Job(id)
		if err != nil {
			return err
		}
		if s == nil {
			return fmt.Errorf("%w: index key %q names no job", ErrCorrupt, k)
		}
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}
