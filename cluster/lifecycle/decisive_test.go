package lifecycle

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/strata-ledger/strata/cluster/decisive"
	"github.com/strata-ledger/strata/fsm"
)

// A pass proposes no decision of a job whose cancel is in flight on this
// node (it is planned again next pass), keeps everything else, and holds
// the jobs it decides until the proposal returned: at once on success,
// decisiveHoldOnError after a failure (the decision may still apply).
func TestTakeDecisive_HoldsDecisionsApartFromCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := decisive.New()
		cancelInFlight, _ := j.TryAcquire("busy")
		events := []fsm.Event{
			{Type: fsm.TypeJobCompleted, JobID: "busy"},
			{Type: fsm.TypeJobCompleted, JobID: "free"},
			{Type: fsm.TypeJobTimedOut, JobID: "late"},
			{Type: fsm.TypeJobAdmitted, JobID: "busy"}, // not a decision: kept
		}
		kept, release := takeDecisive(j, events)
		if len(kept) != 3 || kept[0].JobID != "free" || kept[1].JobID != "late" || kept[2].Type != fsm.TypeJobAdmitted {
			t.Fatalf("kept %+v", kept)
		}
		if _, ok := j.TryAcquire("free"); ok {
			t.Fatal("a decision in flight left its job free for a cancel")
		}
		release(errors.New("no quorum"))
		time.Sleep(decisiveHoldOnError - time.Millisecond) // synctest: virtual time
		if _, ok := j.TryAcquire("free"); ok {
			t.Fatal("a failed decision freed its job before decisiveHoldOnError")
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		if j.Busy() != 1 { // the cancel's hold only
			t.Fatalf("%d jobs busy after the hold, want 1", j.Busy())
		}
		cancelInFlight()

		_, release = takeDecisive(j, events[:2])
		release(nil)
		if j.Busy() != 0 {
			t.Fatalf("%d jobs busy after a proposal that reached the tier", j.Busy())
		}
	})
}
