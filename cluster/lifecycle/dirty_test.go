package lifecycle

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/group/grouptest"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

func TestDirtySet_TakeReturnsWhatWasAddedOnceAndEmpties(t *testing.T) {
	d := newDirtySet(8)
	d.add("b", "a", "b")
	d.addWorkers()
	got := d.take()
	slices.Sort(got.Jobs)
	if !slices.Equal(got.Jobs, []string{"a", "b"}) || got.All || !got.Workers {
		t.Fatalf("take = %+v", got)
	}
	if again := d.take(); len(again.Jobs) != 0 || again.All || again.Workers {
		t.Fatalf("second take = %+v, want empty", again)
	}
}

func TestDirtySet_OverflowCollapsesIntoAllUntilTaken(t *testing.T) {
	d := newDirtySet(3)
	d.add("a", "b", "c")
	if got := d.take(); len(got.Jobs) != 3 || got.All {
		t.Fatalf("at the limit: %+v", got)
	}
	d.add("a", "b", "c", "d")
	d.add("e") // ignored: already everything
	got := d.take()
	if !got.All || len(got.Jobs) != 0 {
		t.Fatalf("past the limit: %+v, want All and no ids", got)
	}
	d.add("f")
	if got := d.take(); got.All || !slices.Equal(got.Jobs, []string{"f"}) {
		t.Fatalf("after the take: %+v", got)
	}
	d.add("g")
	d.addAll()
	if got := d.take(); !got.All || len(got.Jobs) != 0 {
		t.Fatalf("addAll: %+v", got)
	}
}

func TestDirtySet_ConcurrentAddsAreAllTaken(t *testing.T) {
	d := newDirtySet(1 << 20)
	var wg sync.WaitGroup
	seen := map[string]bool{}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() { // a taker racing the adders
		defer close(done)
		for range 1000 {
			for _, id := range d.take().Jobs {
				mu.Lock()
				seen[id] = true
				mu.Unlock()
			}
		}
	}()
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				d.add(fmt.Sprintf("j%d-%d", g, i))
			}
		})
	}
	wg.Wait()
	<-done
	for _, id := range d.take().Jobs {
		seen[id] = true
	}
	if len(seen) != 2000 {
		t.Fatalf("took %d distinct ids, want 2000", len(seen))
	}
}

// noteEvents applies what the FSM hook does for one batch of events with
// the given outcomes.
func noteEvents(t *testing.T, d *dirtySet, events []fsm.Event, outcomes ...fsm.Outcome) {
	t.Helper()
	results := make([]fsm.Result, len(outcomes))
	for i, o := range outcomes {
		results[i] = fsm.Result{Outcome: o, Type: events[i].Type, JobID: events[i].JobID}
	}
	d.Entry([][]fsm.Result{results})
}

func TestDirtySet_NoteEntryRecordsChangedJobsAndWorkerEvents(t *testing.T) {
	samples := fsmtest.SampleEvents()
	byType := map[fsm.EventType]fsm.Event{}
	for _, e := range samples {
		byType[e.Type] = e
	}
	d := newDirtySet(8)
	other := byType[fsm.TypeJobAccepted]
	other.JobID = "use1-1704931200000-gate42-00002"
	noteEvents(t, d, []fsm.Event{byType[fsm.TypeJobCreated], byType[fsm.TypeWorkflowLeased], other, byType[fsm.TypeForwardMark]},
		fsm.OutcomeApplied, fsm.OutcomeAbsorbed, fsm.OutcomeDuplicate, fsm.OutcomeApplied)
	got := d.take()
	if !slices.Equal(got.Jobs, []string{fsmtest.SampleJobID}) || got.Workers || got.All {
		t.Fatalf("take = %+v: want only the applied job (the duplicate and the mark change nothing)", got)
	}
	noteEvents(t, d, []fsm.Event{byType[fsm.TypeWorkerJoined]}, fsm.OutcomeRejected)
	if got := d.take(); got.Workers {
		t.Fatal("a rejected WorkerJoined counted as a worker change")
	}
	noteEvents(t, d, []fsm.Event{byType[fsm.TypeWorkerLeft]}, fsm.OutcomeApplied)
	if got := d.take(); !got.Workers || len(got.Jobs) != 0 {
		t.Fatalf("WorkerLeft: %+v", got)
	}
}

func TestFSMAdapter_FeedsTheDirtySet(t *testing.T) {
	d := newDirtySet(dirtyLimit)
	led, err := fsm.New(fsm.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := group.NewFSM(group.FSMConfig{Ledger: led, Observer: d})
	if err != nil {
		t.Fatal(err)
	}
	take := func() dirtyTake {
		got := d.take()
		slices.Sort(got.Jobs)
		return got
	}
	// One batch (ApplyEncoded), then several (Apply), one not decoding.
	f.Apply(grouptest.Command(1, testkit.MustBatch(t, testkit.JobEvent(1), testkit.JobEvent(2), testkit.JobEvent(1))))
	if got := take(); !slices.Equal(got.Jobs, []string{testkit.JobID(1), testkit.JobID(2)}) || got.All {
		t.Fatalf("one batch: %+v", got)
	}
	f.Apply(grouptest.Command(2, testkit.MustBatch(t, testkit.JobEvent(3)), []byte{fsm.BatchVersion, 1, 0xff}, testkit.MustBatch(t, testkit.JobEvent(1), testkit.JobEvent(4))))
	if got := take(); !slices.Equal(got.Jobs, []string{testkit.JobID(3), testkit.JobID(4)}) || got.All {
		t.Fatalf("many batches: %+v (the duplicate of job 1 changes nothing)", got)
	}
	// A replayed index applies nothing and records nothing.
	f.Apply(grouptest.Command(2, testkit.MustBatch(t, testkit.JobEvent(5))))
	if got := take(); len(got.Jobs) != 0 || got.All {
		t.Fatalf("replayed index: %+v", got)
	}
	f.Apply(grouptest.Command(3, testkit.MustBatch(t, fsm.Event{ID: commit.NewEventID(), Type: fsm.TypeWorkerJoined,
		HLC: fsmtest.TS(1_700_000_000_000, 0, 1), Region: "use1", Node: "m1", Body: &fsm.WorkerJoined{Worker: "w1", Capacity: 2}})))
	if got := take(); !got.Workers {
		t.Fatalf("worker joined: %+v", got)
	}

	var snap bytes.Buffer
	if err := led.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	if err := f.Restore(io.NopCloser(&snap)); err != nil {
		t.Fatal(err)
	}
	if got := take(); !got.All {
		t.Fatalf("restore: %+v, want All", got)
	}
}
