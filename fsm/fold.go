package fsm

import (
	"slices"
	"strings"
)

// This file holds the job rules: a job's state is a pure function of the
// set of its stored events, folded in canonical order (fsm/DESIGN.md, "Job
// rules"). Everything here is deterministic and does no I/O.

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
type jobFold struct {
	s     *JobState
	owned uint32
}

// fold applies e, which orders after every event already folded into the
// state. It returns nil if e took effect, or the reason it was absorbed:
// ErrTerminal, a *TransitionError or a *FenceError. Either way e counts as
// folded (Events, Last).
func (f *jobFold) fold(e *Event) error {
	s := f.s
	s.Events++
	s.Last = e.Key()
	var err error
	switch b := e.Body.(type) {
	case *JobAccepted:
		err = f.accept(b)
	case *JobProgressReported:
		err = f.progress(b)
	case *JobCancellationAcked:
		err = f.ack(e, b)
	default:
		if e.Type.IsDecisive() {
			err = f.decide(e)
		} else { // a second JobCreated never reaches a fold
			err = &TransitionError{JobID: s.JobID, From: s.Status, To: JobStatusPending, Event: e.Type}
		}
	}
	if err == nil {
		s.HLC = e.HLC
		s.Status = deriveStatus(s)
	}
	return err
}

func (f *jobFold) region(name string) (int, error) {
	i := f.s.regionIndex(name)
	if i < 0 {
		return -1, ErrUnknownRegion // the Ledger rejects these before folding
	}
	return i, nil
}

// accept records a region's acceptance; the first one moves PENDING to
// RUNNING. Recorded in CANCELLING too (the region has work to cancel).
func (f *jobFold) accept(b *JobAccepted) error {
	if f.s.Status.Terminal() {
		return ErrTerminal
	}
	i, err := f.region(b.Region)
	if err != nil {
		return err
	}
	r := &f.s.Regions[i]
	r.Accepted = true
	r.WorkerCount = b.WorkerCount
	return nil
}

// progress merges cumulative counters: the maximum per counter, Done once
// any report says so.
func (f *jobFold) progress(b *JobProgressReported) error {
	if f.s.Status.Terminal() {
		return ErrTerminal
	}
	i, err := f.region(b.Region)
	if err != nil {
		return err
	}
	r := &f.s.Regions[i]
	r.Completed = max(r.Completed, b.Completed)
	r.Failed = max(r.Failed, b.Failed)
	r.Done = r.Done || b.Done
	f.mergeStats(i, b.Stats)
	return nil
}

// ack records a region's ack that it stopped its workflows. It counts
// while the decision in force asks every region to stop (stopsRegions):
// under a cancellation the acks finish it (CANCELLED once every region
// acked); under a failure or a time-out they only tell the reconciler
// which regions are done stopping, and the status stays. A counted ack
// stays counted if a later decision replaces that one.
func (f *jobFold) ack(e *Event, b *JobCancellationAcked) error {
	s := f.s
	if !stopsRegions(s.Decision.Type) {
		if s.Status.Terminal() {
			return ErrTerminal
		}
		return &TransitionError{JobID: s.JobID, From: s.Status, To: JobStatusCancelled, Event: e.Type}
	}
	i, err := f.region(b.Region)
	if err != nil {
		return err
	}
	r := &s.Regions[i]
	r.CancelAcked = true
	r.WorkflowsCancelled = max(r.WorkflowsCancelled, b.WorkflowsCancelled)
	return nil
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

// decide folds a decisive event: stale fences are absorbed; COMPLETED
// needs a running job; a decision already in force is replaced only by an
// event that beats it.
func (f *jobFold) decide(e *Event) error {
	s := f.s
	if e.Fence < s.Fence {
		return &FenceError{Subject: s.JobID, Fence: e.Fence, Current: s.Fence}
	}
	to := decisiveTarget(e.Type)
	if e.Type == TypeJobCompleted && !anyAccepted(s) {
		return &TransitionError{JobID: s.JobID, From: s.Status, To: to, Event: e.Type}
	}
	if s.Decision.Type != 0 && !beats(e, &s.Decision) {
		if s.Status.Terminal() {
			return ErrTerminal
		}
		return &TransitionError{JobID: s.JobID, From: s.Status, To: to, Event: e.Type}
	}
	s.Decision = Decision{Type: e.Type, EventID: e.ID, HLC: e.HLC, Fence: e.Fence, Node: e.Node, Body: e.Body}
	s.Fence = e.Fence
	return nil
}

// beats reports whether decisive event e, folded after d, replaces it:
// cancellation wins, then the higher fence. Lower HLC and lower node win
// ties by the fold order itself: d came first.
func beats(e *Event, d *Decision) bool {
	ec, dc := e.Type == TypeJobCancellationRequested, d.Type == TypeJobCancellationRequested
	if ec != dc {
		return ec
	}
	return e.Fence > d.Fence
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

// foldHistory recomputes a job from its history in canonical order
// (history[0] is its JobCreated) and returns the state and the effect of
// the event with id target (nil if it took effect).
func foldHistory(history []*Event, target EventID) (jobFold, error) {
	first := history[0]
	f := jobFold{s: newJobState(first, first.Body.(*JobCreated))}
	var effect error
	for _, e := range history[1:] {
		if err := f.fold(e); e.ID == target {
			effect = err
		}
	}
	return f, effect
}
