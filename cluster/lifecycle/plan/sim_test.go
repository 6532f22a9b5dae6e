package plan

import (
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/memstore"
	"github.com/strata-ledger/strata/hlc"
)

// lifecycleSim runs the pure planners of global.go and region.go
// against in-memory ledgers — one global, one per region — moving events
// between them as delivery and the forwarder would, with simulated workers.
// It checks the planners alone drive a job to its end: no I/O, no timing.
type lifecycleSim struct {
	t       *testing.T
	global  *fsm.Ledger
	regions map[string]*fsm.Ledger
	index   map[*fsm.Ledger]uint64
	stores  map[*fsm.Ledger]*memstore.Store
	wall    int64
	// workers per region: id → live; every live worker has capacity 2.
	workers map[string]map[string]bool
	// finish decides what a live worker does with a leased workflow:
	// "complete", "fail" or "" (keep running).
	finish func(w *fsm.WorkflowState) string
}

func newLifecycleSim(t *testing.T, regions ...string) *lifecycleSim {
	s := &lifecycleSim{t: t, regions: map[string]*fsm.Ledger{}, index: map[*fsm.Ledger]uint64{}, stores: map[*fsm.Ledger]*memstore.Store{}, wall: 1_700_000_000_000,
		workers: map[string]map[string]bool{}, finish: func(*fsm.WorkflowState) string { return "complete" }}
	s.global = s.ledger()
	for _, r := range regions {
		s.regions[r] = s.ledger()
		s.workers[r] = map[string]bool{}
	}
	return s
}

func (s *lifecycleSim) ledger() *fsm.Ledger {
	st := memstore.New()
	l, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		s.t.Fatal(err)
	}
	s.stores[l] = st
	return l
}

// apply stamps events from origin (region, node) and applies them.
func (s *lifecycleSim) apply(l *fsm.Ledger, region, node string, events []fsm.Event) {
	s.t.Helper()
	if len(events) == 0 {
		return
	}
	for i := range events {
		if events[i].HLC.IsZero() {
			s.wall++
			events[i].HLC, events[i].Region, events[i].Node = hlc.Timestamp{WallMs: s.wall, Node: 1}, region, node
		}
	}
	s.index[l]++
	res, err := l.Apply(s.index[l], events)
	if err != nil {
		s.t.Fatalf("apply: %v", err)
	}
	for i, r := range res {
		if r.Outcome == fsm.OutcomeRejected {
			s.t.Fatalf("%s %s rejected: %v", events[i].Type, events[i].JobID, r.Err)
		}
	}
}

func (s *lifecycleSim) addWorker(region, id string) {
	s.workers[region][id] = true
	s.apply(s.regions[region], region, "m1", []fsm.Event{{ID: randomEventID(), Type: fsm.TypeWorkerJoined,
		Body: &fsm.WorkerJoined{Worker: id, Capacity: 2}}})
}

func (s *lifecycleSim) submit(spec fsm.JobSpec) string {
	s.wall++
	id := fmt.Sprintf("use1-%d-g1-00001", s.wall)
	s.apply(s.global, "use1", "g1", []fsm.Event{{ID: randomEventID(), Type: fsm.TypeJobCreated, JobID: id, Tenant: spec.Tenant,
		Fence: 1, Body: &fsm.JobCreated{Spec: spec, AssignedRegions: spec.Regions}}})
	return id
}

func (s *lifecycleSim) job(l *fsm.Ledger, id string) *fsm.JobState {
	j, err := l.JobByID(id)
	if err != nil || j == nil {
		s.t.Fatalf("job %s: %v", id, err)
	}
	return j
}

// round runs one pass of every reconciler, the forwarders and the workers.
func (s *lifecycleSim) round(jobID string) {
	g := s.job(s.global, jobID)
	p := Global(g, s.wall)
	for _, r := range append(p.Dispatch, p.Stop...) {
		evs := []fsm.Event{s.stored(g.Tenant, g.Created.ID)}
		if len(p.Stop) > 0 {
			evs = append(evs, s.stored(g.Tenant, g.Decision.EventID))
		}
		s.apply(s.regions[r], "", "", evs)
	}
	if p.Emit != nil {
		s.apply(s.global, "use1", "g1", []fsm.Event{*p.Emit})
	}
	for region, l := range s.regions {
		j, _ := l.JobByID(jobID)
		if j == nil {
			continue
		}
		wfs := s.workflows(l, jobID, region)
		var slots []*WorkerSlot
		for id, live := range s.workers[region] {
			slot := &WorkerSlot{ID: id, Capacity: 2, Live: live}
			for _, w := range wfs {
				if w.Status == fsm.WorkflowStatusLeased && w.Worker == id {
					slot.Load++
				}
			}
			slots = append(slots, slot)
		}
		rp := NewRegionPass(region, s.wall, 5000, slots)
		workers, _ := l.Workers()
		evs := append(Workers(workers, rp), RegionJob(j, wfs, rp, true)...)
		s.apply(l, region, "m1", evs)
		s.forward(l, region)
		s.work(l, region, jobID)
	}
}

func (s *lifecycleSim) stored(tenant string, id fsm.EventID) fsm.Event {
	se, err := s.global.Event(tenant, id)
	if err != nil || se == nil {
		s.t.Fatalf("event %s: %v", id, err)
	}
	return se.Event
}

func (s *lifecycleSim) workflows(l *fsm.Ledger, jobID, region string) map[string]*fsm.WorkflowState {
	out := map[string]*fsm.WorkflowState{}
	err := s.stores[l].View(func(tx fsm.ReadTx) error {
		return tx.Workflows(jobID+"/"+region+"/", func(w *fsm.WorkflowState) error {
			out[w.ID] = w
			return nil
		})
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

// forward copies the region's forwardable events to the global ledger
// (duplicates are no-ops there).
func (s *lifecycleSim) forward(l *fsm.Ledger, region string) {
	var out []fsm.Event
	err := s.stores[l].View(func(tx fsm.ReadTx) error {
		return tx.ChainHeads(func(tenant string, _ fsm.ChainHead) error {
			return tx.ChainEvents(tenant, 0, func(se *fsm.StoredEvent) error {
				if Forwarded(&se.Event, region) {
					out = append(out, se.Event)
				}
				return nil
			})
		})
	})
	if err != nil {
		s.t.Fatal(err)
	}
	for _, e := range out {
		if got, _ := s.global.Event(e.Tenant, e.ID); got == nil {
			s.apply(s.global, "", "", []fsm.Event{e})
		}
	}
}

// work lets every live worker finish the workflows leased to it.
func (s *lifecycleSim) work(l *fsm.Ledger, region, jobID string) {
	for _, w := range s.workflows(l, jobID, region) {
		if w.Status != fsm.WorkflowStatusLeased || !s.workers[region][w.Worker] {
			continue
		}
		e := fsm.Event{ID: randomEventID(), JobID: w.JobID, Tenant: w.Tenant, Fence: w.LeaseFence}
		switch s.finish(w) {
		case "complete":
			e.Type, e.Body = fsm.TypeWorkflowCompleted, &fsm.WorkflowCompleted{Workflow: w.ID}
		case "fail":
			e.Type, e.Body = fsm.TypeWorkflowFailed, &fsm.WorkflowFailed{Workflow: w.ID, Error: "boom"}
		default:
			continue
		}
		s.apply(l, region, "m1", []fsm.Event{e})
	}
}

// runUntil runs rounds until the global job reaches want (at most 20).
func (s *lifecycleSim) runUntil(jobID string, want fsm.JobStatus) *fsm.JobState {
	s.t.Helper()
	for range 20 {
		s.round(jobID)
		if g := s.job(s.global, jobID); g.Status == want {
			return g
		}
	}
	s.t.Fatalf("job %s: %s after 20 rounds, want %s", jobID, s.job(s.global, jobID).Status, want)
	return nil
}

// randomEventID is the id of an event the sim makes up as a client or a
// worker would (a submit, a join, a workflow's end); planned events have
// deterministic ids.
func randomEventID() fsm.EventID {
	var id fsm.EventID
	_, _ = rand.Read(id[:])
	return id
}

func simSpec(regions ...string) fsm.JobSpec {
	return fsm.JobSpec{Tenant: "acme", Regions: regions, Timeout: fsm.Duration(time.Hour),
		Workflows: []fsm.WorkflowSpec{{Name: "checkout", Count: 3, Duration: fsm.Duration(time.Second), Rate: 10}}}
}

func TestPlanSim_CompletesAcrossRegions(t *testing.T) {
	s := newLifecycleSim(t, "use1", "euw1")
	s.addWorker("use1", "w1")
	s.addWorker("use1", "w2")
	s.addWorker("euw1", "w3")
	id := s.submit(simSpec("use1", "euw1"))
	g := s.runUntil(id, fsm.JobStatusCompleted)
	for _, r := range g.Regions {
		if !r.Accepted || !r.Done {
			t.Errorf("region %s: accepted %v done %v", r.Region, r.Accepted, r.Done)
		}
	}
	for region, l := range s.regions {
		for _, w := range s.workflows(l, id, region) {
			if w.Status != fsm.WorkflowStatusCompleted {
				t.Errorf("%s: %s", w.ID, w.Status)
			}
		}
	}
	if _, err := s.global.VerifyChain("acme"); err != nil {
		t.Fatal(err)
	}
}

func TestPlanSim_SilentWorkerIsRescheduled(t *testing.T) {
	s := newLifecycleSim(t, "use1")
	s.addWorker("use1", "w1")
	s.finish = func(*fsm.WorkflowState) string { return "" } // nobody finishes
	id := s.submit(simSpec("use1"))
	s.runUntil(id, fsm.JobStatusRunning)
	s.round(id)
	s.workers["use1"]["w1"] = false // w1 goes silent
	s.addWorker("use1", "w2")
	s.finish = func(*fsm.WorkflowState) string { return "complete" }
	s.runUntil(id, fsm.JobStatusCompleted)
	rescheduled := 0
	for _, w := range s.workflows(s.regions["use1"], id, "use1") {
		if w.Reschedules > 0 {
			rescheduled++
		}
	}
	if rescheduled != 2 { // w1 held two of the three (capacity 2)
		t.Fatalf("rescheduled %d workflows, want 2", rescheduled)
	}
	if ws, _ := s.regions["use1"].Workers(); len(ws) != 2 || ws[0].Active {
		t.Fatalf("w1 should have been expired: %+v", ws)
	}
}

func TestPlanSim_CancelStopsEveryRegion(t *testing.T) {
	s := newLifecycleSim(t, "use1", "euw1")
	s.addWorker("use1", "w1")
	s.addWorker("euw1", "w2")
	s.finish = func(*fsm.WorkflowState) string { return "" }
	id := s.submit(simSpec("use1", "euw1"))
	g := s.runUntil(id, fsm.JobStatusRunning)
	s.apply(s.global, "use1", "g1", []fsm.Event{{ID: randomEventID(), Type: fsm.TypeJobCancellationRequested, JobID: id,
		Tenant: "acme", Fence: g.Fence + 1, Body: &fsm.JobCancellationRequested{Reason: "test", Requestor: "t"}}})
	g = s.runUntil(id, fsm.JobStatusCancelled)
	for region, l := range s.regions {
		for _, w := range s.workflows(l, id, region) {
			if w.Status != fsm.WorkflowStatusCancelled {
				t.Errorf("%s: %s", w.ID, w.Status)
			}
		}
	}
	for _, r := range g.Regions {
		if !r.CancelAcked || r.WorkflowsCancelled != 3 {
			t.Errorf("region %s: acked %v cancelled %d", r.Region, r.CancelAcked, r.WorkflowsCancelled)
		}
	}
}

func TestPlanSim_WorkflowFailureFailsJobAndStopsOthers(t *testing.T) {
	s := newLifecycleSim(t, "use1", "euw1")
	s.addWorker("use1", "w1")
	s.addWorker("use1", "w1b")
	s.addWorker("euw1", "w2")
	s.finish = func(w *fsm.WorkflowState) string {
		if w.Region == "use1" {
			return "fail"
		}
		return ""
	}
	id := s.submit(simSpec("use1", "euw1"))
	g := s.runUntil(id, fsm.JobStatusFailed)
	if b := g.Decision.Body.(*fsm.JobFailed); b.FailedRegion != "use1" {
		t.Fatalf("failed region %q", b.FailedRegion)
	}
	for range 5 {
		s.round(id)
	}
	g = s.job(s.global, id)
	for _, r := range g.Regions {
		if !r.CancelAcked {
			t.Errorf("region %s did not acknowledge the failure", r.Region)
		}
	}
	for _, w := range s.workflows(s.regions["euw1"], id, "euw1") {
		if w.Status != fsm.WorkflowStatusCancelled {
			t.Errorf("%s: %s", w.ID, w.Status)
		}
	}
}

func TestPlanSim_TimeoutByHLC(t *testing.T) {
	s := newLifecycleSim(t, "use1")
	s.addWorker("use1", "w1")
	s.finish = func(*fsm.WorkflowState) string { return "" }
	spec := simSpec("use1")
	spec.Timeout = fsm.Duration(time.Minute)
	id := s.submit(spec)
	s.runUntil(id, fsm.JobStatusRunning)
	s.round(id)
	if st := s.job(s.global, id).Status; st != fsm.JobStatusRunning {
		t.Fatalf("timed out early: %s", st)
	}
	s.wall += time.Minute.Milliseconds()
	s.runUntil(id, fsm.JobStatusTimedOut)
	for range 3 {
		s.round(id)
	}
	if g := s.job(s.global, id); !g.Regions[0].CancelAcked {
		t.Fatal("region did not stop the timed-out job")
	}
}

func TestPlanSim_ReplayedPlansChangeNothing(t *testing.T) {
	// Planning twice from the same state gives the same event ids: a
	// second leader (or a retry) proposing them is a no-op.
	s := newLifecycleSim(t, "use1")
	s.addWorker("use1", "w1")
	id := s.submit(simSpec("use1"))
	s.round(id)
	j := s.job(s.regions["use1"], id)
	wfs := s.workflows(s.regions["use1"], id, "use1")
	plan := func() []fsm.Event {
		return RegionJob(j, wfs, NewRegionPass("use1", s.wall, 5000, []*WorkerSlot{{ID: "w1", Capacity: 2, Live: true}}), true)
	}
	a, b := plan(), plan()
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("plans differ in length: %d, %d", len(a), len(b))
	}
	for i := range a {
		if a[i].ID != b[i].ID {
			t.Fatalf("event %d: ids differ", i)
		}
	}
}
