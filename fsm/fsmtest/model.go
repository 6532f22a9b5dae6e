package fsmtest

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/strata-ledger/strata/fsm"
)

// Model is a dumb reference of the Ledger: it keeps every stored event in
// a list and recomputes a job from all of its events, sorted, whenever it
// is asked (no incremental path, no store, no batching). Its rules are
// written again from fsm/DESIGN.md rather than shared with the Ledger, so
// the two implementations check each other. It shares only Validate, the
// body encoding and ChainLink, which have tests of their own.
type Model struct {
	Applied   uint64
	events    map[modelKey]*modelEvent // by tenant and id: ids are scoped by tenant
	jobEvents map[string][]*fsm.Event  // stored job events per job, arrival order
	chains    map[string][]*modelEvent
	workflows map[string]*fsm.WorkflowState
	workers   map[string]*fsm.WorkerState
	marks     map[string]uint64
	policies  map[string]*fsm.Policy // by fsm.PolicyStateID
	// metered: the Ledger runs MeterTestHook (NewMeteredModel); meters
	// and holds are the rule's state (model_meter.go).
	metered bool
	meters  map[string]*fsm.Meter // by fsm.PolicyStateID of its record
	holds   map[string]int64      // job id -> held until (Unix ms)
}

type modelKey struct {
	tenant string
	id     fsm.EventID
}

type modelEvent struct {
	e        *fsm.Event
	bodyHash fsm.Hash
	seq      uint64
	link     fsm.Hash
}

// NewModel returns an empty model.
func NewModel() *Model {
	return &Model{
		events:    map[modelKey]*modelEvent{},
		jobEvents: map[string][]*fsm.Event{},
		chains:    map[string][]*modelEvent{},
		workflows: map[string]*fsm.WorkflowState{},
		workers:   map[string]*fsm.WorkerState{},
		marks:     map[string]uint64{},
		policies:  map[string]*fsm.Policy{},
		meters:    map[string]*fsm.Meter{},
		holds:     map[string]int64{},
	}
}

// NewMeteredModel returns an empty model of a Ledger whose Config.Meter
// is MeterTestHook.
func NewMeteredModel() *Model {
	m := NewModel()
	m.metered = true
	return m
}

// Apply applies a batch the way the Ledger promises to.
func (m *Model) Apply(index uint64, batch []fsm.Event) []fsm.Result {
	if index <= m.Applied {
		return nil
	}
	m.Applied = index
	out := make([]fsm.Result, len(batch))
	for i := range batch {
		out[i] = m.apply(&batch[i])
		out[i].Type, out[i].JobID = batch[i].Type, batch[i].JobID
	}
	return out
}

func reject(err error) fsm.Result { return fsm.Result{Outcome: fsm.OutcomeRejected, Err: err} }

func (m *Model) apply(e *fsm.Event) fsm.Result {
	if err := e.Validate(); err != nil {
		return reject(err)
	}
	bh, err := fsm.BodyHash(e.Body)
	if err != nil {
		return reject(err)
	}
	if prev := m.events[modelKey{e.Tenant, e.ID}]; prev != nil {
		p := prev.e
		same := p.Type == e.Type && p.JobID == e.JobID && p.Tenant == e.Tenant && p.Region == e.Region &&
			p.Node == e.Node && p.HLC == e.HLC && p.Fence == e.Fence && prev.bodyHash == bh
		if !same {
			return reject(fsm.ErrEventConflict)
		}
		return fsm.Result{Outcome: fsm.OutcomeDuplicate, Seq: prev.seq}
	}
	var r fsm.Result
	switch {
	case e.Type.IsJob():
		r = m.applyJob(e)
	case e.Type.IsWorkflow():
		r = m.applyWorkflow(e)
	case e.Type == fsm.TypeForwardMark:
		r = m.applyForwardMark(e.Body.(*fsm.ForwardMark))
	case e.Type.IsGovernance():
		r = m.applyGovernance(e)
	default:
		r = m.applyWorker(e)
	}
	if r.Outcome == fsm.OutcomeRejected {
		return r
	}
	r.Seq = m.store(e, bh)
	return r
}

func (m *Model) store(e *fsm.Event, bh fsm.Hash) uint64 {
	chain := m.chains[e.Tenant]
	var prev fsm.ChainHead
	if n := len(chain); n > 0 {
		prev = fsm.ChainHead{Seq: chain[n-1].seq, Link: chain[n-1].link}
	}
	me := &modelEvent{e: e, bodyHash: bh, seq: prev.Seq + 1, link: fsm.ChainLink(prev, e, bh)}
	m.chains[e.Tenant] = append(chain, me)
	m.events[modelKey{e.Tenant, e.ID}] = me
	if e.Type.IsJob() {
		m.jobEvents[e.JobID] = append(m.jobEvents[e.JobID], e)
	}
	return me.seq
}

func (m *Model) applyJob(e *fsm.Event) fsm.Result {
	evs := m.jobEvents[e.JobID]
	if e.Type == fsm.TypeJobCreated {
		if len(evs) > 0 {
			return reject(fsm.ErrJobExists)
		}
		if m.metered {
			m.meterCreate(e)
		}
		return fsm.Result{Outcome: fsm.OutcomeApplied}
	}
	if len(evs) == 0 {
		return reject(fsm.ErrUnknownJob)
	}
	c := evs[0]
	assigned := c.Body.(*fsm.JobCreated).AssignedRegions
	switch {
	case e.Tenant != c.Tenant: // reads as an unknown job
		return reject(errors.Join(fsm.ErrUnknownJob, fsm.ErrTenantMismatch))
	case regionOf(e.Body) != "" && !slices.Contains(assigned, regionOf(e.Body)):
		return reject(fsm.ErrUnknownRegion)
	case e.Key().Compare(c.Key()) <= 0:
		return reject(fsm.ErrPrecedesCreation)
	}
	pre := m.fold(evs)
	if e.Type == fsm.TypeJobAdmitted && pre.Spec.Held && !pre.Admitted && !terminal(pre.Status) &&
		e.HLC.WallMs < pre.Spec.EligibleAtMs {
		return reject(fsm.ErrOverQuota) // no admission before the gate's eligible time
	}
	effect := naiveEffect(pre, m.fold(append(slices.Clone(evs), e)), e)
	if effect != nil {
		return fsm.Result{Outcome: fsm.OutcomeAbsorbed, Err: effect}
	}
	return fsm.Result{Outcome: fsm.OutcomeApplied}
}

func regionOf(b fsm.Body) string {
	switch b := b.(type) {
	case *fsm.JobAccepted:
		return b.Region
	case *fsm.JobProgressReported:
		return b.Region
	case *fsm.JobCancellationAcked:
		return b.Region
	case *fsm.JobFailed:
		return b.FailedRegion
	}
	return ""
}

// Job recomputes a job from all its stored events; nil if not created.
func (m *Model) Job(id string) *fsm.JobState {
	evs := m.jobEvents[id]
	if len(evs) == 0 {
		return nil
	}
	return m.fold(evs)
}

// JobIDs returns the ids of every created job, sorted.
func (m *Model) JobIDs() []string {
	var ids []string
	for id := range m.jobEvents {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// JobHistory returns the ids of a job's stored events (job and workflow
// events) in canonical order.
func (m *Model) JobHistory(jobID string) []fsm.EventID {
	var evs []*fsm.Event
	for _, me := range m.events {
		if me.e.JobID == jobID {
			evs = append(evs, me.e)
		}
	}
	slices.SortFunc(evs, func(a, b *fsm.Event) int { return a.Key().Compare(b.Key()) })
	ids := make([]fsm.EventID, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	return ids
}

// ChainHead returns a tenant's chain head.
func (m *Model) ChainHead(tenant string) fsm.ChainHead {
	c := m.chains[tenant]
	if len(c) == 0 {
		return fsm.ChainHead{}
	}
	return fsm.ChainHead{Seq: c[len(c)-1].seq, Link: c[len(c)-1].link}
}

// Tenants returns every tenant with a chain, sorted.
func (m *Model) Tenants() []string {
	var ts []string
	for t := range m.chains {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}

// Digest computes the whole-ledger digest from the recomputed jobs:
// SHA-256 over uvarint(len(id)) ‖ id ‖ job digest, in id order.
func (m *Model) Digest() (fsm.Hash, error) {
	h := sha256.New()
	for _, id := range m.JobIDs() {
		d, err := m.Job(id).Digest()
		if err != nil {
			return fsm.Hash{}, err
		}
		h.Write(binary.AppendUvarint(nil, uint64(len(id))))
		h.Write([]byte(id))
		h.Write(d[:])
	}
	var out fsm.Hash
	h.Sum(out[:0])
	return out, nil
}

// Workflows returns every workflow, sorted by id.
func (m *Model) Workflows() []*fsm.WorkflowState {
	var ws []*fsm.WorkflowState
	for _, w := range m.workflows {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(a, b *fsm.WorkflowState) int { return strings.Compare(a.ID, b.ID) })
	return ws
}

// Workers returns every worker, sorted by id.
func (m *Model) Workers() []*fsm.WorkerState {
	var ws []*fsm.WorkerState
	for _, w := range m.workers {
		ws = append(ws, w)
	}
	slices.SortFunc(ws, func(a, b *fsm.WorkerState) int { return strings.Compare(a.ID, b.ID) })
	return ws
}

// applyForwardMark: each tenant's mark is the highest seq ever marked;
// a valid mark is always applied.
func (m *Model) applyForwardMark(b *fsm.ForwardMark) fsm.Result {
	for _, p := range b.Marks {
		m.marks[p.Tenant] = max(m.marks[p.Tenant], p.Seq)
	}
	return fsm.Result{Outcome: fsm.OutcomeApplied}
}

// ForwardMarks returns a copy of every tenant's forward mark.
func (m *Model) ForwardMarks() map[string]uint64 { return maps.Clone(m.marks) }

// String summarizes the model for failure messages.
func (m *Model) String() string {
	return fmt.Sprintf("model{applied %d, events %d, jobs %d, workflows %d, workers %d, forward marks %d}",
		m.Applied, len(m.events), len(m.jobEvents), len(m.workflows), len(m.workers), len(m.marks))
}
