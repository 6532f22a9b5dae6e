package regionsync

import (
	"context"
	"fmt"
	"testing"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// TestRound_FarBehindGlobalLedgerRepairsABoundedPart: the global ledger
// lacks the reports of 5,000 of the region's jobs (a forwarder far
// behind, or many lost batches). A round descends into about
// MaxRepairsPerRound differing subtrees only (Compare.SetLimit), repairs
// those and says the views still differ; the next round goes on. Without
// the limit, a round descended into all of them: past about 50,000
// differences that took more round trips than maxCompareSteps, and every
// round failed with "comparison ... did not end in 88 steps" without
// repairing anything (seen on `strata dev` while 1M jobs were loaded;
// antientropy's TestCompare_LimitBoundsRoundsAndBytes has the counts).
func TestRound_FarBehindGlobalLedgerRepairsABoundedPart(t *testing.T) {
	const jobs = 5_000
	// The region's reports of every job, which the global ledger lacks.
	p := newPair(t, jobs, "test-token-0123456789", func(first, n int) []fsm.Event {
		reports := make([]fsm.Event, 0, n)
		for k := first; k < first+n; k++ {
			j := fsmtest.NewJob(fmt.Sprintf("use1-1700000000000-g%d-%05d", k/fsm.MaxJobSeq, k%fsm.MaxJobSeq+1), "acme", uint64(jobs+k)*10, "use1")
			reports = append(reports, j.Ev(2, 1, &fsm.JobProgressReported{Region: "use1", Completed: 1}))
		}
		return reports
	})
	s := p.syncer
	repaired := 0
	for round := 1; round <= 2; round++ {
		st, err := s.Round(context.Background())
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if st.Differences < MaxRepairsPerRound || st.Differences > 2*MaxRepairsPerRound ||
			st.Repaired != MaxRepairsPerRound || st.RootsEqual {
			t.Fatalf("round %d: %d differences, %d repaired, roots equal %v; want about %d found, %d repaired, roots still different",
				round, st.Differences, st.Repaired, st.RootsEqual, MaxRepairsPerRound, MaxRepairsPerRound)
		}
		if st.Bytes > 4*MaxRepairsPerRound*antientropy.DefaultDepth*32 {
			t.Fatalf("round %d exchanged %d bytes", round, st.Bytes)
		}
		repaired += st.Repaired
		t.Logf("round %d: %d differences, %d repaired, %d bytes, %d ms", round, st.Differences, st.Repaired, st.Bytes, st.DurationMs)
	}
	// The repairs reached the global ledger: as many jobs carry the report.
	got := 0
	if err := p.gled.View(func(tx fsm.ReadTx) error {
		for k := range jobs {
			s, err := tx.Job(fmt.Sprintf("use1-1700000000000-g%d-%05d", k/fsm.MaxJobSeq, k%fsm.MaxJobSeq+1))
			if err != nil {
				return err
			}
			if s != nil && s.Regions[0].Completed == 1 {
				got++
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got != repaired {
		t.Fatalf("the global ledger holds %d jobs' reports, want the %d repaired", got, repaired)
	}
}
