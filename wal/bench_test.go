package wal

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// benchPayloadBytes is the payload of every benchmarked append.
const benchPayloadBytes = 128

// benchWriters are the writer counts every store is measured at.
var benchWriters = []int{1, 16, 256, 1024}

// benchDir is where benchmarks put their files: STRATA_WAL_BENCH_DIR (so
// `make bench-wal` measures every store on the same disk), else a temp dir.
func benchDir(b *testing.B) string {
	b.Helper()
	root := os.Getenv("STRATA_WAL_BENCH_DIR")
	if root == "" {
		return b.TempDir()
	}
	dir, err := os.MkdirTemp(root, "bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// BenchmarkAppend measures NodeWAL appends: each writer appends a 128-byte
// record in a loop and waits for its fsync.
func BenchmarkAppend(b *testing.B) {
	for _, writers := range benchWriters {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			w, err := Open(Config{Dir: benchDir(b)})
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			ctx := context.Background()
			runWriters(b, writers, func(payload []byte) error {
				_, err := w.Append(ctx, Record{Type: 1, Payload: payload})
				return err
			})
			var m dto.Metric
			if err := w.m.batchEntries.Write(&m); err == nil && m.GetHistogram().GetSampleCount() > 0 {
				h := m.GetHistogram()
				b.ReportMetric(h.GetSampleSum()/float64(h.GetSampleCount()), "entries/batch")
			}
		})
	}
}

// runWriters runs b.N calls of op spread over writers goroutines and reports
// throughput (entries/s) and latency percentiles (p50-ns, p99-ns). b.Loop
// drives a single goroutine, so the iteration budget is shared through an
// atomic counter instead.
func runWriters(b *testing.B, writers int, op func(payload []byte) error) {
	b.ReportAllocs()
	b.SetBytes(benchPayloadBytes)
	lat := make([][]time.Duration, writers)
	for g := range lat {
		lat[g] = make([]time.Duration, 0, 2*b.N/writers+16)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for g := range writers {
		wg.Go(func() {
			payload := make([]byte, benchPayloadBytes)
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				if err := op(payload); err != nil {
					b.Error(err)
					return
				}
				lat[g] = append(lat[g], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "entries/s")
	b.ReportMetric(float64(percentile(all, 50)), "p50-ns")
	b.ReportMetric(float64(percentile(all, 99)), "p99-ns")
}

// percentile returns the p-th percentile of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*p/100]
}
