// Package memstore is the in-memory fsm.Store: the model the ledger's
// rules are tested against, and the store of tests and single-process dev
// clusters.
//
// It keeps the values the Ledger hands it (no encoding) in maps with
// sorted key slices for ordered iteration. Update is atomic: every write
// is logged with the value it replaced, and a failing transaction is
// rolled back from that log. Lists filtered by status or region scan the
// tenant's jobs (no secondary indexes). Views take a read lock and Update
// a write lock, so a long View (a snapshot) delays applies; that is the
// price of a model this simple, not a property of the Store contract.
//
// It does not persist anything and does not bound its memory: it holds
// every event ever applied.
package memstore

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/strata-ledger/strata/fsm"
)

var (
	_ fsm.Store = (*Store)(nil)
	_ fsm.Tx    = (*tx)(nil)
)

// Store is an in-memory fsm.Store. Safe for concurrent use.
type Store struct {
	mu      sync.RWMutex
	st      *state
	undo    []undo // writes of the running Update, for rollback
	logging bool
}

// New returns an empty store.
func New() *Store { return &Store{st: newState()} }

type state struct {
	applied   uint64
	events    map[eventKey]*fsm.StoredEvent // by tenant and id
	history   map[string][]*fsm.StoredEvent // by job id, canonical order
	chains    map[string]*chain
	tenants   []string // tenants with a chain head, sorted
	jobs      map[string]*fsm.JobState
	jobIDs    []string            // sorted
	byTenant  map[string][]string // tenant -> sorted job ids
	workflows map[string]*fsm.WorkflowState
	wfIDs     []string // sorted
	workers   map[string]*fsm.WorkerState
	workerIDs []string // sorted
	marks     map[string]uint64
	markIDs   []string               // tenants with a forward mark, sorted
	policies  map[string]*fsm.Policy // by fsm.PolicyStateID(kind, key)
	policyIDs []string               // sorted
	meters    map[string]*fsm.Meter  // by fsm.PolicyStateID(kind, key)
	meterIDs  []string               // sorted
}

// eventKey is an event's identity: ids are scoped by tenant.
type eventKey struct {
	tenant string
	id     fsm.EventID
}

func keyOf(se *fsm.StoredEvent) eventKey { return eventKey{se.Tenant, se.ID} }

type chain struct {
	head    fsm.ChainHead
	hasHead bool
	events  []*fsm.StoredEvent // events[i].Seq == i+1
}

func newState() *state {
	return &state{
		events:    make(map[eventKey]*fsm.StoredEvent),
		history:   make(map[string][]*fsm.StoredEvent),
		chains:    make(map[string]*chain),
		jobs:      make(map[string]*fsm.JobState),
		byTenant:  make(map[string][]string),
		workflows: make(map[string]*fsm.WorkflowState),
		workers:   make(map[string]*fsm.WorkerState),
		marks:     make(map[string]uint64),
		policies:  make(map[string]*fsm.Policy),
		meters:    make(map[string]*fsm.Meter),
	}
}

// View implements fsm.Store.
func (s *Store) View(fn func(fsm.ReadTx) error) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return fn(&tx{s: s, st: s.st})
}

// Update implements fsm.Store: fn's writes are undone if it fails.
func (s *Store) Update(fn func(fsm.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.undo, s.logging = s.undo[:0], true
	err := fn(&tx{s: s, st: s.st, write: true})
	if err != nil {
		s.rollback()
	}
	clear(s.undo)
	s.undo, s.logging = s.undo[:0], false
	return err
}

// Replace implements fsm.Store: fn fills a new, empty state that replaces
// the old one only if fn succeeds.
func (s *Store) Replace(fn func(fsm.Tx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := newState()
	if err := fn(&tx{s: s, st: fresh, write: true}); err != nil {
		return err
	}
	s.st = fresh
	return nil
}

// tx implements fsm.Tx over one state; write says whether it may write.
type tx struct {
	s     *Store
	st    *state
	write bool
}

var errReadOnly = errors.New("memstore: write in a read-only transaction")

func (t *tx) AppliedIndex() (uint64, error) { return t.st.applied, nil }

func (t *tx) Event(tenant string, id fsm.EventID) (*fsm.StoredEvent, error) {
	return t.st.events[eventKey{tenant, id}], nil
}

func (t *tx) JobEvents(jobID string, after fsm.EventKey, fn func(*fsm.StoredEvent) error) error {
	h := t.st.history[jobID]
	i := 0
	if !after.IsZero() {
		i, _ = slices.BinarySearchFunc(h, after, func(se *fsm.StoredEvent, k fsm.EventKey) int {
			if se.Key().Compare(k) <= 0 {
				return -1
			}
			return 1
		})
	}
	for _, se := range h[i:] {
		if err := fn(se); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) ChainEvents(tenant string, after uint64, fn func(*fsm.StoredEvent) error) error {
	c := t.st.chains[tenant]
	if c == nil || after >= uint64(len(c.events)) {
		return nil
	}
	for _, se := range c.events[after:] {
		if err := fn(se); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) ChainHead(tenant string) (fsm.ChainHead, bool, error) {
	if c := t.st.chains[tenant]; c != nil && c.hasHead {
		return c.head, true, nil
	}
	return fsm.ChainHead{}, false, nil
}

func (t *tx) ChainHeads(fn func(string, fsm.ChainHead) error) error {
	for _, tenant := range t.st.tenants {
		if err := fn(tenant, t.st.chains[tenant].head); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Job(id string) (*fsm.JobState, error) { return t.st.jobs[id], nil }

func (t *tx) Jobs(tenant, after string, fn func(*fsm.JobState) error) error {
	ids := t.st.jobIDs
	if tenant != "" {
		ids = t.st.byTenant[tenant]
	}
	for _, id := range ids[upperBound(ids, after):] {
		if err := fn(t.st.jobs[id]); err != nil {
			return err
		}
	}
	return nil
}

// JobsMatching filters the tenant's jobs: the model keeps no secondary
// indexes, so a rare match costs a scan of the tenant's jobs (fine for
// tests and dev clusters; fsm/boltstore keeps real indexes).
func (t *tx) JobsMatching(f fsm.JobFilter, after string, fn func(*fsm.JobState) error) error {
	if f.Tenant == "" {
		return errors.New("memstore: jobs matching a filter without a tenant")
	}
	ids := t.st.byTenant[f.Tenant]
	for _, id := range ids[upperBound(ids, after):] {
		if s := t.st.jobs[id]; f.Matches(s) {
			if err := fn(s); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t *tx) Workflow(id string) (*fsm.WorkflowState, error) { return t.st.workflows[id], nil }

func (t *tx) Workflows(prefix string, fn func(*fsm.WorkflowState) error) error {
	i, _ := slices.BinarySearch(t.st.wfIDs, prefix)
	for _, id := range t.st.wfIDs[i:] {
		if !strings.HasPrefix(id, prefix) {
			return nil
		}
		if err := fn(t.st.workflows[id]); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) Worker(id string) (*fsm.WorkerState, error) { return t.st.workers[id], nil }

func (t *tx) Workers(fn func(*fsm.WorkerState) error) error {
	for _, id := range t.st.workerIDs {
		if err := fn(t.st.workers[id]); err != nil {
			return err
		}
	}
	return nil
}

func (t *tx) ForwardMark(tenant string) (uint64, error) { return t.st.marks[tenant], nil }

func (t *tx) ForwardMarks(fn func(string, uint64) error) error {
	for _, tenant := range t.st.markIDs {
		if err := fn(tenant, t.st.marks[tenant]); err != nil {
			return err
		}
	}
	return nil
}

// upperBound returns the index of the first id greater than after.
func upperBound(ids []string, after string) int {
	if after == "" {
		return 0
	}
	i, found := slices.BinarySearch(ids, after)
	if found {
		i++
	}
	return i
}

func insertSorted(ss []string, s string) []string {
	i, found := slices.BinarySearch(ss, s)
	if found {
		return ss
	}
	return slices.Insert(ss, i, s)
}

func removeSorted(ss []string, s string) []string {
	if i, found := slices.BinarySearch(ss, s); found {
		return slices.Delete(ss, i, i+1)
	}
	return ss
}

func (t *tx) SetAppliedIndex(index uint64) error {
	if !t.write {
		return errReadOnly
	}
	t.log(undo{kind: undoApplied, u64: t.st.applied})
	t.st.applied = index
	return nil
}

func (t *tx) PutEvent(se *fsm.StoredEvent) error {
	if !t.write {
		return errReadOnly
	}
	if old := t.st.events[keyOf(se)]; old != nil {
		return t.replaceEvent(old, se)
	}
	c := t.st.chain(se.Tenant)
	if se.Seq != uint64(len(c.events))+1 {
		return fmt.Errorf("memstore: put event %s: seq %d, chain of %q has %d events", se.ID, se.Seq, se.Tenant, len(c.events))
	}
	c.events = append(c.events, se)
	t.st.events[keyOf(se)] = se
	if se.JobID != "" {
		t.st.history[se.JobID] = insertEvent(t.st.history[se.JobID], se)
	}
	t.log(undo{kind: undoEventNew, ev: se})
	return nil
}

// replaceEvent puts se in old's place (tests of tampering).
func (t *tx) replaceEvent(old, se *fsm.StoredEvent) error {
	if old.Tenant != se.Tenant || old.JobID != se.JobID || old.Seq != se.Seq || old.Key() != se.Key() {
		return fmt.Errorf("memstore: replace event %s: tenant, job, seq and HLC must stay", se.ID)
	}
	t.st.swapEvent(old, se)
	t.log(undo{kind: undoEventReplace, ev: old})
	return nil
}

func (st *state) swapEvent(old, se *fsm.StoredEvent) {
	st.events[keyOf(se)] = se
	st.chains[se.Tenant].events[se.Seq-1] = se
	h := st.history[se.JobID]
	for i := range h {
		if h[i] == old {
			h[i] = se
		}
	}
}

func (st *state) chain(tenant string) *chain {
	c := st.chains[tenant]
	if c == nil {
		c = &chain{}
		st.chains[tenant] = c
	}
	return c
}

// insertEvent inserts se in canonical order; appending is the common case.
func insertEvent(h []*fsm.StoredEvent, se *fsm.StoredEvent) []*fsm.StoredEvent {
	k := se.Key()
	if n := len(h); n == 0 || h[n-1].Key().Less(k) {
		return append(h, se)
	}
	i, _ := slices.BinarySearchFunc(h, k, func(x *fsm.StoredEvent, k fsm.EventKey) int { return x.Key().Compare(k) })
	return slices.Insert(h, i, se)
}

func (t *tx) PutChainHead(tenant string, head fsm.ChainHead) error {
	if !t.write {
		return errReadOnly
	}
	c := t.st.chain(tenant)
	t.log(undo{kind: undoHead, key: tenant, head: c.head, had: c.hasHead})
	if !c.hasHead {
		t.st.tenants = insertSorted(t.st.tenants, tenant)
	}
	c.head, c.hasHead = head, true
	return nil
}

func (t *tx) PutJob(s *fsm.JobState) error {
	if !t.write {
		return errReadOnly
	}
	old := t.st.jobs[s.JobID]
	if old != nil && old.Tenant != s.Tenant {
		return fmt.Errorf("memstore: put job %s: tenant %q, stored %q", s.JobID, s.Tenant, old.Tenant)
	}
	t.log(undo{kind: undoJob, key: s.JobID, job: old})
	t.st.jobs[s.JobID] = s
	if old == nil {
		t.st.jobIDs = insertSorted(t.st.jobIDs, s.JobID)
		t.st.byTenant[s.Tenant] = insertSorted(t.st.byTenant[s.Tenant], s.JobID)
	}
	return nil
}

func (t *tx) PutWorkflow(w *fsm.WorkflowState) error {
	if !t.write {
		return errReadOnly
	}
	old := t.st.workflows[w.ID]
	t.log(undo{kind: undoWorkflow, key: w.ID, wf: old})
	t.st.workflows[w.ID] = w
	if old == nil {
		t.st.wfIDs = insertSorted(t.st.wfIDs, w.ID)
	}
	return nil
}

func (t *tx) PutWorker(w *fsm.WorkerState) error {
	if !t.write {
		return errReadOnly
	}
	old := t.st.workers[w.ID]
	t.log(undo{kind: undoWorker, key: w.ID, wk: old})
	t.st.workers[w.ID] = w
	if old == nil {
		t.st.workerIDs = insertSorted(t.st.workerIDs, w.ID)
	}
	return nil
}

func (t *tx) PutForwardMark(tenant string, seq uint64) error {
	if !t.write {
		return errReadOnly
	}
	if tenant == "" {
		return errors.New("memstore: forward mark of the empty tenant")
	}
	old, had := t.st.marks[tenant]
	t.log(undo{kind: undoMark, key: tenant, u64: old, had: had})
	t.st.marks[tenant] = seq
	if !had {
		t.st.markIDs = insertSorted(t.st.markIDs, tenant)
	}
	return nil
}
