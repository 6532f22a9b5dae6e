package fsm

import (
	"crypto/sha256"
	"errors"
	"fmt"
)

// applier applies the events of one batch inside one store transaction.
// It keeps the batch's working copies of the jobs and chain heads it
// touches and writes each once at the end (flush), so a batch of many
// progress reports of one job costs one job write. Its buffers are reused
// from batch to batch.
type applier struct {
	tx    Tx
	encTx EncodedEventTx // tx, if it takes encoded bodies
	body  []byte         // scratch: a body's canonical encoding
	enc   encoder        // reused by AppendBody (saves an allocation per event)
	val   validator      // reused by Validate (saves an allocation per event)
	link  []byte         // scratch: a link's hash input

	jobs      map[string]int32 // job id -> index in works
	works     []jobWork
	dirtyJobs []int32
	heads     map[string]*headWork
	headList  []*headWork
	// changed lists the state the batch changed, for the Observer
	// (possibly repeated; filled as the batch applies and at flush).
	changed []StateKey
	// admission is Config.Admission.
	admission func(tx ReadTx, job *JobState) error
	// ended collects the batch's job ends for Config.Ended (only when it
	// is set), told once the batch committed.
	ended    []JobEnd
	endedSet bool
	// meter is Config.Meter.
	meter MeterHook
}

// jobWork is a job touched by the batch: its state as stored until the
// first change, then a private copy (mutable) that flush writes.
type jobWork struct {
	f       jobFold
	mutable bool
}

// headWork is a tenant's chain head as the batch advances it.
type headWork struct {
	tenant string
	head   ChainHead
	dirty  bool
}

func (a *applier) init() {
	a.jobs = make(map[string]int32)
	a.heads = make(map[string]*headWork)
	a.link = make([]byte, 0, maxLinkInput)
}

func (a *applier) begin(tx Tx) {
	a.tx = tx
	a.encTx, _ = tx.(EncodedEventTx)
	clear(a.jobs)
	clear(a.heads)
	a.works = a.works[:0]
	a.dirtyJobs = a.dirtyJobs[:0]
	a.headList = a.headList[:0]
	clear(a.changed)
	a.changed = a.changed[:0]
	clear(a.ended)
	a.ended = a.ended[:0]
}

// end drops the batch's references so stored values can be collected.
func (a *applier) end() {
	a.tx, a.encTx = nil, nil
	clear(a.jobs)
	clear(a.heads)
	clear(a.works)
	clear(a.headList)
	a.works, a.dirtyJobs, a.headList = a.works[:0], a.dirtyJobs[:0], a.headList[:0]
}

func rejected(err error) Result { return Result{Outcome: OutcomeRejected, Err: err} }

// apply applies one event. The error is a store failure; every rule
// violation is a Result.
// raw, if not nil, is the body's canonical encoding (from the batch).
func (a *applier) apply(e *Event, raw []byte) (Result, error) {
	if err := e.validate(&a.val); err != nil {
		return rejected(err), nil
	}
	if raw == nil {
		var err error
		if a.body, err = a.enc.appendBody(a.body[:0], e.Body); err != nil {
			return rejected(err), nil
		}
		raw = a.body
	}
	bodyHash := Hash(sha256.Sum256(raw))
	prev, err := a.tx.Event(e.Tenant, e.ID)
	if err != nil {
		return Result{}, err
	}
	if prev != nil {
		if !SameEvent(&prev.Event, prev.BodyHash, e, bodyHash) {
			return rejected(fmt.Errorf("event %s: %w", e.ID, ErrEventConflict)), nil
		}
		return Result{Outcome: OutcomeDuplicate, Seq: prev.Seq}, nil
	}
	var r Result
	switch {
	case e.Type.IsJob():
		r, err = a.applyJob(e)
	case e.Type.IsWorkflow():
		r, err = a.applyWorkflow(e)
	case e.Type == TypeForwardMark:
		r, err = a.applyForwardMark(e.Body.(*ForwardMark))
	case e.Type.IsGovernance():
		r, err = a.applyGovernance(e)
	default:
		r, err = a.applyWorker(e)
	}
	if err != nil || !r.Outcome.Stored() {
		return r, err
	}
	r.Seq, err = a.store(e, bodyHash, raw)
	return r, err
}

// SameEvent reports whether two events with one (tenant, id) are the same
// event: origin, job, fence and body (ha, hb: their body hashes). It is
// the ledger's duplicate rule; an import checks bundles with it too.
func SameEvent(a *Event, ha Hash, b *Event, hb Hash) bool {
	return a.Type == b.Type && a.JobID == b.JobID && a.Tenant == b.Tenant && a.Region == b.Region &&
		a.Node == b.Node && a.HLC == b.HLC && a.Fence == b.Fence && ha == hb
}

// store appends the event to its tenant's chain and stores it; raw is
// the body's canonical encoding.
func (a *applier) store(e *Event, bodyHash Hash, raw []byte) (uint64, error) {
	h, err := a.head(e.Tenant)
	if err != nil {
		return 0, err
	}
	link := chainLink(a.link[:0], h.head, e, bodyHash)
	h.head = ChainHead{Seq: h.head.Seq + 1, Link: link}
	h.dirty = true
	se := &StoredEvent{Event: *e, Seq: h.head.Seq, Link: link, BodyHash: bodyHash}
	if a.encTx != nil {
		return se.Seq, a.encTx.PutEncodedEvent(se, raw)
	}
	return se.Seq, a.tx.PutEvent(se)
}

func (a *applier) head(tenant string) (*headWork, error) {
	if h := a.heads[tenant]; h != nil {
		return h, nil
	}
	head, _, err := a.tx.ChainHead(tenant)
	if err != nil {
		return nil, err
	}
	h := &headWork{tenant: tenant, head: head}
	a.heads[tenant] = h
	a.headList = append(a.headList, h)
	return h, nil
}

// flush writes the batch's changed jobs and chain heads, in first-touch
// order.
func (a *applier) flush() error {
	if err := a.flushJobs(); err != nil {
		return err
	}
	for _, h := range a.headList {
		if h.dirty {
			if err := a.tx.PutChainHead(h.tenant, h.head); err != nil {
				return err
			}
			a.changed = append(a.changed, StateKey{StateChain, h.tenant})
		}
	}
	return nil
}

// flushJobs writes the batch's changed jobs so far; a later change of
// one of them starts from a new private copy (the store owns what it was
// given).
func (a *applier) flushJobs() error {
	for _, i := range a.dirtyJobs {
		if err := a.tx.PutJob(a.works[i].f.s); err != nil {
			return err
		}
		a.works[i].mutable = false
		a.changed = append(a.changed, StateKey{StateJob, a.works[i].f.s.JobID})
	}
	a.dirtyJobs = a.dirtyJobs[:0]
	return nil
}

// job returns the batch's view of a job, nil if it has none. The pointer
// is valid until the next call of job or addJob.
func (a *applier) job(id string) (*jobWork, error) {
	if i, ok := a.jobs[id]; ok {
		return &a.works[i], nil
	}
	s, err := a.tx.Job(id)
	if err != nil || s == nil {
		return nil, err
	}
	return a.addJob(id, jobWork{f: jobFold{s: s}}), nil
}

func (a *applier) addJob(id string, w jobWork) *jobWork {
	i := int32(len(a.works))
	a.works = append(a.works, w)
	a.jobs[id] = i
	if w.mutable {
		a.dirtyJobs = append(a.dirtyJobs, i)
	}
	return &a.works[i]
}

// mutate makes w's state private to this batch before its first change.
func (a *applier) mutate(id string, w *jobWork) {
	if !w.mutable {
		w.f = jobFold{s: w.f.s.Clone()}
		w.mutable = true
		a.dirtyJobs = append(a.dirtyJobs, a.jobs[id])
	}
}

// applyJob checks what makes a job event storable (a created job, its
// tenant, an assigned region, after the creation) and folds it.
func (a *applier) applyJob(e *Event) (Result, error) {
	w, err := a.job(e.JobID)
	if err != nil {
		return Result{}, err
	}
	if c, ok := e.Body.(*JobCreated); ok {
		if w != nil {
			return rejected(fmt.Errorf("job %s: %w", e.JobID, ErrJobExists)), nil
		}
		s := newJobState(e, c)
		if a.meter != nil {
			if err := a.meterCreate(e, s); err != nil {
				return Result{}, err
			}
		}
		a.addJob(e.JobID, jobWork{f: jobFold{s: s}, mutable: true})
		return Result{Outcome: OutcomeApplied}, nil
	}
	if w == nil {
		return rejected(fmt.Errorf("job %s: %w", e.JobID, ErrUnknownJob)), nil
	}
	if err := storable(w.f.s, e); err != nil {
		return rejected(err), nil
	}
	if w.f.s.Events >= MaxEventsPerJob {
		return rejected(fmt.Errorf("job %s: %w", e.JobID, &LimitError{Field: "events of a job", Limit: MaxEventsPerJob, Got: int(w.f.s.Events) + 1})), nil
	}
	if _, ok := e.Body.(*JobAdmitted); ok && w.f.s.Queued() && !w.f.s.Status.Terminal() {
		if r, err := a.admit(e, w.f.s); err != nil || r.Outcome == OutcomeRejected {
			return r, err
		}
	}
	a.mutate(e.JobID, w)
	if w.f.needsCreatedFence(e) {
		if err := a.createdFence(&w.f); err != nil {
			return Result{}, err
		}
	}
	from := w.f.s.Status
	effect := w.f.fold(e)
	if a.endedSet {
		if end, ok := jobEnd(from, w.f.s, e); ok {
			a.ended = append(a.ended, end)
		}
	}
	if effect != nil {
		return Result{Outcome: OutcomeAbsorbed, Err: effect}, nil
	}
	return Result{Outcome: OutcomeApplied}, nil
}

// storable checks the rules that depend only on the job's JobCreated, so
// whether an event is stored never depends on the order of the others.
func storable(s *JobState, e *Event) error {
	if e.Tenant != s.Tenant {
		return &otherTenantError{kind: "job", id: s.JobID, unknown: ErrUnknownJob}
	}
	if r := jobEventRegion(e.Body); r != "" && s.regionIndex(r) < 0 {
		return fmt.Errorf("job %s: region %s: %w", s.JobID, r, ErrUnknownRegion)
	}
	if !s.Created.Less(e.Key()) {
		return fmt.Errorf("job %s: event at %s: %w", s.JobID, e.HLC, ErrPrecedesCreation)
	}
	return nil
}

// jobEventRegion returns the region a job event names, if any.
func jobEventRegion(b Body) string {
	switch b := b.(type) {
	case *JobAccepted:
		return b.Region
	case *JobProgressReported:
		return b.Region
	case *JobCancellationAcked:
		return b.Region
	case *JobFailed:
		return b.FailedRegion
	}
	return ""
}

// createdFence loads the fence of f's JobCreated (the first event of
// its history, at f.s.Created): one point lookup, which only a decisive
// event fenced below the decision in force needs.
func (a *applier) createdFence(f *jobFold) error {
	ce, err := a.tx.Event(f.s.Tenant, f.s.Created.ID)
	if err != nil {
		return err
	}
	if ce == nil || ce.Type != TypeJobCreated || ce.JobID != f.s.JobID {
		return fmt.Errorf("job %s: its JobCreated %s is not stored", f.s.JobID, f.s.Created.ID)
	}
	f.created, f.createdKnown = ce.Fence, true
	return nil
}

func (a *applier) applyWorkflow(e *Event) (Result, error) {
	id := workflowOf(e.Body)
	w, err := a.tx.Workflow(id)
	if err != nil {
		return Result{}, err
	}
	if d, ok := e.Body.(*WorkflowDispatched); ok {
		if w != nil {
			return rejected(fmt.Errorf("workflow %s: %w", id, ErrWorkflowExists)), nil
		}
		job, err := a.job(e.JobID)
		if err != nil {
			return Result{}, err
		}
		if job != nil && job.f.s.Tenant != e.Tenant {
			return rejected(fmt.Errorf("workflow %s: job %s: %w", id, e.JobID, ErrTenantMismatch)), nil
		}
		a.changed = append(a.changed, StateKey{StateWorkflow, id})
		return Result{Outcome: OutcomeApplied}, a.tx.PutWorkflow(newWorkflow(e, d))
	}
	if w == nil {
		return rejected(fmt.Errorf("workflow %s: %w", id, ErrUnknownWorkflow)), nil
	}
	active := true
	if l, ok := e.Body.(*WorkflowLeased); ok {
		wk, err := a.tx.Worker(l.Worker)
		if err != nil {
			return Result{}, err
		}
		active = wk != nil && wk.Active
	}
	n, rerr := applyWorkflow(w, e, active)
	if rerr != nil {
		return rejected(rerr), nil
	}
	a.changed = append(a.changed, StateKey{StateWorkflow, id})
	return Result{Outcome: OutcomeApplied}, a.tx.PutWorkflow(n)
}

func (a *applier) applyWorker(e *Event) (Result, error) {
	id := ""
	switch b := e.Body.(type) {
	case *WorkerJoined:
		id = b.Worker
	case *WorkerLeft:
		id = b.Worker
	}
	w, err := a.tx.Worker(id)
	if err != nil {
		return Result{}, err
	}
	n, rerr := applyWorker(w, e)
	if rerr != nil {
		return rejected(rerr), nil
	}
	a.changed = append(a.changed, StateKey{StateWorker, n.ID})
	return Result{Outcome: OutcomeApplied}, a.tx.PutWorker(n)
}

// applyForwardMark raises each tenant's stored forward mark to the
// event's seq; a lower seq changes nothing. A valid mark is always
// applied (and stored in the chain of the empty tenant), so whether it is
// stored never depends on the marks before it.
func (a *applier) applyForwardMark(b *ForwardMark) (Result, error) {
	for _, m := range b.Marks {
		cur, err := a.tx.ForwardMark(m.Tenant)
		if err != nil {
			return Result{}, err
		}
		if m.Seq > cur {
			a.changed = append(a.changed, StateKey{StateMark, m.Tenant})
			if err := a.tx.PutForwardMark(m.Tenant, m.Seq); err != nil {
				return Result{}, err
			}
		}
	}
	return Result{Outcome: OutcomeApplied}, nil
}

// admit decides whether JobAdmitted e may admit queued job s now: not
// before the job's eligible time (by e's HLC wall time, so every replica
// agrees), and, if the ledger has an admission hook, only if the hook
// finds room (it reads the tenant's other jobs through the store, so the
// batch's changes so far are written first). A rejection is a Result; an
// error is a store failure.
func (a *applier) admit(e *Event, s *JobState) (Result, error) {
	if s.Spec.EligibleAtMs > e.HLC.WallMs {
		return rejected(fmt.Errorf("job %s: eligible at %d ms, admitted at %d: %w", e.JobID, s.Spec.EligibleAtMs, e.HLC.WallMs, ErrOverQuota)), nil
	}
	if a.admission == nil {
		return Result{Outcome: OutcomeApplied}, nil
	}
	if err := a.flushJobs(); err != nil {
		return Result{}, err
	}
	switch err := a.admission(a.tx, s); {
	case errors.Is(err, ErrOverQuota):
		return rejected(fmt.Errorf("job %s: %w", e.JobID, err)), nil
	case err != nil:
		return Result{}, err
	}
	return Result{Outcome: OutcomeApplied}, nil
}
