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
