package commit

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/strata-ledger/strata/wal"
)

func TestWatermark_OutOfOrderCompletionAdvancesOnlyOverAGapFreePrefix(t *testing.T) {
	tests := []struct {
		name   string
		start  wal.LSN
		finish []wal.LSN
		want   []wal.LSN // mark after each finish
	}{
		{name: "in order", finish: []wal.LSN{1, 2, 3}, want: []wal.LSN{1, 2, 3}},
		{name: "reverse", finish: []wal.LSN{3, 2, 1}, want: []wal.LSN{0, 0, 3}},
		{name: "gap closes late", finish: []wal.LSN{1, 3, 4, 2, 6}, want: []wal.LSN{1, 1, 1, 4, 4}},
		{name: "resumes above a recovered mark", start: 10, finish: []wal.LSN{12, 11}, want: []wal.LSN{10, 12}},
		{name: "at or below the mark and repeats change nothing", start: 5, finish: []wal.LSN{3, 5, 7, 7, 6}, want: []wal.LSN{5, 5, 5, 5, 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newLSNTracker(tt.start, tt.start)
			for i, lsn := range tt.finish {
				tr.add(lsn)
				got, moved := tr.finish(lsn)
				if got != tt.want[i] || tr.Mark() != got {
					t.Fatalf("after finishing %v: mark %d, want %d", tt.finish[:i+1], got, tt.want[i])
				}
				if prev := max(tt.start, prevWant(tt.want, i)); moved != (got > prev) {
					t.Fatalf("after finishing %d: moved %v, mark %d -> %d", lsn, moved, prev, got)
				}
			}
		})
	}
}

func prevWant(want []wal.LSN, i int) wal.LSN {
	if i == 0 {
		return 0
	}
	return want[i-1]
}

// TestWatermark_RandomCompletionOrderMatchesAModel finishes LSNs in random
// orders and checks the mark against the longest finished prefix, computed
// the dumb way.
func TestWatermark_RandomCompletionOrderMatchesAModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	for round := range 50 {
		n := 1 + rng.IntN(200)
		tr := newLSNTracker(0, 0)
		finished := make([]bool, n+1)
		for _, k := range rng.Perm(n) {
			lsn := wal.LSN(k + 1)
			tr.add(lsn)
			tr.finish(lsn)
			finished[lsn] = true
			var want wal.LSN
			for want < wal.LSN(n) && finished[want+1] {
				want++
			}
			if got := tr.Mark(); got != want {
				t.Fatalf("round %d (seed %d): mark %d, want %d", round, seed, got, want)
			}
			if span := tr.span(); span != uint64(tr.highest-want) {
				t.Fatalf("round %d: span %d", round, span)
			}
		}
		if len(tr.done) != 0 {
			t.Fatalf("round %d: %d finished LSNs left above the mark", round, len(tr.done))
		}
	}
}
