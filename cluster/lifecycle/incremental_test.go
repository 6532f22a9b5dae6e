package lifecycle

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/group/grouptest"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/cluster/lifecycle/plan"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/hlc"
)

// incrSide is one group's ledger behind a FSM that feeds the
// lifecycle's dirty set, as on a real node, without Raft.
type incrSide struct {
	l      *Lifecycle
	store  *boltstore.Store
	ledger *fsm.Ledger
	f      *group.FSM
	index  uint64
}

// incrHarness runs the reconcilers' steps and carries out their work
// (the drivers' passes minus stamping, proposing and delivering) against a global and a regional ledger on a fake clock,
// moving events as delivery, the forwarder and workers would. Nothing but
// the first pass of each reconciler scans every job (the clock stays
// under resyncInterval), so it drives jobs through the incremental paths.
type incrHarness struct {
	t              *testing.T
	now            time.Time
	logical        uint32
	global, region *incrSide
	g              *globalReconciler
	rr             *regionReconciler
	// workers: id → live (touches liveness every round) and the
	// workflows it finishes: finish(w) says "complete" or "" (keeps
	// running).
	workers map[string]bool
	finish  func(w *fsm.WorkflowState) string
}

// newIncrSide opens a bolt-backed ledger for a gate (global) or a
// manager of region.
func newIncrSide(tb testing.TB, global bool, region string, clock func() time.Time) *incrSide {
	tb.Helper()
	st, err := boltstore.Open(boltstore.Config{Path: filepath.Join(tb.TempDir(), "ledger.db")})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		tb.Fatal(err)
	}
	l, err := New(testConfig(global, region, st, led, clock))
	if err != nil {
		tb.Fatal(err)
	}
	f, err := group.NewFSM(group.FSMConfig{Ledger: led, Observer: l})
	if err != nil {
		tb.Fatal(err)
	}
	return &incrSide{l: l, store: st, ledger: led, f: f}
}

func newIncrHarness(t *testing.T) *incrHarness {
	h := &incrHarness{t: t, now: time.UnixMilli(1_700_000_000_000), workers: map[string]bool{},
		finish: func(*fsm.WorkflowState) string { return "complete" }}
	clock := func() time.Time { return h.now }
	h.global, h.region = newIncrSide(t, true, "use1", clock), newIncrSide(t, false, "use1", clock)
	h.g, h.rr = newGlobalReconciler(h.global.l), newRegionReconciler(h.region.l)
	return h
}

// apply stamps events that have no HLC and applies them as one entry.
func (h *incrHarness) apply(s *incrSide, events ...fsm.Event) {
	h.t.Helper()
	if len(events) == 0 {
		return
	}
	for i := range events {
		if events[i].HLC.IsZero() {
			h.logical++
			events[i].HLC = hlc.Timestamp{WallMs: h.now.UnixMilli(), Logical: h.logical, Node: 1}
			events[i].Region, events[i].Node = "use1", "n1"
		}
	}
	s.index++
	results, err := grouptest.Apply(s.f, s.index, testkit.MustBatch(h.t, events...))
	if err != nil {
		h.t.Fatal(err)
	}
	for i, r := range results[0] {
		if r.Outcome == fsm.OutcomeRejected {
			h.t.Fatalf("%s %s rejected: %v", events[i].Type, events[i].JobID, r.Err)
		}
	}
}

func (h *incrHarness) addWorker(id string, capacity uint32) {
	h.workers[id] = true
	h.region.l.live.Touch(id)
	h.apply(h.region, fsm.Event{ID: commit.NewEventID(), Type: fsm.TypeWorkerJoined, Body: &fsm.WorkerJoined{Worker: id, Capacity: capacity}})
}

var incrJobs int

// submit creates a job in the global ledger with count workflows.
func (h *incrHarness) submit(count uint32, timeout time.Duration) string {
	incrJobs++
	id := fmt.Sprintf("use1-%d-g1-%05d", h.now.UnixMilli(), incrJobs)
	spec := fsm.JobSpec{Tenant: "acme", Regions: []string{"use1"}, Timeout: fsm.Duration(timeout),
		Workflows: []fsm.WorkflowSpec{{Name: "load", Count: count, Duration: fsm.Duration(time.Second), Rate: 10}}}
	h.apply(h.global, fsm.Event{ID: commit.NewEventID(), Type: fsm.TypeJobCreated, JobID: id, Tenant: "acme", Fence: 1,
		Body: &fsm.JobCreated{Spec: spec, AssignedRegions: spec.Regions}})
	return id
}

func (h *incrHarness) cancel(id string) {
	g := h.job(h.global, id)
	h.apply(h.global, fsm.Event{ID: commit.NewEventID(), Type: fsm.TypeJobCancellationRequested, JobID: id, Tenant: "acme",
		Fence: g.Fence + 1, Body: &fsm.JobCancellationRequested{Reason: "test", Requestor: "t"}})
}

func (h *incrHarness) job(s *incrSide, id string) *fsm.JobState {
	h.t.Helper()
	j, err := s.ledger.JobByID(id)
	if err != nil || j == nil {
		h.t.Fatalf("job %s: %v", id, err)
	}
	return j
}

// workflows returns the region's workflows of job (every job if empty).
func (h *incrHarness) workflows(job string) []*fsm.WorkflowState {
	var out []*fsm.WorkflowState
	prefix := ""
	if job != "" {
		prefix = job + "/use1/"
	}
	err := h.region.store.View(func(tx fsm.ReadTx) error {
		return tx.Workflows(prefix, func(w *fsm.WorkflowState) error {
			out = append(out, w)
			return nil
		})
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// round is 200 ms of the cluster's life: one global pass, deliveries, one
// regional pass, the forwarder, the workers.
func (h *incrHarness) round() {
	h.t.Helper()
	h.now = h.now.Add(200 * time.Millisecond)
	w, err := h.g.step(h.now.UnixMilli(), false)
	if err != nil {
		h.t.Fatal(err)
	}
	h.apply(h.global, w.propose...)
	for _, evs := range w.deliver {
		h.apply(h.region, evs...) // duplicates are no-ops
	}
	h.g.advance(allEnded(w))
	rw, err := h.rr.step(h.now, false)
	if err != nil {
		h.t.Fatal(err)
	}
	h.region.l.PublishView(rw.view) // as the driver does
	for _, id := range rw.forget {
		h.region.l.Forget(id)
	}
	h.apply(h.region, rw.propose...)
	h.forward()
	for id, live := range h.workers {
		if live {
			h.region.l.live.Touch(id)
		}
	}
	for _, wf := range h.workflows("") {
		if wf.Status != fsm.WorkflowStatusLeased || !h.workers[wf.Worker] || h.finish(wf) != "complete" {
			continue
		}
		h.apply(h.region, fsm.Event{ID: commit.NewEventID(), Type: fsm.TypeWorkflowCompleted, JobID: wf.JobID, Tenant: wf.Tenant,
			Fence: wf.LeaseFence, Body: &fsm.WorkflowCompleted{Workflow: wf.ID}})
	}
}

// forward copies the region's forwardable events the global ledger does
// not hold yet.
func (h *incrHarness) forward() {
	var out []fsm.Event
	err := h.region.store.View(func(tx fsm.ReadTx) error {
		return tx.ChainEvents("acme", 0, func(se *fsm.StoredEvent) error {
			if plan.Forwarded(&se.Event, "use1") {
				out = append(out, se.Event)
			}
			return nil
		})
	})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, e := range out {
		if got, _ := h.global.ledger.Event(e.Tenant, e.ID); got == nil {
			h.apply(h.global, e)
		}
	}
}

// until runs rounds until cond holds (at most max rounds).
func (h *incrHarness) until(what string, max int, cond func() bool) {
	h.t.Helper()
	for range max {
		h.round()
		if cond() {
			return
		}
	}
	h.t.Fatalf("%s: not after %d rounds", what, max)
}

func (h *incrHarness) status(id string) fsm.JobStatus { return h.job(h.global, id).Status }

// settled: every reconciler index is empty and a pass visits nothing.
func (h *incrHarness) wantSettled() {
	h.t.Helper()
	h.round()
	h.round()
	g, rr := h.g, h.rr
	if len(g.pending) != 0 || g.due.len() != 0 || len(g.retry) != 0 || g.visited != 0 {
		h.t.Errorf("global: pending %v, due %d, retry %d, visited %d: want all empty", g.pending, g.due.len(), len(g.retry), g.visited)
	}
	if len(rr.active) != 0 || len(rr.waiting) != 0 || len(rr.pending) != 0 || rr.due.len() != 0 || len(rr.lastProgress) != 0 || rr.visited != 0 {
		h.t.Errorf("region: active %d, waiting %d, pending %d, due %d, progress %d, visited %d: want all empty",
			len(rr.active), len(rr.waiting), len(rr.pending), rr.due.len(), len(rr.lastProgress), rr.visited)
	}
	if v := h.region.l.CurrentView(); len(v.Leases) != 0 {
		h.t.Errorf("lease view: %d workers with leases, want none", len(v.Leases))
	}
}

func TestReconcileIncremental_CapacityCancelAndTimeout(t *testing.T) {
	h := newIncrHarness(t)
	h.round() // the first passes scan everything (nothing yet)
	gFull, rFull := h.g.lastFull, h.rr.lastFull
	h.finish = func(*fsm.WorkflowState) string { return "" }
	h.addWorker("w1", 2)
	a := h.submit(2, time.Hour)
	h.until("a's workflows leased", 20, func() bool {
		n := 0
		for _, w := range h.workflows(a) {
			if w.Status == fsm.WorkflowStatusLeased {
				n++
			}
		}
		return n == 2
	})
	// b waits for room: w1 is full with a's workflows.
	b := h.submit(1, time.Hour)
	h.until("b running", 20, func() bool { return h.status(b) == fsm.JobStatusRunning })
	for range 5 {
		h.round()
	}
	if wfs := h.workflows(b); len(wfs) != 1 || wfs[0].Status != fsm.WorkflowStatusDispatched {
		t.Fatalf("b's workflow %+v, want DISPATCHED (w1 is full)", wfs[0])
	}
	if h.rr.visited != 0 {
		t.Fatalf("a quiet pass visited %d jobs; waiting work with no room must not be read", h.rr.visited)
	}
	// c times out (5 s, by HLC) while it waits for room, without any
	// event of its own: its due time brings it back.
	c := h.submit(1, 5*time.Second)
	// a finishes: w1 gets room, and b's workflow is leased although b's
	// job did not change.
	h.finish = func(w *fsm.WorkflowState) string {
		if w.JobID == a {
			return "complete"
		}
		return ""
	}
	h.until("a completed", 30, func() bool { return h.status(a) == fsm.JobStatusCompleted })
	h.until("b's workflow leased", 10, func() bool { return h.workflows(b)[0].Status == fsm.WorkflowStatusLeased })
	h.cancel(b)
	h.until("b cancelled", 20, func() bool { return h.status(b) == fsm.JobStatusCancelled })
	h.until("c timed out and acknowledged", 40, func() bool {
		j := h.job(h.global, c)
		return j.Status == fsm.JobStatusTimedOut && j.Regions[0].CancelAcked
	})
	for _, w := range append(h.workflows(b), h.workflows(c)...) {
		if w.Status != fsm.WorkflowStatusCancelled {
			t.Errorf("%s: %s, want CANCELLED", w.ID, w.Status)
		}
	}
	h.wantSettled()
	if h.g.lastFull != gFull || h.rr.lastFull != rFull {
		t.Fatal("a pass after the first scanned everything: the test did not exercise the incremental paths")
	}
}

func TestReconcileIncremental_SilentWorkerLosesItsLeases(t *testing.T) {
	h := newIncrHarness(t)
	h.round()
	gFull, rFull := h.g.lastFull, h.rr.lastFull
	h.finish = func(*fsm.WorkflowState) string { return "" }
	h.addWorker("w1", 4)
	id := h.submit(3, time.Hour)
	h.until("leased to w1", 20, func() bool {
		for _, w := range h.workflows(id) {
			if w.Status != fsm.WorkflowStatusLeased {
				return false
			}
		}
		return true
	})
	h.workers["w1"] = false // silent from now on
	h.addWorker("w2", 4)
	h.finish = func(*fsm.WorkflowState) string { return "complete" }
	h.until("completed on w2", 60, func() bool { return h.status(id) == fsm.JobStatusCompleted })
	for _, w := range h.workflows(id) {
		if w.Reschedules != 1 || w.Status != fsm.WorkflowStatusCompleted {
			t.Errorf("%s: %s after %d reschedules; want completed after one", w.ID, w.Status, w.Reschedules)
		}
	}
	if ws, _ := h.region.ledger.Workers(); len(ws) != 2 || ws[0].Active {
		t.Errorf("w1 should have been expired: %+v", ws)
	}
	h.wantSettled()
	if h.g.lastFull != gFull || h.rr.lastFull != rFull {
		t.Fatal("a pass after the first scanned everything")
	}
}

func TestReconcileIncremental_OverflowAndResyncScanEverything(t *testing.T) {
	h := newIncrHarness(t)
	h.round()
	first := h.rr.lastFull
	h.region.l.dirty.addAll()
	h.round()
	if h.rr.lastFull == first {
		t.Fatal("an overflowed dirty set did not make the next pass scan everything")
	}
	first = h.g.lastFull
	h.now = h.now.Add(resyncInterval)
	h.round()
	if h.g.lastFull == first {
		t.Fatal("no full scan after resyncInterval")
	}
}
