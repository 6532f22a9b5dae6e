package boltstore_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// benchStore opens an empty store and returns it with its cleanup.
type benchStore func(b *testing.B) (fsm.Store, func())

func memBench(*testing.B) (fsm.Store, func()) { return memstore.New(), func() {} }

func boltBench(fsync bool) benchStore {
	return func(b *testing.B) (fsm.Store, func()) {
		dir, err := os.MkdirTemp(b.TempDir(), "bench")
		if err != nil {
			b.Fatal(err)
		}
		st, err := boltstore.Open(boltstore.WithStatistics(boltstore.Config{Path: filepath.Join(dir, "ledger.db"), FsyncEveryBatch: fsync}))
		if err != nil {
			b.Fatal(err)
		}
		return st, func() {
			if err := st.Close(); err != nil {
				b.Fatal(err)
			}
			os.RemoveAll(dir)
		}
	}
}

// boltGroupBench opens a store with group commit as a node runs it.
func boltGroupBench(b *testing.B) (fsm.Store, func()) {
	dir := b.TempDir()
	st, err := boltstore.Open(boltstore.WithStatistics(boltstore.Config{Path: filepath.Join(dir, "ledger.db"),
		CommitInterval: boltstore.NodeCommitInterval}))
	if err != nil {
		b.Fatal(err)
	}
	return st, func() {
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(dir)
	}
}

// BenchmarkLedgerApply measures Ledger.Apply over fsmtest.BenchStream
// (the mix of fsm's BenchmarkLedgerApply: 200-byte bodies, ~500 active
// jobs, 88% progress) with memstore and bbolt side by side, bbolt with
// and without an fsync per batch, plus bbolt with random event ids
// (16 random bytes, what nodes made before issue 19) and with
// time-ordered ids (what they make now); the stream's own ids increase.
func BenchmarkLedgerApply(b *testing.B) {
	stream, meanBody := fsmtest.BenchStream(fsmtest.BenchStreamEvents)
	random := slices.Clone(stream)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range random {
		for j := range random[i].ID {
			random[i].ID[j] = byte(rng.Uint32())
		}
	}
	// Time-ordered ids as the node makes them (fsm.TimeOrderedEventID):
	// the stream's events 300 per millisecond (the rate of a busy
	// ledger), then 10 random bytes.
	timed := slices.Clone(stream)
	for i := range timed {
		var r [10]byte
		for j := range r {
			r[j] = byte(rng.Uint32())
		}
		timed[i].ID = fsm.TimeOrderedEventID(1_700_000_000_000+int64(i/300), r)
	}
	b.Logf("stream of %d events, mean body %d bytes", len(stream), meanBody)
	for _, st := range []struct {
		name   string
		open   benchStore
		events []fsm.Event
	}{
		{"store=memstore", memBench, stream},
		{"store=bolt/fsync=none", boltBench(false), stream},
		{"store=bolt/fsync=batch", boltBench(true), stream},
		{"store=bolt/fsync=none/ids=random", boltBench(false), random},
		{"store=bolt/fsync=none/ids=timeordered", boltBench(false), timed},
		{"store=bolt/fsync=none/commit=group", boltGroupBench, stream},
	} {
		for _, size := range []int{1, 100, 1000} {
			b.Run(fmt.Sprintf("%s/batch=%d", st.name, size), func(b *testing.B) {
				benchApply(b, st.open, st.events, size, meanBody)
			})
		}
	}
}

func benchApply(b *testing.B, open benchStore, stream []fsm.Event, size, meanBody int) {
	b.ReportAllocs()
	b.SetBytes(int64(size * meanBody))
	var pages int64
	var cur fsm.Store
	newLedger := func() (*fsm.Ledger, func()) {
		st, done := open(b)
		cur = st
		led, err := fsm.New(fsm.Config{Store: st})
		if err != nil {
			b.Fatal(err)
		}
		return led, done
	}
	closeLedger := func(done func()) {
		if bs, ok := cur.(*boltstore.Store); ok {
			st := bs.TxStats()
			pages += st.GetWrite()
		}
		done()
	}
	led, done := newLedger()
	var index uint64
	pos, batches := 0, 0
	var cpu cpuMeter
	for b.Loop() {
		if batches == 0 {
			cpu.start()
		}
		if pos+size > len(stream) {
			b.StopTimer()
			cpu.stop()
			closeLedger(done)
			led, done = newLedger()
			index, pos = 0, 0
			cpu.start()
			b.StartTimer()
		}
		index++
		if _, err := led.Apply(index, stream[pos:pos+size]); err != nil {
			b.Fatal(err)
		}
		pos += size
		batches++
	}
	b.StopTimer()
	cpu.stop()
	closeLedger(done)
	events := float64(batches * size)
	b.ReportMetric(events/b.Elapsed().Seconds(), "events/s")
	// On a shared machine the process's CPU per event varies less than
	// the wall clock; pages/event is what bbolt wrote (0 for memstore).
	if cpu.ok {
		b.ReportMetric(float64(cpu.spent.Nanoseconds())/events, "cpu-ns/event")
	}
	b.ReportMetric(float64(pages)/events, "pages/event")
}

// BenchmarkLateEvents is fsm's BenchmarkLateEvents (one event per batch
// against a job with a 5,000-event history, late or in order) with
// memstore and bbolt side by side.
func BenchmarkLateEvents(b *testing.B) {
	for _, st := range []struct {
		name string
		open benchStore
	}{{"store=memstore", memBench}, {"store=bolt/fsync=none", boltBench(false)}} {
		for _, order := range []string{"late", "inorder"} {
			b.Run(st.name+"/order="+order, func(b *testing.B) {
				s, done := st.open(b)
				defer done()
				led, err := fsm.New(fsm.Config{Store: s})
				if err != nil {
					b.Fatal(err)
				}
				fsmtest.BenchLateEvents(b, led, order == "late")
			})
		}
	}
}
