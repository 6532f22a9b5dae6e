package antientropy_test

import (
	"fmt"
	"testing"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// BenchmarkLedgerApplyWithTree is fsm's BenchmarkLedgerApply/batch=1000
// (memstore, fsmtest.BenchStream) with the work of keeping a tree current
// after each batch: tree=none applies only; tree=digest-only also reads
// and digests every job the batch touched (fsm's JobState.Digest, which an
// integration needs whatever the tree); tree=sum also Sets each digest in
// a tree of DefaultDepth. The tree's own cost is sum − digest-only.
func BenchmarkLedgerApplyWithTree(b *testing.B) {
	stream, _ := fsmtest.BenchStream(fsmtest.BenchStreamEvents)
	const size = 1000
	for _, mode := range []string{"none", "digest-only", "sum"} {
		b.Run(fmt.Sprintf("batch=%d/tree=%s", size, mode), func(b *testing.B) {
			b.ReportAllocs()
			newLedger := func() (*fsm.Ledger, *antientropy.Tree) {
				led, err := fsm.New(fsm.Config{Store: memstore.New()})
				if err != nil {
					b.Fatal(err)
				}
				tr, err := antientropy.New(antientropy.DefaultDepth)
				if err != nil {
					b.Fatal(err)
				}
				return led, tr
			}
			led, tree := newLedger()
			var index uint64
			pos, batches, sets := 0, 0, 0
			touched := map[string]struct{}{}
			for b.Loop() {
				if pos+size > len(stream) {
					b.StopTimer()
					led, tree = newLedger()
					index, pos = 0, 0
					b.StartTimer()
				}
				index++
				res, err := led.Apply(index, stream[pos:pos+size])
				if err != nil {
					b.Fatal(err)
				}
				pos += size
				batches++
				if mode == "none" {
					continue
				}
				clear(touched)
				for _, r := range res {
					if (r.Outcome == fsm.OutcomeApplied || r.Outcome == fsm.OutcomeAbsorbed) && r.JobID != "" {
						touched[r.JobID] = struct{}{}
					}
				}
				for id := range touched {
					s, err := led.JobByID(id)
					if err != nil {
						b.Fatal(err)
					}
					d, err := s.Digest()
					if err != nil {
						b.Fatal(err)
					}
					if mode == "sum" {
						if err := tree.Set(id, d); err != nil {
							b.Fatal(err)
						}
					}
					sets++
				}
			}
			b.ReportMetric(float64(batches*size)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(sets)/float64(batches), "jobs/batch")
		})
	}
}
