package lifecycle

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/memstore"
	"github.com/strata-ledger/strata/hlc"
)

// Table tests of the reconcilers' steps alone: a ledger on memstore is fed
// state, one step reads it, and the test checks the work it returns. No
// fake takes part: a step does no I/O.

// stepT0 is the wall time (ms) the steps' ledgers start at.
const stepT0 = 1_700_000_000_000

// stepSide is a ledger on memstore and a Lifecycle over it whose wall
// clock the test sets.
type stepSide struct {
	t      *testing.T
	l      *Lifecycle
	ledger *fsm.Ledger
	index  uint64
	now    time.Time
	seq    uint64
}

func newStepSide(t *testing.T, global bool) *stepSide {
	t.Helper()
	st := memstore.New()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	s := &stepSide{t: t, ledger: led, now: time.UnixMilli(stepT0)}
	if s.l, err = New(testConfig(global, "use1", st, led, func() time.Time { return s.now })); err != nil {
		t.Fatal(err)
	}
	return s
}

// ev is an event of job (none: a worker event) at HLC wall time atMs.
func (s *stepSide) ev(job string, fence uint64, atMs int64, body fsm.Body) fsm.Event {
	s.seq++
	tenant := "acme"
	if job == "" {
		tenant = ""
	}
	var id fsm.EventID
	id[0], id[15] = 0x5e, byte(s.seq)
	return fsm.Event{ID: id, Type: body.EventType(), JobID: job, Tenant: tenant, Fence: fence,
		HLC: hlc.Timestamp{WallMs: atMs, Logical: uint32(s.seq), Node: 1}, Region: "use1", Node: "n1", Body: body}
}

// apply applies events as one entry; each must change the ledger.
func (s *stepSide) apply(events ...fsm.Event) {
	s.t.Helper()
	s.index++
	res, err := s.ledger.Apply(s.index, events)
	if err != nil {
		s.t.Fatal(err)
	}
	for i, r := range res {
		if r.Outcome != fsm.OutcomeApplied {
			s.t.Fatalf("%s %s: %s %v", events[i].Type, events[i].JobID, r.Outcome, r.Err)
		}
	}
	s.l.Entry([][]fsm.Result{res})
}

// created is the JobCreated of job (workflows: count; timeout 0: an hour)
// for regions, at atMs.
func (s *stepSide) created(job string, count uint32, timeout time.Duration, atMs int64, regions ...string) fsm.Event {
	if timeout == 0 {
		timeout = time.Hour
	}
	spec := fsm.JobSpec{Tenant: "acme", Regions: regions, Timeout: fsm.Duration(timeout),
		Workflows: []fsm.WorkflowSpec{{Name: "load", Count: count, Duration: fsm.Duration(time.Minute), Rate: 10}}}
	return s.ev(job, 1, atMs, &fsm.JobCreated{Spec: spec, AssignedRegions: regions})
}

// names lists events as "Type job" (or "Type worker" for worker events).
func names(events []fsm.Event) []string {
	var out []string
	for _, e := range events {
		subject := e.JobID
		if wl, ok := e.Body.(*fsm.WorkerLeft); ok {
			subject = wl.Worker
		}
		out = append(out, fmt.Sprintf("%s %s", e.Type, subject))
	}
	return out
}

// deliveries lists what w delivers as "region: Type job, ...".
func deliveries(w globalWork) []string {
	var out []string
	for _, r := range slices.Sorted(maps.Keys(w.deliver)) {
		out = append(out, fmt.Sprintf("%s: %v", r, names(w.deliver[r])))
	}
	return out
}

const (
	jobA = "use1-1700000000000-g1-00001"
	jobB = "use1-1700000000000-g1-00002"
)

func TestGlobalStep_ReturnsTheWorkToDo(t *testing.T) {
	for _, tc := range []struct {
		name string
		// feed fills the ledger; inflight are the regions a delivery
		// runs to before the step.
		feed     func(s *stepSide)
		inflight []string
		nowMs    int64
		wantProp []string
		// wantAfter is the HLC wall time the proposals are stamped after.
		wantAfter    int64
		wantDeliver  []string
		wantInflight []string
		wantHeld     []string // region/job
	}{
		{name: "empty ledger", feed: func(*stepSide) {}, nowMs: stepT0},
		{
			name:         "new job: its JobCreated to every assigned region",
			feed:         func(s *stepSide) { s.apply(s.created(jobA, 1, 0, stepT0, "use1", "euw1")) },
			nowMs:        stepT0 + 1,
			wantDeliver:  []string{"euw1: [JobCreated " + jobA + "]", "use1: [JobCreated " + jobA + "]"},
			wantInflight: []string{"euw1", "use1"},
		},
		{
			name:     "region in flight: the job is held for it, nothing delivered",
			feed:     func(s *stepSide) { s.apply(s.created(jobA, 1, 0, stepT0, "use1")) },
			inflight: []string{"use1"}, nowMs: stepT0 + 1,
			wantInflight: []string{"use1"}, wantHeld: []string{"use1/" + jobA},
		},
		{
			name: "one delivery per region, jobs in id order",
			feed: func(s *stepSide) {
				s.apply(s.created(jobB, 1, 0, stepT0, "use1"), s.created(jobA, 1, 0, stepT0+1, "use1"))
			},
			nowMs:        stepT0 + 2,
			wantDeliver:  []string{"use1: [JobCreated " + jobA + " JobCreated " + jobB + "]"},
			wantInflight: []string{"use1"},
		},
		{
			name: "timed out: JobTimedOut after the job's newest event, and the decision to its region",
			feed: func(s *stepSide) {
				s.apply(s.created(jobA, 1, time.Second, stepT0, "use1"))
				s.apply(s.ev(jobA, 1, stepT0+5, &fsm.JobAccepted{Region: "use1", WorkerCount: 1}))
			},
			nowMs:    stepT0 + 1000,
			wantProp: []string{"JobTimedOut " + jobA}, wantAfter: stepT0 + 5,
		},
		{
			name: "not yet timed out: nothing",
			feed: func(s *stepSide) {
				s.apply(s.created(jobA, 1, time.Second, stepT0, "use1"))
				s.apply(s.ev(jobA, 1, stepT0+5, &fsm.JobAccepted{Region: "use1", WorkerCount: 1}))
			},
			nowMs: stepT0 + 999,
		},
		{
			name: "every region done: JobCompleted",
			feed: func(s *stepSide) {
				s.apply(s.created(jobA, 1, 0, stepT0, "use1"))
				s.apply(s.ev(jobA, 1, stepT0+5, &fsm.JobAccepted{Region: "use1", WorkerCount: 1}),
					s.ev(jobA, 1, stepT0+9, &fsm.JobProgressReported{Region: "use1", Completed: 10, Done: true}))
			},
			nowMs:    stepT0 + 10,
			wantProp: []string{"JobCompleted " + jobA}, wantAfter: stepT0 + 9,
		},
		{
			name: "cancelled, not acknowledged: JobCreated and the cancellation to the region",
			feed: func(s *stepSide) {
				s.apply(s.created(jobA, 1, 0, stepT0, "use1"))
				s.apply(s.ev(jobA, 1, stepT0+5, &fsm.JobAccepted{Region: "use1", WorkerCount: 1}))
				s.apply(s.ev(jobA, 2, stepT0+7, &fsm.JobCancellationRequested{Reason: "test", Requestor: "t"}))
			},
			nowMs:        stepT0 + 10,
			wantDeliver:  []string{"use1: [JobCreated " + jobA + " JobCancellationRequested " + jobA + "]"},
			wantInflight: []string{"use1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStepSide(t, true)
			tc.feed(s)
			g := newGlobalReconciler(s.l)
			for _, r := range tc.inflight {
				g.inflight[r] = true
			}
			w, err := g.step(tc.nowMs, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(w.propose); !slices.Equal(got, tc.wantProp) {
				t.Errorf("propose %v, want %v", got, tc.wantProp)
			}
			if len(w.propose) > 0 && w.after.WallMs != tc.wantAfter {
				t.Errorf("stamp after wall %d, want %d", w.after.WallMs, tc.wantAfter)
			}
			for _, e := range w.propose {
				if !e.HLC.IsZero() {
					t.Errorf("%s stamped by the step: the driver stamps", e.Type)
				}
			}
			if got := deliveries(w); !slices.Equal(got, tc.wantDeliver) {
				t.Errorf("deliver %v, want %v", got, tc.wantDeliver)
			}
			if got := slices.Sorted(maps.Keys(g.inflight)); !slices.Equal(got, tc.wantInflight) {
				t.Errorf("in flight after the step %v, want %v", got, tc.wantInflight)
			}
			var held []string
			for r, jobs := range g.held {
				for j := range jobs {
					held = append(held, r+"/"+j)
				}
			}
			slices.Sort(held)
			if !slices.Equal(held, tc.wantHeld) {
				t.Errorf("held %v, want %v", held, tc.wantHeld)
			}
			for _, h := range tc.wantHeld {
				if job := h[len("use1/"):]; g.retry[job] != nil {
					t.Errorf("%s: a redelivery booked while its region was in flight", job)
				}
			}
		})
	}
}

// A job's JobCreated goes to a region that does not react again after
// redeliverMin, then after twice as long each time, up to redeliverMax;
// a region in flight gets nothing until the driver reports its delivery
// ended (advance), and then at once.
func TestGlobalStep_RedeliveryBacksOffUntilTheRegionReacts(t *testing.T) {
	s := newStepSide(t, true)
	s.apply(s.created(jobA, 1, 0, stepT0, "use1"))
	g := newGlobalReconciler(s.l)
	for i, tc := range []struct {
		atMs    int64
		ended   bool // the driver reports the last delivery ended first
		deliver bool
	}{
		{atMs: 0, deliver: true},
		{atMs: 999, ended: true},                 // backoff 1 s
		{atMs: 1000, ended: true, deliver: true}, // next backoff 2 s
		{atMs: 2999},                             // that delivery still runs
		{atMs: 3000},                             // due, but use1 still in flight: held
		{atMs: 3001, ended: true, deliver: true}, // it ended: the held job goes at once
		{atMs: 3001 + 3999, ended: true},         // backoff 4 s
		{atMs: 3001 + 4000, ended: true, deliver: true},
	} {
		if tc.ended {
			g.advance(globalResult{ended: []string{"use1"}})
		}
		w, err := g.step(stepT0+10+tc.atMs, false)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(w.deliver["use1"]) > 0; got != tc.deliver {
			t.Fatalf("step %d at +%d ms: delivers %v, want %v", i, tc.atMs, got, tc.deliver)
		}
	}
	// The region accepts: no more deliveries; what stays due is the job's
	// time-out.
	s.apply(s.ev(jobA, 1, stepT0+20, &fsm.JobAccepted{Region: "use1", WorkerCount: 1}))
	g.advance(globalResult{ended: []string{"use1"}})
	w, err := g.step(stepT0+60_000, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.deliver) != 0 || len(w.propose) != 0 || len(g.retry) != 0 {
		t.Fatalf("after the region accepted: deliver %v, propose %v, retry %d; want nothing",
			deliveries(w), names(w.propose), len(g.retry))
	}
	if at, ok := g.due.get(jobA); !ok || at != stepT0+time.Hour.Milliseconds() || g.due.len() != 1 {
		t.Fatalf("due %d (%v) of %d, want the time-out at %d only", at, ok, g.due.len(), stepT0+time.Hour.Milliseconds())
	}
}

func TestRegionStep_ReturnsTheWorkToDo(t *testing.T) {
	wf := func(job string, i uint32) string { return fsm.WorkflowID(job, "use1", "load", i) }
	dispatched := func(s *stepSide, job string, atMs int64, i uint32) fsm.Event {
		return s.ev(job, 1, atMs, &fsm.WorkflowDispatched{Workflow: wf(job, i), Name: "load", Instance: i,
			Spec: fsm.WorkflowSpec{Name: "load", Count: 2, Duration: fsm.Duration(time.Minute), Rate: 10}})
	}
	for _, tc := range []struct {
		name string
		feed func(s *stepSide)
		// later: the wall time of the step, after a first one at stepT0.
		later     time.Duration
		wantProp  []string
		wantAfter int64
		// wantLeases: worker → its leased workflows in the view.
		wantLeases map[string]int
		wantForget []string
	}{
		{name: "empty ledger", feed: func(*stepSide) {}},
		{
			name:      "delivered job: dispatch every workflow, then accept",
			feed:      func(s *stepSide) { s.apply(s.created(jobA, 2, 0, stepT0, "use1")) },
			wantProp:  []string{"WorkflowDispatched " + jobA, "WorkflowDispatched " + jobA, "JobAccepted " + jobA},
			wantAfter: stepT0,
		},
		{
			name: "accepted job and a live worker with room for one: one lease",
			feed: func(s *stepSide) {
				s.apply(s.ev("", 0, stepT0, &fsm.WorkerJoined{Worker: "w1", Capacity: 1}))
				s.apply(s.created(jobA, 2, 0, stepT0+1, "use1"))
				s.apply(dispatched(s, jobA, stepT0+2, 0), dispatched(s, jobA, stepT0+3, 1),
					s.ev(jobA, 1, stepT0+4, &fsm.JobAccepted{Region: "use1", WorkerCount: 2}))
			},
			wantProp: []string{"WorkflowLeased " + jobA}, wantAfter: stepT0 + 4,
		},
		{
			name: "leased workflows are in the view; nothing to do",
			feed: func(s *stepSide) {
				s.apply(s.ev("", 0, stepT0, &fsm.WorkerJoined{Worker: "w1", Capacity: 4}))
				s.apply(s.created(jobA, 2, 0, stepT0+1, "use1"))
				s.apply(dispatched(s, jobA, stepT0+2, 0), dispatched(s, jobA, stepT0+3, 1),
					s.ev(jobA, 1, stepT0+4, &fsm.JobAccepted{Region: "use1", WorkerCount: 2}))
				for i := range uint32(2) {
					s.apply(s.ev(jobA, 1, stepT0+5, &fsm.WorkflowLeased{Workflow: wf(jobA, i), Worker: "w1",
						LeaseUntilMs: stepT0 + 60_000, LeaseFence: 1}))
				}
			},
			wantLeases: map[string]int{"w1": 2},
		},
		{
			name: "a worker silent past the ack window: expired, its leases rescheduled, forgotten",
			feed: func(s *stepSide) {
				s.apply(s.ev("", 0, stepT0, &fsm.WorkerJoined{Worker: "w1", Capacity: 4}))
				s.apply(s.created(jobA, 1, 0, stepT0+1, "use1"))
				s.apply(dispatched(s, jobA, stepT0+2, 0),
					s.ev(jobA, 1, stepT0+4, &fsm.JobAccepted{Region: "use1", WorkerCount: 1}))
				s.apply(s.ev(jobA, 1, stepT0+5, &fsm.WorkflowLeased{Workflow: wf(jobA, 0), Worker: "w1",
					LeaseUntilMs: stepT0 + 60_000, LeaseFence: 1}))
			},
			later:      6 * time.Second, // WorkerAckWindow is 5 s
			wantProp:   []string{"WorkerLeft w1", "WorkflowRescheduled " + jobA},
			wantAfter:  stepT0 + 5,
			wantLeases: map[string]int{"w1": 1}, // as read: the expiry is proposed, not applied
			wantForget: []string{"w1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStepSide(t, false)
			tc.feed(s)
			rr := newRegionReconciler(s.l)
			if tc.later > 0 {
				// A first step at stepT0 inherits the workers; the test's
				// step comes later, with nothing heard from them since.
				if _, err := rr.step(s.now, false); err != nil {
					t.Fatal(err)
				}
				s.now = s.now.Add(tc.later)
			}
			w, err := rr.step(s.now, false)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(w.propose); !slices.Equal(got, tc.wantProp) {
				t.Errorf("propose %v, want %v", got, tc.wantProp)
			}
			if len(w.propose) > 0 && w.after.WallMs != tc.wantAfter {
				t.Errorf("stamp after wall %d, want %d", w.after.WallMs, tc.wantAfter)
			}
			for _, e := range w.propose {
				if !e.HLC.IsZero() {
					t.Errorf("%s stamped by the step: the driver stamps", e.Type)
				}
			}
			if w.view == nil || w.view.Index != s.index {
				t.Fatalf("view %+v, want one at applied index %d", w.view, s.index)
			}
			leases := map[string]int{}
			for worker, wfs := range w.view.Leases {
				leases[worker] = len(wfs)
			}
			if tc.wantLeases == nil {
				tc.wantLeases = map[string]int{}
			}
			if !maps.Equal(leases, tc.wantLeases) {
				t.Errorf("view's leases %v, want %v", leases, tc.wantLeases)
			}
			if !slices.Equal(w.forget, tc.wantForget) {
				t.Errorf("forget %v, want %v", w.forget, tc.wantForget)
			}
			if cur := s.l.CurrentView(); cur.Index != 0 {
				t.Errorf("the step published view %d: publishing is the driver's", cur.Index)
			}
			if _, ok := s.l.LastHeard("w1"); tc.wantForget != nil && !ok {
				t.Error("the step forgot w1: forgetting is the driver's")
			}
		})
	}
}
