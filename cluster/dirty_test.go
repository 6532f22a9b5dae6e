package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"

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
		results[i].Outcome = o
	}
	d.noteEntry([][]byte{mustBatch(t, events...)}, [][]fsm.Result{results})
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

func TestDirtySet_UnreadableBatchThatChangedSomethingMeansAll(t *testing.T) {
	d := newDirtySet(8)
	bad := []byte{fsm.BatchVersion + 1, 0}
	d.noteEntry([][]byte{bad}, [][]fsm.Result{{{Outcome: fsm.OutcomeRejected}}})
	if got := d.take(); got.All || len(got.Jobs) != 0 {
		t.Fatalf("a rejected unreadable batch changed nothing: %+v", got)
	}
	d.noteEntry([][]byte{bad}, [][]fsm.Result{{{Outcome: fsm.OutcomeApplied}}})
	if got := d.take(); !got.All {
		t.Fatalf("an applied batch the reader cannot read must resync everything: %+v", got)
	}
}

// headers returns what batchHeaders reads, or its error.
func headers(b []byte) ([]fsm.EventType, []string, error) {
	var types []fsm.EventType
	var ids []string
	err := batchHeaders(b, func(i int, t fsm.EventType, jobID []byte) {
		if i != len(types) {
			panic(fmt.Sprintf("index %d after %d events", i, len(types)))
		}
		types, ids = append(types, t), append(ids, string(jobID))
	})
	return types, ids, err
}

func TestBatchHeaders_AgreesWithDecodeBatch(t *testing.T) {
	g := fsmtest.NewGen(7)
	for n := range 300 {
		events := make([]fsm.Event, n%40+1)
		for i := range events {
			events[i] = g.Next()
		}
		b, err := fsm.EncodeBatch(events)
		if err != nil {
			continue // the generator spoils some events on purpose
		}
		types, ids, err := headers(b)
		if err != nil {
			t.Fatalf("batch %d: %v", n, err)
		}
		for i, e := range events {
			if types[i] != e.Type || ids[i] != e.JobID {
				t.Fatalf("batch %d event %d: read (%s, %q), want (%s, %q)", n, i, types[i], ids[i], e.Type, e.JobID)
			}
		}
	}
}

func TestBatchHeaders_RejectsBrokenInput(t *testing.T) {
	good := mustBatch(t, fsmtest.SampleEvents()...)
	cases := map[string][]byte{
		"empty":          nil,
		"version":        append([]byte{fsm.BatchVersion + 1}, good[1:]...),
		"truncated":      good[:len(good)-1],
		"trailing":       append(bytes.Clone(good), 0),
		"count too high": {fsm.BatchVersion, 0xff, 0xff, 0x7f},
		"over the limit": make([]byte, fsm.MaxBatchBytes+1),
	}
	for name, b := range cases {
		if _, _, err := headers(b); !errors.Is(err, errBatchHeader) {
			t.Errorf("%s: err = %v, want errBatchHeader", name, err)
		}
	}
}

// FuzzBatchHeaders: any input either reads or gets errBatchHeader, never a
// panic; and whatever fsm.DecodeBatch accepts reads to the same types and
// job ids.
func FuzzBatchHeaders(f *testing.F) {
	f.Add(mustBatch(f, fsmtest.SampleEvents()...))
	f.Add(mustBatch(f, jobEvent(1), jobEvent(2)))
	f.Add([]byte{fsm.BatchVersion, 0})
	f.Add([]byte{fsm.BatchVersion, 1, 3, 0, 0, 0, fsm.EventVersion, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		types, ids, err := headers(b)
		if err != nil && !errors.Is(err, errBatchHeader) {
			t.Fatalf("error %v does not wrap errBatchHeader", err)
		}
		events, derr := fsm.DecodeBatch(b)
		if derr != nil {
			return
		}
		if err != nil {
			t.Fatalf("DecodeBatch accepts what batchHeaders refuses: %v", err)
		}
		if len(types) != len(events) {
			t.Fatalf("read %d events, DecodeBatch %d", len(types), len(events))
		}
		for i, e := range events {
			if types[i] != e.Type || ids[i] != e.JobID {
				t.Fatalf("event %d: read (%s, %q), want (%s, %q)", i, types[i], ids[i], e.Type, e.JobID)
			}
		}
	})
}

func TestFSMAdapter_FeedsTheDirtySet(t *testing.T) {
	d := newDirtySet(dirtyLimit)
	led, err := fsm.New(fsm.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	f, err := newLedgerFSM(ledgerFSMConfig{Ledger: led, Dirty: d})
	if err != nil {
		t.Fatal(err)
	}
	take := func() dirtyTake {
		got := d.take()
		slices.Sort(got.Jobs)
		return got
	}
	// One batch (ApplyEncoded), then several (Apply), one not decoding.
	f.Apply(command(1, mustBatch(t, jobEvent(1), jobEvent(2), jobEvent(1))))
	if got := take(); !slices.Equal(got.Jobs, []string{jobID(1), jobID(2)}) || got.All {
		t.Fatalf("one batch: %+v", got)
	}
	f.Apply(command(2, mustBatch(t, jobEvent(3)), []byte{fsm.BatchVersion, 1, 0xff}, mustBatch(t, jobEvent(1), jobEvent(4))))
	if got := take(); !slices.Equal(got.Jobs, []string{jobID(3), jobID(4)}) || got.All {
		t.Fatalf("many batches: %+v (the duplicate of job 1 changes nothing)", got)
	}
	// A replayed index applies nothing and records nothing.
	f.Apply(command(2, mustBatch(t, jobEvent(5))))
	if got := take(); len(got.Jobs) != 0 || got.All {
		t.Fatalf("replayed index: %+v", got)
	}
	f.Apply(command(3, mustBatch(t, fsm.Event{ID: randomEventID(), Type: fsm.TypeWorkerJoined,
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
