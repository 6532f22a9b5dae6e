package boltstore

import (
	"bytes"
	"fmt"

	"github.com/strata-ledger/strata/fsm"
)

// A job's history (FORMAT.md, "Jobs and history") is a sorted list of
// entries (sortable event key, chain key): the newest in the job's own
// value (the tail, fewer than K), older ones sealed into chunks of the
// history bucket, each keyed by its first entry. Chunks and tail never
// overlap: every tail key orders after sealedMax, the last sealed key.
// An event in canonical order lands in the tail, which is written with
// the job's state anyway; a full tail becomes one chunk. A late event
// (ordering before sealedMax) goes into the chunk that covers it, which
// splits in two past 2K entries.

// addHistory records a stored event in its job's history.
func (t *tx) addHistory(se *fsm.StoredEvent, ck []byte) error {
	e, err := t.entry(se.JobID, true)
	if err != nil {
		return err
	}
	var key [sortLen]byte
	se.Key().AppendSortable(key[:0])
	if e.sealed && bytes.Compare(key[:], e.sealedMax[:]) <= 0 {
		return t.insertSealed(e, key[:], ck)
	}
	t.markDirty(e)
	if last := e.lastKey(); last == nil || bytes.Compare(last, key[:]) < 0 {
		e.lastAt = len(e.tail)
		e.tail = appendEntry(e.tail, key[:], ck)
	} else {
		// The key orders before the last entry (keys are unique), which
		// moves up by the inserted entry's length.
		e.tail, _ = insertEntry(e.tail, key[:], ck)
		e.lastAt += sortLen + 1 + len(ck)
	}
	if e.count++; e.count >= t.tailK {
		return t.seal(e)
	}
	return nil
}

// seal moves the whole tail into a new chunk.
func (t *tx) seal(e *jobEntry) error {
	first, _, _ := nextEntry(e.tail)
	k := t.ar.keep(appendHistoryKey(t.ar.room(len(e.id)+1+sortLen), e.id, first))
	v := t.ar.keep(appendChunk(t.ar.room(len(e.tail)+2), e.count, e.tail))
	if err := t.history.Put(k, v); err != nil {
		return fmt.Errorf("boltstore: seal history of job %s: %w", e.id, err)
	}
	e.sealed = true
	copy(e.sealedMax[:], e.lastKey())
	e.tail, e.count = e.tail[:0], 0
	return nil
}

// insertSealed adds a late entry to the chunk that covers its key: the
// last chunk starting before it, or the first chunk (which then starts
// with it, so it moves to a new key).
func (t *tx) insertSealed(e *jobEntry, key, ck []byte) error {
	prefix := appendHistoryKey(nil, e.id, nil)
	k, v := seekFloor(t.history.Cursor(), prefix, appendHistoryKey(nil, e.id, key))
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return fmt.Errorf("%w: job %s has a sealed history but no chunk", ErrCorrupt, e.id)
	}
	count, entries, err := decodeChunk(v)
	if err != nil {
		return fmt.Errorf("job %s: %w", e.id, err)
	}
	first, _, _ := nextEntry(entries)
	oldKey := bytes.Clone(k)
	entries, _ = insertEntry(bytes.Clone(entries), key, ck)
	count++
	if bytes.Compare(key, first) < 0 {
		if err := t.history.Delete(oldKey); err != nil {
			return fmt.Errorf("boltstore: rekey history chunk of job %s: %w", e.id, err)
		}
	}
	if count <= 2*t.tailK {
		return t.putChunk(e.id, count, entries)
	}
	half := splitEntries(entries, count/2)
	if err := t.putChunk(e.id, count/2, entries[:half]); err != nil {
		return err
	}
	return t.putChunk(e.id, count-count/2, entries[half:])
}

func (t *tx) putChunk(jobID string, count int, entries []byte) error {
	first, _, _ := nextEntry(entries)
	k := t.ar.keep(appendHistoryKey(t.ar.room(len(jobID)+1+sortLen), jobID, first))
	v := t.ar.keep(appendChunk(t.ar.room(len(entries)+2), count, entries))
	if err := t.history.Put(k, v); err != nil {
		return fmt.Errorf("boltstore: put history chunk of job %s: %w", jobID, err)
	}
	return nil
}

// JobEvents reads the chunks from the one that covers `after`, then the
// tail, skipping entries up to `after`.
func (t *tx) JobEvents(jobID string, after fsm.EventKey, fn func(*fsm.StoredEvent) error) error {
	var from []byte
	if !after.IsZero() {
		from = after.AppendSortable(nil)
	}
	emit := func(entries []byte) error {
		for len(entries) > 0 {
			key, ck, rest := nextEntry(entries)
			entries = rest
			if from != nil && bytes.Compare(key, from) <= 0 {
				continue
			}
			se, err := t.eventAt(ck)
			if err != nil {
				return err
			}
			if err := fn(se); err != nil {
				return err
			}
		}
		return nil
	}
	e, err := t.viewEntry(jobID)
	if e == nil || err != nil {
		return err
	}
	if e.sealed && (from == nil || bytes.Compare(from, e.sealedMax[:]) < 0) {
		if err := t.chunks(jobID, from, emit); err != nil {
			return err
		}
	}
	return emit(e.tail)
}

// viewEntry returns a job's entry for reading: the write transaction's,
// or one over the file's bytes (valid during the transaction).
func (t *tx) viewEntry(jobID string) (*jobEntry, error) {
	if t.write {
		return t.entry(jobID, false)
	}
	v := t.jobs.Get([]byte(jobID))
	if v == nil {
		return nil, nil
	}
	jv, err := decodeJobValue(v)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", jobID, err)
	}
	return &jobEntry{id: jobID, sealed: jv.sealed, sealedMax: jv.sealedMax, count: jv.count, tail: jv.tail}, nil
}

// chunks calls fn with the entries of each chunk of a job in order, from
// the chunk that covers `from` (all if nil).
func (t *tx) chunks(jobID string, from []byte, fn func(entries []byte) error) error {
	prefix := appendHistoryKey(nil, jobID, nil)
	c := t.history.Cursor()
	var k, v []byte
	if from == nil {
		k, v = c.Seek(prefix)
	} else {
		k, v = seekFloor(c, prefix, appendHistoryKey(nil, jobID, from))
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		_, entries, err := decodeChunk(v)
		if err != nil {
			return fmt.Errorf("job %s: %w", jobID, err)
		}
		if err := fn(entries); err != nil {
			return err
		}
	}
	return nil
}
