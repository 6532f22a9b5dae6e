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
		st, err := boltstore.Open(boltstore.Config{Path: filepath.Join(dir, "ledger.db"), FsyncEveryBatch: fsync})
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

// BenchmarkLedgerApply measures Ledger.Apply over fsmtest.BenchStream
// (the mix of fsm's BenchmarkLedgerApply: 200-byte bodies, ~500 active
// jobs, 88% progress) with memstore and bbolt side by side, bbolt with
// and without an fsync per batch, plus bbolt with random event ids
// (DESIGN §3: ids are 16 random bytes; the stream's ids increase).
func BenchmarkLedgerApply(b *testing.B) {
	stream, meanBody := fsmtest.BenchStream(fsmtest.BenchStreamEvents)
	random := slices.Clone(stream)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range random {
		for j := range random[i].ID {
			random[i].ID[j] = byte(rng.Uint32())
		}
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
	newLedger := func() (*fsm.Ledger, func()) {
		st, done := open(b)
		led, err := fsm.New(fsm.Config{Store: st})
		if err != nil {
			b.Fatal(err)
		}
		return led, done
	}
	led, done := newLedger()
	var index uint64
	pos, batches := 0, 0
	for b.Loop() {
		if pos+size > len(stream) {
			b.StopTimer()
			done()
			led, done = newLedger()
			index, pos = 0, 0
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
	done()
	b.ReportMetric(float64(batches*size)/b.Elapsed().Seconds(), "events/s")
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
