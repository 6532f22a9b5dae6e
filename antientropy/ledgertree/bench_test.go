package ledgertree

import (
	"path/filepath"
	"testing"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// BenchmarkLedgerApply is fsm/boltstore's BenchmarkLedgerApply/batch=1000
// (bbolt, no fsync per batch, fsmtest.BenchStream) with and without a
// Tracker, side by side in one run: the cost of keeping the Merkle tree
// current (issue 13: at most 5%). The leader marks a checkpoint every 30 s
// by default, thousands of batches at this rate; a mark every 16 batches
// bounds the cost from above.
func BenchmarkLedgerApply(b *testing.B) {
	stream, meanBody := fsmtest.BenchStream(fsmtest.BenchStreamEvents)
	const size = 1000
	for _, tc := range []struct {
		name  string
		every uint64 // batches between marks; 0: no tracker
	}{{"tree=off", 0}, {"tree=on/mark=16", 16}, {"tree=on/mark=256", 256}} {
		b.Run(tc.name+"/batch=1000", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size * meanBody))
			open := func() (*fsm.Ledger, func()) {
				st, err := boltstore.Open(boltstore.Config{Path: filepath.Join(b.TempDir(), "ledger.db")})
				if err != nil {
					b.Fatal(err)
				}
				cfg := fsm.Config{Store: st}
				if tc.every > 0 {
					tr, err := New(antientropy.DefaultDepth)
					if err != nil {
						b.Fatal(err)
					}
					cfg.Observer = tr
				}
				led, err := fsm.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				return led, func() { _ = st.Close() }
			}
			led, done := open()
			var index uint64
			pos, batches := 0, 0
			for b.Loop() {
				if pos+size > len(stream) {
					b.StopTimer()
					done()
					led, done = open()
					index, pos = 0, 0
					b.StartTimer()
				}
				index++
				if _, err := led.Apply(index, stream[pos:pos+size]); err != nil {
					b.Fatal(err)
				}
				if tc.every > 0 && index%tc.every == 0 {
					index++
					if err := led.Mark(index); err != nil {
						b.Fatal(err)
					}
				}
				pos += size
				batches++
			}
			b.StopTimer()
			done()
			b.ReportMetric(float64(batches*size)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkRebuild measures building a ledger's trees from its store, as
// a node does at start: the whole-state tree and a region view, over a
// memstore ledger of 1M jobs (the store's read cost is memstore's).
func BenchmarkRebuild(b *testing.B) {
	const jobs = 1_000_000
	led, err := fsm.New(fsm.Config{Store: memstore.New()})
	if err != nil {
		b.Fatal(err)
	}
	createJobs(b, jobs, led)
	for _, tc := range []struct {
		name string
		make func() (*Tracker, error)
	}{
		{"tree=state", func() (*Tracker, error) { return New(antientropy.DefaultDepth) }},
		{"tree=region", func() (*Tracker, error) { return NewRegionView(antientropy.DefaultDepth, "use1") }},
	} {
		b.Run(tc.name+"/jobs=1000000", func(b *testing.B) {
			for b.Loop() {
				tr, err := tc.make()
				if err != nil {
					b.Fatal(err)
				}
				if err := tr.Rebuild(led.AppliedIndex(), led.View); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(jobs)/(b.Elapsed().Seconds()/float64(b.N)), "jobs/s")
		})
	}
}
