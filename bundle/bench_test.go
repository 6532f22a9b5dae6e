package bundle

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// benchEvents is the chain length each benchmark operation handles.
const benchEvents = 50_000

// benchChain is a benchEvents-event chain of one tenant from a memstore
// ledger (fsmtest.BenchStream's mix: bodies of about 200 bytes).
func benchChain(b *testing.B) []*fsm.StoredEvent {
	b.Helper()
	chain := chainOf(b, applyAll(b, oneTenantStream(benchEvents+benchEvents/10)), "acme")
	if len(chain) < benchEvents {
		b.Fatalf("chain of %d events", len(chain))
	}
	return chain[:benchEvents]
}

func reportEvents(b *testing.B, events int, start time.Time) {
	b.ReportMetric(float64(events)*float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkWrite: a ledger chain through the Writer (each event's body
// encoded, hashed, link checked, framed, hashed into the entries digest).
func BenchmarkWrite(b *testing.B) {
	chain := benchChain(b)
	size := len(writeBundle(b, chain, nil))
	b.Run("events=50000", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(size))
		start := time.Now()
		for b.Loop() {
			_, err := WriteChain(io.Discard, WriterConfig{Tenant: "acme", CreatedAt: testCreated},
				func(fn func(*fsm.StoredEvent) error) error {
					for _, se := range chain {
						if err := fn(se); err != nil {
							return err
						}
					}
					return nil
				})
			if err != nil {
				b.Fatal(err)
			}
		}
		reportEvents(b, len(chain), start)
	})
}

// BenchmarkVerify: a signed bundle through Verify (every entry decoded,
// body re-encoded and hashed, link recomputed; manifest; signature).
func BenchmarkVerify(b *testing.B) {
	chain := benchChain(b)
	bundle := writeBundle(b, chain, testKey())
	b.Run("events=50000", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(bundle)))
		start := time.Now()
		for b.Loop() {
			if _, err := Verify(bytes.NewReader(bundle), VerifyConfig{}); err != nil {
				b.Fatal(err)
			}
		}
		reportEvents(b, len(chain), start)
	})
}

// BenchmarkMerge: two bundles of two thirds of a chain each, overlapping
// in a third, merged (both verified and indexed, sorted, duplicates
// dropped, entries re-read and rechained). events/s counts input entries.
func BenchmarkMerge(b *testing.B) {
	chain := benchChain(b)
	third := len(chain) / 3
	a := rechained(b, chain[:2*third], testCreated, "a")
	c := rechained(b, chain[third:], testCreated, "c")
	// run=0: in memory; run=N: an external merge sorting runs of N
	// records on disk (66,666 records: 7 runs of 10,000, then 5 of the
	// kept records).
	for _, run := range []int{0, 10_000} {
		b.Run(fmt.Sprintf("inputs=2/events=66666/run=%d", run), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(a) + len(c)))
			dir := b.TempDir()
			start := time.Now()
			var read uint64
			for b.Loop() {
				res, err := Merge(io.Discard, sources(a, c), MergeConfig{RunEntries: run, NewRunFile: tempRuns(dir)})
				if err != nil {
					b.Fatal(err)
				}
				read = res.Read
			}
			reportEvents(b, int(read), start)
		})
	}
}
