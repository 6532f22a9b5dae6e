package fsm_test

import (
	"errors"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

func TestApply_RejectsWhatCannotBeStored(t *testing.T) {
	j := fsmtest.NewJob(tableJobID, "acme", 100, "use1", "euw1")
	created := j.Created()
	other := fsmtest.NewJob("use1-1700000000000-gate1-00002", "acme", 200, "use1")
	foreign := j.Ev(1, 1, accept("use1"))
	foreign.Tenant = "globex"
	early := j.At(fsmtest.TS(created.HLC.WallMs-1, 0, 1), 1, accept("use1"))
	sameKey := j.At(created.HLC, 1, accept("use1")) // same HLC as the creation, larger id
	sameKey.ID = fsmtest.ID(1)                      // ...but a smaller id: orders before it
	conflict := created
	conflict.Fence = 2
	invalid := j.Ev(1, 1, accept("use1"))
	invalid.Region = "Nowhere"
	for _, tc := range []struct {
		name  string
		event fsm.Event
		want  error
	}{
		{"event of a job never created", other.Ev(1, 1, accept("use1")), fsm.ErrUnknownJob},
		{"second JobCreated", func() fsm.Event { e := j.Created(); return e }(), fsm.ErrJobExists},
		{"region not assigned", j.Ev(1, 1, accept("apse1")), fsm.ErrUnknownRegion},
		{"failed region not assigned", j.Ev(1, 1, failIn("apse1")), fsm.ErrUnknownRegion},
		{"tenant of another job", foreign, fsm.ErrTenantMismatch},
		{"before the creation", early, fsm.ErrPrecedesCreation},
		{"same HLC as the creation, smaller id", sameKey, fsm.ErrPrecedesCreation},
		{"id reused with other content", conflict, fsm.ErrEventConflict},
		{"invalid event", invalid, fsm.ErrInvalidEvent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			led := newLedger(t)
			if _, err := led.Apply(1, []fsm.Event{created}); err != nil {
				t.Fatal(err)
			}
			before, _, _ := led.Digest()
			head, _ := led.ChainHead("acme")
			r, err := led.Apply(2, []fsm.Event{tc.event})
			if err != nil {
				t.Fatal(err)
			}
			if r[0].Outcome != rejected || !errors.Is(r[0].Err, tc.want) {
				t.Fatalf("got %s %v, want rejected %v", r[0].Outcome, r[0].Err, tc.want)
			}
			after, _, _ := led.Digest()
			head2, _ := led.ChainHead("acme")
			if after != before || head2 != head || led.AppliedIndex() != 2 {
				t.Fatal("a rejected event changed the ledger")
			}
		})
	}
}

func TestApply_DuplicateIsANoOp(t *testing.T) {
	led := newLedger(t)
	j := fsmtest.NewJob(tableJobID, "acme", 100, "use1")
	c, a := j.Created(), j.Ev(1, 1, accept("use1"))
	r, err := led.Apply(1, []fsm.Event{c, a, a})
	if err != nil {
		t.Fatal(err)
	}
	if r[1].Outcome != applied || r[2].Outcome != fsm.OutcomeDuplicate || r[2].Seq != r[1].Seq {
		t.Fatalf("results %+v", r)
	}
	d1, _, _ := led.Digest()
	r, _ = led.Apply(2, []fsm.Event{a, c})
	if r[0].Outcome != fsm.OutcomeDuplicate || r[1].Outcome != fsm.OutcomeDuplicate {
		t.Fatalf("results %+v", r)
	}
	if d2, _, _ := led.Digest(); d2 != d1 {
		t.Fatal("a duplicate changed the ledger")
	}
	if h, _ := led.ChainHead("acme"); h.Seq != 2 {
		t.Fatalf("chain holds %d events, want 2", h.Seq)
	}
}

func TestApply_ReappliedIndexIsSkipped(t *testing.T) {
	led := newLedger(t)
	j := fsmtest.NewJob(tableJobID, "acme", 100, "use1")
	if _, err := led.Apply(5, []fsm.Event{j.Created()}); err != nil {
		t.Fatal(err)
	}
	for _, index := range []uint64{5, 3} {
		r, err := led.Apply(index, []fsm.Event{j.Ev(1, 1, accept("use1"))})
		if err != nil || r != nil {
			t.Fatalf("apply at %d after 5: %v %v, want skipped", index, r, err)
		}
	}
	if js, _ := led.Job("acme", tableJobID); js.Status != pending {
		t.Fatal("a skipped entry changed the job")
	}
	if _, err := led.Apply(0, nil); err == nil {
		t.Fatal("index 0 accepted")
	}
}

func TestApplyEncoded_UndecodableBatchIsRejectedDeterministically(t *testing.T) {
	led := newLedger(t)
	r, err := led.ApplyEncoded(1, []byte{fsm.BatchVersion, 1, 0xff})
	if err != nil {
		t.Fatal(err)
	}
	if len(r) != 1 || r[0].Outcome != rejected || !errors.Is(r[0].Err, fsm.ErrMalformed) || led.AppliedIndex() != 1 {
		t.Fatalf("results %+v, applied %d", r, led.AppliedIndex())
	}
	j := fsmtest.NewJob(tableJobID, "acme", 100, "use1")
	b, err := fsm.EncodeBatch([]fsm.Event{j.Created(), j.Ev(1, 1, accept("use1"))})
	if err != nil {
		t.Fatal(err)
	}
	r, err = led.ApplyEncoded(2, b)
	if err != nil || len(r) != 2 || r[1].Outcome != applied {
		t.Fatalf("results %+v, %v", r, err)
	}
}

// An entry's batches apply in one call, each with its own results; a
// batch that does not decode is rejected alone, and the stored events
// are those Apply stores from the decoded events (same links).
func TestApplyEncodedMany_BadBatchRejectedAloneOthersApplied(t *testing.T) {
	j := fsmtest.NewJob(tableJobID, "acme", 100, "use1")
	created, accepted := j.Created(), j.Ev(1, 1, accept("use1"))
	first, err := fsm.EncodeBatch([]fsm.Event{created})
	if err != nil {
		t.Fatal(err)
	}
	second, err := fsm.EncodeBatch([]fsm.Event{accepted})
	if err != nil {
		t.Fatal(err)
	}
	led := newLedger(t)
	rs, err := led.ApplyEncodedMany(1, [][]byte{first, {fsm.BatchVersion, 1, 0xff}, second})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || len(rs[0]) != 1 || rs[0][0].Outcome != applied || len(rs[1]) != 1 ||
		!errors.Is(rs[1][0].Err, fsm.ErrMalformed) || len(rs[2]) != 1 || rs[2][0].Outcome != applied {
		t.Fatalf("results %+v", rs)
	}
	if again, err := led.ApplyEncodedMany(1, [][]byte{first}); err != nil || again != nil {
		t.Fatalf("re-applied index: %+v, %v", again, err)
	}
	ref := newLedger(t)
	if _, err := ref.Apply(1, []fsm.Event{created, accepted}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []fsm.Event{created, accepted} {
		got, err := led.Event(e.Tenant, e.ID)
		if err != nil {
			t.Fatalf("event %s: %v", e.ID, err)
		}
		want, err := ref.Event(e.Tenant, e.ID)
		if err != nil {
			t.Fatalf("reference event %s: %v", e.ID, err)
		}
		if got.Link != want.Link {
			t.Fatalf("event %s: link %x, Apply stores %x", e.ID, got.Link, want.Link)
		}
	}
}

// TestApply_LateEventIsFoldedInCanonicalOrder drives the rare path: an
// event that orders before the job's last folded event makes the ledger
// recompute the job from its history, and the result is what in-order
// delivery gives.
func TestApply_LateEventIsFoldedInCanonicalOrder(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lateWall   int64 // offset of the late event from the creation
		late       fsm.Body
		lateFence  uint64
		lateResult fsm.Outcome
		want       fsm.JobStatus
	}{
		{"late acceptance makes an absorbed completion legal", 5, accept("use1"), 1, applied, completed},
		{"late cancellation wins over a completion", 15, cancel(), 1, applied, cancelling},
		{"late failure loses to an earlier completion at the same fence", 15, fail(), 1, absorbed, completed},
		{"late higher-fenced failure replaces a completion", 15, fail(), 2, applied, failed},
		{"late progress after the completion is absorbed", 25, progress("use1", 3, false), 1, absorbed, completed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := fsmtest.NewJob(tableJobID, "acme", 100, "use1")
			c := j.Created()
			events := []fsm.Event{c}
			if tc.late.EventType() != fsm.TypeJobAccepted {
				events = append(events, j.At(fsmtest.TS(c.HLC.WallMs+2, 0, 1), 1, accept("use1")))
			}
			events = append(events, j.At(fsmtest.TS(c.HLC.WallMs+10, 0, 1), 1, complete()))
			events = append(events, j.At(fsmtest.TS(c.HLC.WallMs+30, 0, 1), 1, progress("use1", 1, false)))
			late := j.At(fsmtest.TS(c.HLC.WallMs+tc.lateWall, 0, 2), tc.lateFence, tc.late)

			led := newLedger(t)
			for i, e := range events {
				if _, err := led.Apply(uint64(i+1), []fsm.Event{e}); err != nil {
					t.Fatal(err)
				}
			}
			r, err := led.Apply(100, []fsm.Event{late})
			if err != nil {
				t.Fatal(err)
			}
			if r[0].Outcome != tc.lateResult {
				t.Fatalf("late event %s (%v), want %s", r[0].Outcome, r[0].Err, tc.lateResult)
			}
			got, _ := led.Job("acme", tableJobID)
			if got.Status != tc.want {
				t.Fatalf("status %s, want %s", got.Status, tc.want)
			}
			inOrder := newLedger(t)
			sorted := append(events[:1:1], late)
			sorted = append(sorted, events[1:]...)
			if _, err := inOrder.Apply(1, sortCanonical(sorted)); err != nil {
				t.Fatal(err)
			}
			want, _ := inOrder.Job("acme", tableJobID)
			gd, _ := got.Digest()
			wd, _ := want.Digest()
			if gd != wd {
				t.Fatalf("late delivery: %+v\nin-order delivery: %+v", got, want)
			}
		})
	}
}

func sortCanonical(events []fsm.Event) []fsm.Event {
	out := append([]fsm.Event(nil), events...)
	for i := 1; i < len(out); i++ {
		for k := i; k > 0 && out[k].Key().Less(out[k-1].Key()); k-- {
			out[k], out[k-1] = out[k-1], out[k]
		}
	}
	return out
}
