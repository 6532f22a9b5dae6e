package lifecycle

import (
	"fmt"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
)

// Reconciler pass benchmarks: a ledger of N settled jobs (1k, 10k) and a
// few live ones, planned by a full scan (the resync path) and by an
// incremental pass that visits what the dirty set names (the live jobs,
// as if each had changed), side by side. Run:
//
//	go test ./cluster/lifecycle -run '^$' -bench 'RegionPass|GlobalPass' -benchtime 2s
//
// Only the reconciler's step is measured (read, plan, index upkeep, lease
// view): the driver's proposing goes through Raft and is the same either
// way.

// benchLiveJobs is how many jobs of a benchmark ledger have work.
const benchLiveJobs = 5

// benchBuilder appends jobs' events to a ledger in big entries.
type benchBuilder struct {
	tb     testing.TB
	side   *incrSide
	wall   int64
	n      int
	events []fsm.Event
}

func (b *benchBuilder) ev(id string, fence uint64, body fsm.Body) {
	b.wall++
	tenant := "acme"
	if id == "" {
		tenant = "" // worker events belong to no job and no tenant
	}
	b.events = append(b.events, fsm.Event{ID: commit.NewEventID(), Type: body.EventType(), JobID: id, Tenant: tenant, Fence: fence,
		HLC: hlc.Timestamp{WallMs: b.wall, Node: 1}, Region: "use1", Node: "n1", Body: body})
	if len(b.events) >= 2000 {
		b.flush()
	}
}

func (b *benchBuilder) flush() {
	if len(b.events) == 0 {
		return
	}
	b.side.index++
	res, err := b.side.ledger.Apply(b.side.index, b.events)
	if err != nil {
		b.tb.Fatal(err)
	}
	for i, r := range res {
		if r.Outcome != fsm.OutcomeApplied {
			b.tb.Fatalf("%s %s: %s %v", b.events[i].Type, b.events[i].JobID, r.Outcome, r.Err)
		}
	}
	b.events = nil
}

// job creates a job with count workflows and returns its id.
func (b *benchBuilder) job(count uint32, timeout time.Duration) string {
	b.n++
	id := fmt.Sprintf("use1-%d-g1-%05d", 1_700_000_000_000+int64(b.n/99_999), b.n%99_999+1)
	spec := fsm.JobSpec{Tenant: "acme", Regions: []string{"use1"}, Timeout: fsm.Duration(timeout),
		Workflows: []fsm.WorkflowSpec{{Name: "load", Count: count, Duration: fsm.Duration(time.Minute), Rate: 10}}}
	b.ev(id, 1, &fsm.JobCreated{Spec: spec, AssignedRegions: spec.Regions})
	return id
}

// regionBench returns a regional reconciler over settled done jobs and
// benchLiveJobs running ones with four workflows leased to a live worker.
func regionBench(tb testing.TB, settled int) (*regionReconciler, []string) {
	now := time.Now()
	side := newIncrSide(tb, false, "use1", func() time.Time { return now })
	bb := &benchBuilder{tb: tb, side: side, wall: now.UnixMilli() - 1_000_000}
	for range settled {
		id := bb.job(1, time.Hour)
		bb.ev(id, 1, &fsm.JobAccepted{Region: "use1", WorkerCount: 1})
		bb.ev(id, 1, &fsm.JobProgressReported{Region: "use1", Completed: 10, Done: true})
	}
	bb.ev("", 0, &fsm.WorkerJoined{Worker: "w1", Capacity: 1000})
	var live []string
	for range benchLiveJobs {
		id := bb.job(4, time.Hour)
		live = append(live, id)
		for i := range uint32(4) {
			wf := fsm.WorkflowID(id, "use1", "load", i)
			bb.ev(id, 1, &fsm.WorkflowDispatched{Workflow: wf, Name: "load", Instance: i,
				Spec: fsm.WorkflowSpec{Name: "load", Count: 4, Duration: fsm.Duration(time.Minute), Rate: 10}})
		}
		bb.ev(id, 1, &fsm.JobAccepted{Region: "use1", WorkerCount: 4})
		for i := range uint32(4) {
			wf := fsm.WorkflowID(id, "use1", "load", i)
			bb.ev(id, 1, &fsm.WorkflowLeased{Workflow: wf, Worker: "w1", LeaseUntilMs: now.UnixMilli() + 5000, LeaseFence: 1})
			bb.ev(id, 1, &fsm.WorkflowProgress{Workflow: wf, Completed: 5})
		}
	}
	bb.flush()
	rr := newRegionReconciler(side.l) // counts w1 live
	if _, err := rr.step(now, true); err != nil {
		tb.Fatal(err)
	}
	return rr, live
}

// globalBench returns a global reconciler over settled jobs (half timed
// out and acknowledged, half running, due to time out in a day) and
// benchLiveJobs jobs no region accepted yet.
func globalBench(tb testing.TB, settled int) (*globalReconciler, []string, int64) {
	now := time.Now()
	side := newIncrSide(tb, true, "use1", func() time.Time { return now })
	bb := &benchBuilder{tb: tb, side: side, wall: now.UnixMilli() - 1_000_000}
	for i := range settled {
		if i%2 == 0 {
			id := bb.job(1, time.Second)
			bb.ev(id, 1, &fsm.JobAccepted{Region: "use1", WorkerCount: 1})
			bb.ev(id, 2, &fsm.JobTimedOut{TimeoutType: "job"})
			bb.ev(id, 2, &fsm.JobCancellationAcked{Region: "use1", WorkflowsCancelled: 1})
		} else {
			id := bb.job(1, 24*time.Hour)
			bb.ev(id, 1, &fsm.JobAccepted{Region: "use1", WorkerCount: 1})
		}
	}
	var live []string
	for range benchLiveJobs {
		live = append(live, bb.job(1, time.Hour))
	}
	bb.flush()
	g := newGlobalReconciler(side.l)
	w, err := g.step(now.UnixMilli(), true)
	if err != nil {
		tb.Fatal(err)
	}
	g.advance(allEnded(w)) // as if delivered: no region stays busy
	return g, live, now.UnixMilli()
}

func BenchmarkRegionPass(b *testing.B) {
	for _, settled := range []int{1_000, 10_000} {
		rr, live := regionBench(b, settled)
		now := time.UnixMilli(rr.lastFull)
		for _, mode := range []string{"full", "incremental"} {
			b.Run(fmt.Sprintf("settled=%d/%s", settled, mode), func(b *testing.B) {
				for b.Loop() {
					rr.dirty.add(live...)
					if _, err := rr.step(now, mode == "full"); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(rr.visited), "jobs/pass")
			})
		}
	}
}

func BenchmarkGlobalPass(b *testing.B) {
	for _, settled := range []int{1_000, 10_000} {
		g, live, nowMs := globalBench(b, settled)
		for _, mode := range []string{"full", "incremental"} {
			b.Run(fmt.Sprintf("settled=%d/%s", settled, mode), func(b *testing.B) {
				for b.Loop() {
					g.dirty.add(live...)
					w, err := g.step(nowMs, mode == "full")
					if err != nil {
						b.Fatal(err)
					}
					g.advance(allEnded(w))
				}
				b.ReportMetric(float64(g.visited), "jobs/pass")
			})
		}
	}
}
