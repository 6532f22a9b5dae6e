package boltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/strata-ledger/strata/fsm"
)

func (t *tx) SetAppliedIndex(index uint64) error {
	if !t.write {
		return errReadOnly
	}
	v := t.ar.keep(binary.BigEndian.AppendUint64(t.ar.room(8), index))
	if err := t.meta.Put(metaApplied, v); err != nil {
		return fmt.Errorf("boltstore: set applied index %d: %w", index, err)
	}
	return nil
}

// PutEvent appends a new event to its tenant's chain (its record under
// the chain key), indexes it by tenant and id and adds it to its job's
// history; a (tenant, id) already stored has its record replaced in place.
func (t *tx) PutEvent(se *fsm.StoredEvent) error { return t.putEvent(se, nil) }

// PutEncodedEvent implements fsm.EncodedEventTx: PutEvent without
// encoding the body again.
func (t *tx) PutEncodedEvent(se *fsm.StoredEvent, body []byte) error { return t.putEvent(se, body) }

func (t *tx) putEvent(se *fsm.StoredEvent, body []byte) error {
	if !t.write {
		return errReadOnly
	}
	if err := checkKeyPart("tenant", se.Tenant); err != nil {
		return err
	}
	bounds := t.cache.idBounds()
	if !t.missed || t.miss != se.ID || t.missTenant != se.Tenant { // Event just found nothing: skip the lookup
		t.evKey = appendEventKey(t.evKey[:0], se.Tenant, se.ID)
		if !bounds.absent(t.evKey, len(se.Tenant)) {
			if ck := t.events.Get(t.evKey); ck != nil {
				t.missed = false
				return t.replaceEvent(bytes.Clone(ck), se)
			}
		}
	}
	t.missed = false
	last, err := t.chainLast(se.Tenant)
	if err != nil {
		return err
	}
	if se.Seq != last+1 {
		return fmt.Errorf("boltstore: put event %s: seq %d, chain of %q ends at %d", se.ID, se.Seq, se.Tenant, last)
	}
	if err := t.appendRecord(se, body); err != nil {
		return err
	}
	ck := t.ar.keep(appendChainKey(t.ar.room(len(se.Tenant)+1+seqLen), se.Tenant, se.Seq))
	ek := t.ar.keep(appendEventKey(t.ar.room(len(se.Tenant)+1+eventIDLen), se.Tenant, se.ID))
	if err := t.events.Put(ek, ck); err != nil {
		return fmt.Errorf("boltstore: index event %s: %w", se.ID, err)
	}
	bounds.put(ek, len(se.Tenant))
	t.lastSeq[se.Tenant] = se.Seq
	if se.JobID != "" {
		if err := t.addHistory(se, ck); err != nil {
			return err
		}
	}
	return t.maybeCommit()
}

// replaceEvent puts se in place of the event stored under ck (tests of
// tampering): same tenant, job, seq and key.
func (t *tx) replaceEvent(ck []byte, se *fsm.StoredEvent) error {
	old, err := t.eventAt(ck)
	if err != nil {
		return err
	}
	if old.Tenant != se.Tenant || old.JobID != se.JobID || old.Seq != se.Seq || old.Key() != se.Key() {
		return fmt.Errorf("boltstore: replace event %s: tenant, job, seq and HLC must stay", se.ID)
	}
	return t.replaceRecord(ck, se)
}

func (t *tx) PutChainHead(tenant string, head fsm.ChainHead) error {
	if !t.write {
		return errReadOnly
	}
	if err := checkKeyPart("tenant", tenant); err != nil {
		return err
	}
	v, err := fsm.AppendChainHead(t.ar.room(48), head)
	if err != nil {
		return fmt.Errorf("boltstore: put chain head of %q: %w", tenant, err)
	}
	v = t.ar.keep(v)
	if err := t.heads.Put(t.ar.keep(appendHeadKey(t.ar.room(len(tenant)+1), tenant)), v); err != nil {
		return fmt.Errorf("boltstore: put chain head of %q: %w", tenant, err)
	}
	return t.maybeCommit()
}

func (t *tx) PutWorkflow(w *fsm.WorkflowState) error {
	if !t.write {
		return errReadOnly
	}
	v, err := fsm.AppendWorkflowState(t.ar.room(512), w)
	if err != nil {
		return fmt.Errorf("boltstore: put workflow %s: %w", w.ID, err)
	}
	v = t.ar.keep(v)
	if err := t.workflows.Put(t.ar.bytes(w.ID), v); err != nil {
		return fmt.Errorf("boltstore: put workflow %q: %w", w.ID, err)
	}
	if t.workflowsPut != nil {
		t.workflowsPut[w.ID] = w
	}
	return t.maybeCommit()
}

func (t *tx) PutWorker(w *fsm.WorkerState) error {
	if !t.write {
		return errReadOnly
	}
	v, err := fsm.AppendWorkerState(t.ar.room(128), w)
	if err != nil {
		return fmt.Errorf("boltstore: put worker %s: %w", w.ID, err)
	}
	v = t.ar.keep(v)
	if err := t.workers.Put(t.ar.bytes(w.ID), v); err != nil {
		return fmt.Errorf("boltstore: put worker %q: %w", w.ID, err)
	}
	return t.maybeCommit()
}

// pendingEntryBytes is what maybeCommit counts for a changed job not
// written yet (its value and index keys, roughly).
const pendingEntryBytes = 2 << 10

// maybeCommit lets Replace commit its new file once enough was written
// or is waiting to be (bbolt keeps a transaction's changes in memory, and
// inserting into a node grows more expensive with its size).
func (t *tx) maybeCommit() error {
	if t.commit == nil || t.ar.used+len(t.dirty)*pendingEntryBytes < t.commitBytes {
		return nil
	}
	return t.commit()
}
