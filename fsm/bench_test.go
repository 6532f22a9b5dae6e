package fsm_test

import (
	"fmt"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
)

// BenchmarkLedgerApply measures Ledger.Apply with the in-memory store: the
// rules' own per-event cost plus the cheapest possible store, over
// fsmtest.BenchStream (fsm/boltstore runs the same benchmark with bbolt
// and memstore side by side).
func BenchmarkLedgerApply(b *testing.B) {
	stream, meanBody := fsmtest.BenchStream(fsmtest.BenchStreamEvents)
	b.Logf("stream of %d events, mean body %d bytes", len(stream), meanBody)
	for _, size := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size * meanBody))
			led := newLedger(b)
			var index uint64
			pos, batches := 0, 0
			for b.Loop() {
				if pos+size > len(stream) {
					b.StopTimer()
					led, index, pos = newLedger(b), 0, 0
					b.StartTimer()
				}
				index++
				if _, err := led.Apply(index, stream[pos:pos+size]); err != nil {
					b.Fatal(err)
				}
				pos += size
				batches++
			}
			b.ReportMetric(float64(batches*size)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkLedgerApplyEncoded adds batch decoding (what the Raft FSM
// wrapper calls) to BenchmarkLedgerApply.
func BenchmarkLedgerApplyEncoded(b *testing.B) {
	stream, meanBody := fsmtest.BenchStream(fsmtest.BenchStreamEvents)
	const size = 1000
	var encoded [][]byte
	for pos := 0; pos+size <= len(stream); pos += size {
		enc, err := fsm.EncodeBatch(stream[pos : pos+size])
		if err != nil {
			b.Fatal(err)
		}
		encoded = append(encoded, enc)
	}
	b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(size * meanBody))
		led := newLedger(b)
		var index uint64
		batches := 0
		for b.Loop() {
			if int(index) == len(encoded) {
				b.StopTimer()
				led, index = newLedger(b), 0
				b.StartTimer()
			}
			index++
			if _, err := led.ApplyEncoded(index, encoded[index-1]); err != nil {
				b.Fatal(err)
			}
			batches++
		}
		b.ReportMetric(float64(batches*size)/b.Elapsed().Seconds(), "events/s")
	})
}

// BenchmarkLedgerApplyEntry applies Raft entries of 20 client batches of
// 50 events: ApplyEncodedMany (bodies hashed from the bytes they arrived
// in) against decoding each batch and calling Apply, which encodes every
// body again to hash it (what an entry of several batches cost before).
func BenchmarkLedgerApplyEntry(b *testing.B) {
	stream, _ := fsmtest.BenchStream(fsmtest.BenchStreamEvents)
	const perBatch, perEntry = 50, 20
	var entries [][][]byte
	for pos := 0; pos+perBatch*perEntry <= len(stream); pos += perBatch * perEntry {
		var entry [][]byte
		for k := range perEntry {
			enc, err := fsm.EncodeBatch(stream[pos+k*perBatch : pos+(k+1)*perBatch])
			if err != nil {
				b.Fatal(err)
			}
			entry = append(entry, enc)
		}
		entries = append(entries, entry)
	}
	for _, mode := range []string{"encoded-many", "decode-then-apply"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			led := newLedger(b)
			var index uint64
			for b.Loop() {
				if int(index) == len(entries) {
					b.StopTimer()
					led, index = newLedger(b), 0
					b.StartTimer()
				}
				index++
				entry := entries[index-1]
				if mode == "encoded-many" {
					if _, err := led.ApplyEncodedMany(index, entry); err != nil {
						b.Fatal(err)
					}
					continue
				}
				var events []fsm.Event
				for _, enc := range entry {
					evs, err := fsm.DecodeBatch(enc)
					if err != nil {
						b.Fatal(err)
					}
					events = append(events, evs...)
				}
				if _, err := led.Apply(index, events); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(int(b.N)*perBatch*perEntry)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkLateEvents measures applying one event per batch to a job
// with a 5,000-event history: late events (ordering before the job's
// newest event, issue 17 finding 3) against events in order. fsm/boltstore
// runs the same benchmark with bbolt.
func BenchmarkLateEvents(b *testing.B) {
	for _, order := range []string{"late", "inorder"} {
		b.Run("store=memstore/order="+order, func(b *testing.B) {
			fsmtest.BenchLateEvents(b, newLedger(b), order == "late")
		})
	}
}
