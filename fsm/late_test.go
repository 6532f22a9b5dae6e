package fsm_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// countingStore counts the reads of the transactions of Update: point
// lookups of events, and history walks (JobEvents) with the events they
// visit.
type countingStore struct {
	fsm.Store
	eventLookups, historyWalks, historyEvents int
}

func (c *countingStore) Update(fn func(fsm.Tx) error) error {
	return c.Store.Update(func(tx fsm.Tx) error { return fn(&countingTx{Tx: tx, c: c}) })
}

type countingTx struct {
	fsm.Tx
	c *countingStore
}

func (t *countingTx) Event(tenant string, id fsm.EventID) (*fsm.StoredEvent, error) {
	t.c.eventLookups++
	return t.Tx.Event(tenant, id)
}

func (t *countingTx) JobEvents(jobID string, after fsm.EventKey, fn func(*fsm.StoredEvent) error) error {
	t.c.historyWalks++
	return t.Tx.JobEvents(jobID, after, func(se *fsm.StoredEvent) error {
		t.c.historyEvents++
		return fn(se)
	})
}

// TestFinding3_LateEventsCostBounded (issue 17 finding 3): 500 late
// events (ordering before the newest of a 5,000-event history), one Raft
// entry each, must not re-fold the history: applying them walks no
// history and looks up at most two events each (the duplicate check, and
// the JobCreated for a decisive event fenced below the decision). The
// fold used to re-read the whole history for every one of them (2.5
// million events read here). The state is still the one of the set:
// equal to a fresh ledger's, given every event in canonical order.
func TestFinding3_LateEventsCostBounded(t *testing.T) {
	const lateEvents = 500
	st := &countingStore{Store: memstore.New()}
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	lj, history := fsmtest.NewLateJob(5000)
	all := slices.Clone(history)
	var index uint64
	for pos := 0; pos < len(history); pos += 1000 {
		index++
		if _, err := led.Apply(index, history[pos:min(pos+1000, len(history))]); err != nil {
			t.Fatal(err)
		}
	}
	st.eventLookups, st.historyWalks, st.historyEvents = 0, 0, 0
	last := history[len(history)-1].Key()
	for range lateEvents {
		e := lj.Late()
		if !e.Key().Less(last) {
			t.Fatalf("event at %s is not late", e.HLC)
		}
		all = append(all, e)
		index++
		r, err := led.Apply(index, []fsm.Event{e})
		if err != nil || r[0].Outcome != fsm.OutcomeApplied {
			t.Fatalf("late event: %+v %v", r, err)
		}
	}
	if st.historyWalks != 0 || st.historyEvents != 0 || st.eventLookups > 2*lateEvents {
		t.Fatalf("%d late events walked the history %d times (%d events read) and looked up %d events; want no walk, at most %d lookups",
			lateEvents, st.historyWalks, st.historyEvents, st.eventLookups, 2*lateEvents)
	}

	got, err := led.Job("acme", fsmtest.LateJobID)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(all, func(a, b fsm.Event) int { return a.Key().Compare(b.Key()) })
	ref := newLedger(t)
	if _, err := ref.Apply(1, all[:1]); err != nil {
		t.Fatal(err)
	}
	for pos, i := 1, uint64(2); pos < len(all); pos, i = pos+1000, i+1 {
		if _, err := ref.Apply(i, all[pos:min(pos+1000, len(all))]); err != nil {
			t.Fatal(err)
		}
	}
	want, err := ref.Job("acme", fsmtest.LateJobID)
	if err != nil {
		t.Fatal(err)
	}
	gb, _ := fsm.AppendJobState(nil, got)
	wb, _ := fsm.AppendJobState(nil, want)
	if !bytes.Equal(gb, wb) || got.Events != uint32(len(all)) {
		t.Fatalf("state after late events\n got  %+v\n want %+v", got, want)
	}
}

// A job's history is bounded (MaxEventsPerJob): the event that would pass
// the bound is rejected with a LimitError naming it, and the state stays.
func TestMaxEventsPerJob_RejectsPastTheBound(t *testing.T) {
	st := memstore.New()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	lj, history := fsmtest.NewLateJob(2)
	if _, err := led.Apply(1, history); err != nil {
		t.Fatal(err)
	}
	jobID := history[0].JobID
	// Fast-forward the count, as if the job had taken all but one event.
	if err := st.Update(func(tx fsm.Tx) error {
		s, err := tx.Job(jobID)
		if err != nil {
			return err
		}
		s.Events = fsm.MaxEventsPerJob - 1
		return tx.PutJob(s)
	}); err != nil {
		t.Fatal(err)
	}
	r, err := led.Apply(2, []fsm.Event{lj.InOrder()})
	if err != nil || r[0].Outcome != fsm.OutcomeApplied {
		t.Fatalf("the last event under the bound: %+v %v", r, err)
	}
	r, err = led.Apply(3, []fsm.Event{lj.InOrder()})
	var le *fsm.LimitError
	if err != nil || r[0].Outcome != fsm.OutcomeRejected || !errors.As(r[0].Err, &le) || le.Limit != fsm.MaxEventsPerJob {
		t.Fatalf("the event past the bound: %+v %v", r, err)
	}
	s, err := led.JobByID(jobID)
	if err != nil || s.Events != fsm.MaxEventsPerJob {
		t.Fatalf("job after the refusal: %d events, %v", s.Events, err)
	}
}
