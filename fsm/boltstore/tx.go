package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/strata-ledger/strata/fsm"
)

var (
	_ fsm.Tx             = (*tx)(nil)
	_ fsm.EncodedEventTx = (*tx)(nil)
	_ fsm.ImageStore     = (*Store)(nil)
)

// tx is an fsm.Tx over one bbolt transaction. A read-only tx (View) reads
// the file directly; a write tx (Update, Replace) keeps the jobs it
// touches as entries and writes each changed one once, at flush.
type tx struct {
	btx   *bolt.Tx
	write bool

	meta, chains, events, heads, jobs, history, index, workflows, workers, marks *bolt.Bucket

	evCursor *bolt.Cursor // Event's, created on first use
	evKey    []byte       // scratch: the key Event seeks (and putEvent gets)
	wfCursor *bolt.Cursor // Workflow's, created on first use
	wfKey    []byte       // scratch: the key Workflow seeks

	// Write transactions only.
	ar      *arena
	cache   *hotState // Update's; nil in Replace
	tailK   int
	entries map[string]*jobEntry // jobs loaded or changed in this transaction
	// workflowsPut: the workflows this transaction put (Update's; nil in
	// Replace), for Workflow and then the workflow cache.
	workflowsPut map[string]*fsm.WorkflowState
	dirty        []*jobEntry       // entries to write at flush, in first-touch order
	lastSeq      map[string]uint64 // tenant -> last chain seq, once read
	missed       bool              // Event(missTenant, miss) found nothing, and nothing was put since
	miss         fsm.EventID
	missTenant   string
	keys         [][]byte              // scratch of reindex
	blocks       map[string]*openBlock // tenant -> its open chain block
	freeBlocks   []*openBlock
	scratch      []byte // a record being encoded
	// Replace: commit commits and begins a new transaction once
	// commitBytes were written since the last.
	commit      func() error
	commitBytes int
}

var errReadOnly = errors.New("boltstore: write in a read-only transaction")

// bind opens the buckets of btx; every bucket must exist.
func (t *tx) bind(btx *bolt.Tx) error {
	t.btx, t.evCursor, t.wfCursor = btx, nil, nil
	ptrs := []**bolt.Bucket{&t.meta, &t.chains, &t.events, &t.heads, &t.jobs, &t.history, &t.index, &t.workflows, &t.workers, &t.marks}
	for i, name := range allBuckets {
		if *ptrs[i] = btx.Bucket(name); *ptrs[i] == nil {
			return fmt.Errorf("%w: no bucket %q", ErrCorrupt, name)
		}
	}
	if t.write {
		t.chains.FillPercent = 1    // appends at the end of each tenant's chain
		t.events.FillPercent = 0.9  // appends if a tenant's ids increase, random inserts otherwise
		t.history.FillPercent = 0.9 // a job's chunks are appended in key order
		t.jobs.FillPercent = 0.9    // job ids increase: new jobs append
		t.index.FillPercent = 0.9   // job ids increase: keys append to their range
	}
	return nil
}

func (t *tx) AppliedIndex() (uint64, error) {
	v := t.meta.Get(metaApplied)
	if v == nil {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: applied index of %d bytes", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Event looks the tenant's event up by its key tenant ‖ 0 ‖ id (ids are
// scoped by tenant), seeking one cursor reused by the many lookups of a
// batch, and checks that the record found is that event.
//
// In Update, a key at or above its id bound (idbounds.go) is not
// stored: the answer needs no search, and a search that finds nothing
// teaches the bounds.
func (t *tx) Event(tenant string, id fsm.EventID) (*fsm.StoredEvent, error) {
	t.evKey = appendEventKey(t.evKey[:0], tenant, id)
	bounds := t.cache.idBounds()
	if bounds.absent(t.evKey, len(tenant)) {
		t.missed, t.miss, t.missTenant = true, id, tenant
		return nil, nil
	}
	if t.evCursor == nil {
		t.evCursor = t.events.Cursor()
	}
	k, ck := t.evCursor.Seek(t.evKey)
	if !bytes.Equal(k, t.evKey) {
		bounds.missed(t.evKey, k, len(tenant))
		t.missed, t.miss, t.missTenant = true, id, tenant
		return nil, nil
	}
	t.missed = false
	se, err := t.eventAt(ck)
	if err == nil && (se.Tenant != tenant || se.ID != id) {
		return nil, fmt.Errorf("%w: event key %x points at event %s of tenant %q", ErrCorrupt, k, se.ID, se.Tenant)
	}
	return se, err
}

func (t *tx) ChainHead(tenant string) (fsm.ChainHead, bool, error) {
	v := t.heads.Get(appendHeadKey(nil, tenant))
	if v == nil {
		return fsm.ChainHead{}, false, nil
	}
	h, err := fsm.DecodeChainHead(v)
	if err != nil {
		return fsm.ChainHead{}, false, fmt.Errorf("%w: chain head of %q: %w", ErrCorrupt, tenant, err)
	}
	return h, true, nil
}

func (t *tx) ChainHeads(fn func(string, fsm.ChainHead) error) error {
	c := t.heads.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		tenant, err := parseHeadKey(k)
		if err != nil {
			return err
		}
		h, err := fsm.DecodeChainHead(v)
		if err != nil {
			return fmt.Errorf("%w: chain head of %q: %w", ErrCorrupt, tenant, err)
		}
		if err := fn(tenant, h); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Job(id string) (*fsm.JobState, error) {
	if t.write {
		e, err := t.entry(id, false)
		if e == nil || err != nil {
			return nil, err
		}
		return e.current()
	}
	v := t.jobs.Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	jv, err := decodeJobValue(v)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", id, err)
	}
	return decodeState(id, jv.state)
}

// decodeState decodes a job state record; nil if there is none.
func decodeState(id string, rec []byte) (*fsm.JobState, error) {
	if rec == nil {
		return nil, nil
	}
	s, err := fsm.DecodeJobState(rec)
	if err != nil {
		return nil, fmt.Errorf("%w: job %s: %w", ErrCorrupt, id, err)
	}
	if s.JobID != id {
		return nil, fmt.Errorf("%w: job %s holds the state of %s", ErrCorrupt, id, s.JobID)
	}
	return s, nil
}

// Jobs lists every job from the jobs bucket, or a tenant's from its index.
func (t *tx) Jobs(tenant, after string, fn func(*fsm.JobState) error) error {
	if tenant != "" {
		return t.JobsMatching(fsm.JobFilter{Tenant: tenant}, after, fn)
	}
	if err := t.flush(); err != nil {
		return err
	}
	c := t.jobs.Cursor()
	k, v := c.First()
	if after != "" {
		if k, v = c.Seek([]byte(after)); k != nil && string(k) == after {
			k, v = c.Next()
		}
	}
	for ; k != nil; k, v = c.Next() {
		jv, err := decodeJobValue(v)
		if err != nil {
			return fmt.Errorf("job %s: %w", k, err)
		}
		s, err := decodeState(string(k), jv.state)
		if err != nil {
			return err
		}
		if s == nil {
			continue // history of workflows whose job this ledger does not hold
		}
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

// Workflow seeks one cursor, reused by the many lookups of a batch (a
// Get makes a new cursor each time), with a reused key. In Update it
// first looks at what the transaction put and at the workflow cache.
func (t *tx) Workflow(id string) (*fsm.WorkflowState, error) {
	if w := t.workflowsPut[id]; w != nil {
		return w, nil
	}
	if w := t.cache.workflow(id); w != nil {
		return w, nil
	}
	if t.wfCursor == nil {
		t.wfCursor = t.workflows.Cursor()
	}
	t.wfKey = append(t.wfKey[:0], id...)
	k, v := t.wfCursor.Seek(t.wfKey)
	if v == nil || !bytes.Equal(k, t.wfKey) {
		return nil, nil
	}
	w, err := fsm.DecodeWorkflowState(v)
	if err != nil {
		return nil, fmt.Errorf("%w: workflow %s: %w", ErrCorrupt, id, err)
	}
	return w, nil
}

func (t *tx) Workflows(prefix string, fn func(*fsm.WorkflowState) error) error {
	c := t.workflows.Cursor()
	k, v := c.First()
	if prefix != "" {
		k, v = c.Seek([]byte(prefix))
	}
	for ; k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
		w, err := fsm.DecodeWorkflowState(v)
		if err != nil {
			return fmt.Errorf("%w: workflow %s: %w", ErrCorrupt, k, err)
		}
		if err := fn(w); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Worker(id string) (*fsm.WorkerState, error) {
	v := t.workers.Get([]byte(id))
	if v == nil {
		return nil, nil
	}
	w, err := fsm.DecodeWorkerState(v)
	if err != nil {
		return nil, fmt.Errorf("%w: worker %s: %w", ErrCorrupt, id, err)
	}
	return w, nil
}

func (t *tx) Workers(fn func(*fsm.WorkerState) error) error {
	c := t.workers.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		w, err := fsm.DecodeWorkerState(v)
		if err != nil {
			return fmt.Errorf("%w: worker %s: %w", ErrCorrupt, k, err)
		}
		if err := fn(w); err != nil {
			return err
		}
	}
	return nil
}
