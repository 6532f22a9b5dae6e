package livestats

import (
	"fmt"
	"testing"
	"time"

	"github.com/strata-ledger/strata/transport/progress"
)

// BenchmarkTrackerAdd is a manager's flush: 10,000 changed aggregates
// with 4-bucket histograms folded into 100 jobs' deltas, then taken.
func BenchmarkTrackerAdd(b *testing.B) {
	const aggs = 10_000
	ps := make([]progress.Progress, aggs)
	for i := range ps {
		ps[i] = progress.Progress{Workflow: fmt.Sprintf("%s%05d/use1/w/%d", testJob[:len(testJob)-5], i%100, i), Worker: "w", Fence: 1,
			Histogram: progress.Histogram{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 4, 1, 0, 0, 1}}
	}
	tr := NewTracker()
	for i := range ps {
		tr.Add(ps[i])
	}
	b.ReportAllocs()
	b.ResetTimer()
	for n := range b.N {
		for i := range ps {
			p := &ps[i]
			p.Completed = uint64(n + 1)
			p.Histogram[12] = uint64(n + 5)
			tr.Add(*p)
		}
		tr.Take(500 * time.Millisecond)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*aggs), "ns/aggregate")
}

// BenchmarkBoardLive is a job view's read: a job with 30 samples (3
// managers, 10 pushes) folded into per-region figures.
func BenchmarkBoardLive(b *testing.B) {
	clk := &testClock{t: time.Unix(1_800_000_000, 0)}
	board := NewBoard(clk.now)
	for range 10 {
		for _, m := range []string{"m1", "m2", "m3"} {
			board.Add(&Push{Node: m, Region: "use1", Samples: []Sample{sample(100, 3, map[int]uint64{12: 50, 13: 40, 14: 9, 17: 1})}})
		}
		clk.advance(400 * time.Millisecond)
	}
	b.ReportAllocs()
	for b.Loop() {
		if board.Live(testJob) == nil {
			b.Fatal("no live figures")
		}
	}
}
