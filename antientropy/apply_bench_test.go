package antientropy_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
	"github.com/strata-ledger/strata/hlc"
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

// BenchmarkRebuildFromLedger is the rebuild at start: read every job of a
// ledger of 1M jobs from its store (memstore), digest it (fsm's
// JobState.Digest) and build the tree. BenchmarkRebuild is the tree's
// share alone.
func BenchmarkRebuildFromLedger(b *testing.B) {
	const jobs = 1_000_000
	st := memstore.New()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	create := &fsm.JobCreated{Spec: fsmtest.Spec("tenant1", "use1"), AssignedRegions: []string{"use1"}}
	ts := hlc.Timestamp{WallMs: 1_700_000_000_000, Node: 1}
	batch := make([]fsm.Event, 0, 1000)
	for i := range jobs {
		ts.WallMs++
		id := fsm.JobID{Region: "use1", UnixMs: ts.WallMs, Gate: "gate1", Seq: 1}.String()
		batch = append(batch, fsmtest.NewEvent(fsmtest.ID(uint64(i+1)), id, "tenant1", "use1", "gate1", ts, 1, create))
		if len(batch) == cap(batch) {
			res, err := led.Apply(uint64(i/1000+1), batch)
			if err != nil || res[0].Outcome != fsm.OutcomeApplied {
				b.Fatalf("apply: %v %v", err, res[0].Err)
			}
			batch = batch[:0]
		}
	}
	b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var tree *antientropy.Tree
			err := st.View(func(tx fsm.ReadTx) error {
				var ierr error
				var err error
				tree, err = antientropy.Rebuild(antientropy.DefaultDepth, func(yield func(string, [32]byte) bool) {
					ierr = tx.Jobs("", "", func(s *fsm.JobState) error {
						d, err := s.Digest()
						if err != nil {
							return err
						}
						if !yield(s.JobID, d) {
							return errStop
						}
						return nil
					})
				})
				if err == nil {
					err = ierr
				}
				return err
			})
			if err != nil || tree.Len() != jobs {
				b.Fatalf("rebuild: %v, %d jobs", err, tree.Len())
			}
		}
	})
}

var errStop = errors.New("stop")
