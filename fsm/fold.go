package fsm

import (
	"slices"
	"strings"
)

// This file holds the job rules: a job's state is a pure function of the
// set of its stored events, whatever order they are folded in
// (fsm/DESIGN.md, "Job rules"). Everything here is deterministic and does
// no I/O.

// newJobState starts a job from its JobCreated event: PENDING, the
// event's fence, one region entry per assigned region.
func newJobState(e *Event, b *JobCreated) *JobState {
	regions := make([]RegionState, len(b.AssignedRegions))
	for i, r := range b.AssignedRegions {
		regions[i].Region = r
	}
	slices.SortFunc(regions, func(a, b RegionState) int { return strings.Compare(a.Region, b.Region) })
	k := e.Key()
	return &JobState{
		JobID:   e.JobID,
		Tenant:  e.Tenant,
		Status:  JobStatusPending,
		Fence:   e.Fence,
		Spec:    b.Spec,
		Regions: regions,
		Created: k,
		HLC:     e.HLC,
		Last:    k,
		Events:  1,
	}
}

// jobFold folds events into a state it may change. owned marks the
// regions whose Stats slice this fold allocated (so it may change it in
// place); the others are shared with earlier copies of the state.
//
// Every rule is commutative: folding a set of events in any order gives
// the same state (fsm/DESIGN.md, "Job rules"), so a late event is folded
// like any other, in O(1), and never re-folds the job's history.
type jobFold struct {
	s     *JobState
	owned uint32
	// created is the fence of the job's JobCreated when createdKnown.
	// Only a decisive event fenced below the decision in force needs it
	// (needsCreatedFence); the Ledger then reads the JobCreated.
	created      uint64
	createdKnown bool
}

// needsCreatedFence reports whether folding e needs the JobCreated's
// fence, which the state does not keep: e is decisive and fenced below
// the decision in force (without a decision, s.Fence is that fence).
func (f *jobFold) needsCreatedFence(e *Event) bool {
	return !f.createdKnown && e.Type.IsDecisive() && f.s.Decision.Type != 0 && e.Fence < f.s.Fence
}

// fold folds e, whatever its place in canonical order among the events
// already folded. It returns nil if e took effect, or the reason it was
// absorbed: ErrTerminal, a *TransitionError or a *FenceError. The reason
// depends on the state e found (the response to its arrival); the state
// it leaves does not depend on the order (fsm/DESIGN.md). Either way e
// counts as folded (Events, Last, HLC). For a decisive event fenced below
// the decision in force, the caller must have set the created fence
// (needsCreatedFence).
func (f *jobFold) fold(e *Event) error {
	s := f.s
	from, decision := s.Status, s.Decision.EventID
	s.Events++
	if k := e.Key(); s.Last.Less(k) {
		s.Last = k
	}
	if s.HLC.Less(e.HLC) {
		s.HLC = e.HLC
	}
	var err error
	switch b := e.Body.(type) {
	case *JobAccepted:
		f.accept(b)
		err = recorded(s, from, decision)
	case *JobProgressReported:
		f.progress(b)
		err = recorded(s, from, decision)
	case *JobCancellationAcked:
		err = f.ack(e, b)
	case *JobAdmitted:
		err = f.admit()
	default:
		if e.Type.IsDecisive() {
			err = f.decide(e)
		} else { // a second JobCreated never reaches a fold
			err = &TransitionError{JobID: s.JobID, From: s.Status, To: JobStatusPending, Event: e.Type}
		}
	}
	s.Status = deriveStatus(s)
	return err
}

// recorded is the result of an acceptance or a progress report: it is
// always recorded (a late report of work done is still true), but
// reported absorbed (ErrTerminal) if the job had ended when it arrived
// and it changed neither the job's status nor its decision.
func recorded(s *JobState, from JobStatus, decision EventID) error {
	if from.Terminal() && deriveStatus(s) == from && s.Decision.EventID == decision {
		return ErrTerminal
	}
	return nil
}

func (f *jobFold) region(name string) *RegionState {
	if i := f.s.regionIndex(name); i >= 0 {
		return &f.s.Regions[i]
	}
	return nil // the Ledger rejects these before folding
}

// accept records a region's acceptance: Accepted once any acceptance
// said so, WorkerCount the most any reported. The first acceptance of
// the job makes its pending completion (if any) eligible.
func (f *jobFold) accept(b *JobAccepted) {
	r := f.region(b.Region)
	if r == nil {
		return
	}
	first := !anyAccepted(f.s)
	r.Accepted = true
	r.WorkerCount = max(r.WorkerCount, b.WorkerCount)
	if first && f.s.Pending.Type != 0 {
		if f.s.Decision.Type == 0 || outranks(&f.s.Pending, &f.s.Decision) {
			f.s.Decision = f.s.Pending
			f.s.Fence = f.s.Pending.Fence
		}
		f.s.Pending = Decision{}
	}
}

// progress merges cumulative counters: the maximum per counter, Done once
// any report says so, in every state.
func (f *jobFold) progress(b *JobProgressReported) {
	i := f.s.regionIndex(b.Region)
	if i < 0 {
		return
	}
	r := &f.s.Regions[i]
	r.Completed = max(r.Completed, b.Completed)
	r.Failed = max(r.Failed, b.Failed)
	r.Done = r.Done || b.Done
	f.mergeStats(i, b.Stats)
}

// ack records a region's ack that it stopped its workflows, whatever the
// decision in force: CancelAcked, the most WorkflowsCancelled reported.
// Under a cancellation the acks finish it (CANCELLED once every region
// acked); under a failure or a time-out they tell the reconciler which
// regions are done stopping. The result says whether the decision in
// force when it arrived asks the regions to stop (stopsRegions): if not,
// the ack is recorded but reported absorbed, as before.
func (f *jobFold) ack(e *Event, b *JobCancellationAcked) error {
	s := f.s
	from := s.Status
	if r := f.region(b.Region); r != nil {
		r.CancelAcked = true
		r.WorkflowsCancelled = max(r.WorkflowsCancelled, b.WorkflowsCancelled)
	}
	if stopsRegions(s.Decision.Type) {
		return nil
	}
	if from.Terminal() {
		return ErrTerminal
	}
	return &TransitionError{JobID: s.JobID, From: from, To: JobStatusCancelled, Event: e.Type}
}

// stopsRegions reports whether a decision of type t asks every assigned
// region to stop its workflows: a cancellation, a failure, a time-out
// (not a completion, and not the absence of a decision).
func stopsRegions(t EventType) bool {
	switch t {
	case TypeJobCancellationRequested, TypeJobFailed, TypeJobTimedOut:
		return true
	}
	return false
}

// decide folds a decisive event. The decision in force is the best
// eligible decisive event of the set under the total rank of outranks;
// eligible: fenced at or above the JobCreated, and for a completion, some
// region accepted. A completion while no region accepted is kept as
// Pending if it outranks the pending one, and competes once a region
// accepts (accept).
func (f *jobFold) decide(e *Event) error {
	s := f.s
	from, fence := s.Status, s.Fence
	to := decisiveTarget(e.Type)
	d := Decision{Type: e.Type, EventID: e.ID, HLC: e.HLC, Fence: e.Fence, Node: e.Node, Body: e.Body}
	eligible := e.Fence >= s.Fence || (s.Decision.Type != 0 && e.Fence >= f.created)
	switch {
	case !eligible:
	case e.Type == TypeJobCompleted && !anyAccepted(s):
		if s.Pending.Type == 0 || outranks(&d, &s.Pending) {
			s.Pending = d
		}
	case s.Decision.Type == 0 || outranks(&d, &s.Decision):
		s.Decision = d
		s.Fence = e.Fence
		return nil
	}
	// Absorbed: the reason, as the state found it.
	switch {
	case e.Fence < fence:
		return &FenceError{Subject: s.JobID, Fence: e.Fence, Current: fence}
	case e.Type == TypeJobCompleted && !anyAccepted(s):
		return &TransitionError{JobID: s.JobID, From: from, To: to, Event: e.Type}
	case from.Terminal():
		return ErrTerminal
	}
	return &TransitionError{JobID: s.JobID, From: from, To: to, Event: e.Type}
}

// outranks reports whether decisive event a outranks b (distinct events):
// a cancellation outranks any other decision, then the higher fence
// wins, then the earlier event (lower canonical key: HLC, whose last part
// is the node ordinal, then id). A total order, so the best of a set
// does not depend on the order it is met in.
func outranks(a, b *Decision) bool {
	ac, bc := a.Type == TypeJobCancellationRequested, b.Type == TypeJobCancellationRequested
	if ac != bc {
		return ac
	}
	if a.Fence != b.Fence {
		return a.Fence > b.Fence
	}
	return EventKey{HLC: a.HLC, ID: a.EventID}.Less(EventKey{HLC: b.HLC, ID: b.EventID})
}

func decisiveTarget(t EventType) JobStatus {
	switch t {
	case TypeJobCancellationRequested:
		return JobStatusCancelling
	case TypeJobCompleted:
		return JobStatusCompleted
	case TypeJobFailed:
		return JobStatusFailed
	}
	return JobStatusTimedOut
}

// deriveStatus computes the status from the decision in force and the
// regions: without a decision PENDING until a region accepted, then
// RUNNING; a cancellation is CANCELLING until every assigned region acked.
func deriveStatus(s *JobState) JobStatus {
	switch s.Decision.Type {
	case 0:
		if anyAccepted(s) {
			return JobStatusRunning
		}
		return JobStatusPending
	case TypeJobCancellationRequested:
		for i := range s.Regions {
			if !s.Regions[i].CancelAcked {
				return JobStatusCancelling
			}
		}
		return JobStatusCancelled
	}
	return decisiveTarget(s.Decision.Type)
}

func anyAccepted(s *JobState) bool {
	for i := range s.Regions {
		if s.Regions[i].Accepted {
			return true
		}
	}
	return false
}

// mergeStats takes the maximum per name into region i's stats, keeping
// the MaxStats smallest names. It changes a slice in place only if this
// fold allocated it.
func (f *jobFold) mergeStats(i int, in Stats) {
	r := &f.s.Regions[i]
	cur := r.Stats
	if !statsWouldChange(cur, in) {
		return
	}
	if f.owned&(1<<i) != 0 && sameNames(cur, in) {
		for j := range cur {
			cur[j].Value = max(cur[j].Value, in[j].Value)
		}
		return
	}
	r.Stats = mergeMax(cur, in)
	f.owned |= 1 << i
}

func sameNames(a, b Stats) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name {
			return false
		}
	}
	return true
}

// statsWouldChange reports whether merging in changes cur: a higher value
// or a name cur lacks that would be kept.
func statsWouldChange(cur, in Stats) bool {
	j := 0
	for _, st := range in {
		for j < len(cur) && cur[j].Name < st.Name {
			j++
		}
		if j < len(cur) && cur[j].Name == st.Name {
			if st.Value > cur[j].Value {
				return true
			}
			continue
		}
		if len(cur) < MaxStats || st.Name < cur[len(cur)-1].Name {
			return true
		}
	}
	return false
}

// mergeMax returns the sorted union of a and b with the maximum value per
// name, cut to the MaxStats smallest names. Both inputs are sorted.
func mergeMax(a, b Stats) Stats {
	out := make(Stats, 0, min(len(a)+len(b), MaxStats))
	i, j := 0, 0
	for len(out) < MaxStats && (i < len(a) || j < len(b)) {
		switch {
		case j == len(b) || (i < len(a) && a[i].Name < b[j].Name):
			out = append(out, a[i])
			i++
		case i == len(a) || b[j].Name < a[i].Name:
			out = append(out, b[j])
			j++
		default:
			out = append(out, Stat{Name: a[i].Name, Value: max(a[i].Value, b[j].Value)})
			i++
			j++
		}
	}
	return out
}

// admit records an admission: Admitted is the OR of the job's stored
// JobAdmitted events, for a held job (a function of the set). It takes
// effect only on a held job not yet admitted and not ended.
func (f *jobFold) admit() error {
	s := f.s
	was := s.Admitted
	if s.Spec.Held {
		s.Admitted = true
	}
	switch {
	case !s.Spec.Held || was:
		return ErrNotQueued
	case s.Status.Terminal():
		return ErrTerminal
	}
	return nil
}
