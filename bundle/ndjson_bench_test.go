package bundle

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/strata-ledger/strata/internal/proccpu"
)

// BenchmarkNDJSON: a bundle of 50,000 events to NDJSON, by the legacy
// writer (ndjson_legacy_test.go: an index sorted in memory, each entry
// read again by offset, json.Marshal per line) and the streaming one
// side by side: lines sorted in memory (run=1024MiB), with the default
// run size (16 MiB), and in small runs (1 MiB: ~30-40 runs). Two
// chains: chain=mix is benchChain (fsmtest.BenchStream's mix, whose
// bodies are ~200 bytes, many with stats), chain=created the export
// tests' JobCreated events, one in ten late (lateBundle). events/s is
// events per wall-clock second of the loop; ns/op, B/op and allocs/op
// compare directly; events/cpu-s is events per CPU-second of the process
// (user and system: the run files' reads and writes count), the figure to
// compare on a shared machine.
func BenchmarkNDJSON(b *testing.B) {
	var created bytes.Buffer
	lateBundle(b, &created, benchEvents)
	chains := []struct {
		name   string
		bundle []byte
	}{{"mix", writeBundle(b, benchChain(b), nil)}, {"created", created.Bytes()}}
	for _, c := range chains {
		src := srcOf(c.bundle)
		b.Run(fmt.Sprintf("chain=%s/path=legacy", c.name), func(b *testing.B) {
			b.ReportAllocs()
			start, cpu := time.Now(), proccpu.Used()
			for b.Loop() {
				if _, err := writeNDJSONLegacy(io.Discard, src, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
			reportEvents(b, benchEvents, start)
			reportCPU(b, benchEvents, cpu)
		})
		dir := b.TempDir()
		for _, run := range []int{1 << 30, DefaultNDJSONRunBytes, 1 << 20} {
			b.Run(fmt.Sprintf("chain=%s/path=stream/run=%dMiB", c.name, run>>20), func(b *testing.B) {
				b.ReportAllocs()
				start, cpu := time.Now(), proccpu.Used()
				for b.Loop() {
					if _, err := WriteNDJSONWith(io.Discard, src, NDJSONConfig{RunBytes: run, NewRunFile: tempRuns(dir)}); err != nil {
						b.Fatal(err)
					}
				}
				reportEvents(b, benchEvents, start)
				reportCPU(b, benchEvents, cpu)
			})
		}
	}
}

// reportCPU reports events per CPU-second since since (a cpuTime).
func reportCPU(b *testing.B, events int, since time.Duration) {
	b.ReportMetric(float64(events)*float64(b.N)/(proccpu.Used()-since).Seconds(), "events/cpu-s")
}
