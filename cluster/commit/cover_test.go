package commit

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/strata-ledger/strata/wal"
)

// The compaction rule, pure: the tracker is driven through random
// interleavings of a model Raft log — records start attempts (reading the
// epoch), commit at the log's next index, and report out of order; some
// are refused (need nothing), some come back without an index; the node
// may have restarted with records at the tier whose indexes are unknown.
// After every step, for random snapshot indexes, coveredBy never names an
// LSN at or above a record that has not reached the tier, or whose entry
// is above the snapshot (its true index, known to the model), and
// forgetting what was compacted changes nothing of that.
func TestCover_NeverCoversARecordNotDurableAtItsTier(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	for round := range 300 {
		coverRound(t, rng, round, seed)
	}
}

// modelRecord is one NodeWAL record of the model.
type modelRecord struct {
	started  bool
	epoch    uint64 // read when its attempt started
	index    uint64 // true Raft index once committed; 0 before
	refused  bool
	reported bool
}

func coverRound(t *testing.T, rng *rand.Rand, round int, seed uint64) {
	n := 1 + rng.IntN(300)
	// A restart: records ≤ compacted are gone, (compacted, mark] reached
	// the tier before it at indexes ≤ raftIndex, not written down.
	compacted := wal.LSN(rng.IntN(n/3 + 1))
	mark := compacted + wal.LSN(rng.IntN(n/3+1))
	raftIndex := uint64(rng.IntN(50)) + uint64(mark) // the log so far
	recs := make([]modelRecord, n+1)
	for l := wal.LSN(1); l <= mark; l++ {
		recs[l] = modelRecord{started: true, reported: true, index: uint64(l)} // ≤ raftIndex
	}
	tr := newLSNTrackerFrom(mark, mark, compacted)
	var epoch uint64 = 1 // the pipeline's counter
	forgotten := compacted

	check := func(step string) {
		t.Helper()
		for range 4 {
			snap := uint64(rng.IntN(int(raftIndex) + 2))
			got := tr.coveredBy(snap)
			if got < forgotten {
				t.Fatalf("round %d (seed %d) %s: covered %d below the forgotten %d", round, seed, step, got, forgotten)
			}
			for l := forgotten + 1; l <= got; l++ {
				r := recs[l]
				switch {
				case !r.reported:
					t.Fatalf("round %d (seed %d) %s: covered(%d) = %d passes LSN %d, not at its tier", round, seed, step, snap, got, l)
				case !r.refused && r.index > snap:
					t.Fatalf("round %d (seed %d) %s: covered(%d) = %d passes LSN %d, committed at index %d", round, seed, step, snap, got, l, r.index)
				}
			}
			if rng.IntN(8) == 0 && got > forgotten {
				tr.forgetUpTo(got) // compacted up to it
				forgotten = got
			}
		}
	}

	pending := make([]wal.LSN, 0, n)
	for l := mark + 1; l <= wal.LSN(n); l++ {
		pending = append(pending, l)
		tr.add(l)
	}
	for len(pending) > 0 {
		k := rng.IntN(len(pending))
		l := pending[k]
		r := &recs[l]
		switch {
		case !r.started:
			r.started, r.epoch = true, epoch
		case r.index == 0 && !r.refused:
			if rng.IntN(10) == 0 {
				r.refused = true // the tier refuses it for good
			} else {
				raftIndex++
				r.index = raftIndex
			}
		default:
			r.reported = true
			pending = append(pending[:k], pending[k+1:]...)
			switch {
			case r.refused:
				tr.finish(l)
			case rng.IntN(6) == 0: // a leader that did not say its index
				epoch++
				tr.finishNeeding(l, need{epoch: epoch})
			default:
				tr.finishNeeding(l, need{index: r.index})
				tr.resolve(r.index, r.epoch)
			}
		}
		check("step")
	}
	// Liveness: once a later attempt bounded every unknown index, all of
	// it is covered by an index at or above the log's end.
	raftIndex++
	tr.resolve(raftIndex, epoch)
	if got := tr.coveredBy(raftIndex); got != wal.LSN(n) {
		t.Fatalf("round %d (seed %d): everything reported and bounded, covered %d, want %d", round, seed, got, n)
	}
}

// Merging steps when there are too many only ever covers less.
func TestCover_HalvingStepsCoversNoMore(t *testing.T) {
	var c cover
	for i := range maxCoverSteps + 10 {
		c.push(wal.LSN(i+1), need{index: uint64(2*i + 1)})
	}
	if len(c.steps) > maxCoverSteps {
		t.Fatalf("%d steps kept, limit %d", len(c.steps), maxCoverSteps)
	}
	for _, idx := range []uint64{0, 1, 2, 3, 1000, 2*maxCoverSteps + 100} {
		got := c.covered(idx)
		// Exact answer: records 1..k need 1, 3, ..., 2k-1.
		exact := wal.LSN(min((idx+1)/2, maxCoverSteps+10))
		if got > exact {
			t.Fatalf("covered(%d) = %d after halving, exact %d", idx, got, exact)
		}
	}
	if got := c.covered(1 << 40); got != maxCoverSteps+10 {
		t.Fatalf("covered(all) = %d", got)
	}
}
