package bundle

import (
	"bytes"
	"crypto/sha256"
	"hash"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/internal/proccpu"
)

// The NDJSON writer's memory and speed (issue 15: an export never holds
// the export in memory): a bundle of N JobCreated events (the export
// memory test's events, cluster/httpapi/export_heap_test.go) in a file,
// one in ten a late event (its HLC up to 2,000 events back), written as
// NDJSON by the streaming writer and, for comparison, the legacy one.
// STRATA_NDJSON_EVENTS sets N (1000000 for the figures of issue 15) and
// then the default run size is used.
const (
	ndjsonMemEvents = 50_000
	// ndjsonMemRunBytes is the run size at the test's size: its ~20 MB
	// of lines go to about ten runs.
	ndjsonMemRunBytes = 1 << 20
	// ndjsonMemSlack bounds what the writer holds besides its run: the
	// arena's last block, the run files' read buffers and lines, the
	// output buffer, the verifier's.
	ndjsonMemSlack = 5 << 20
	// ndjsonMemSamples is the points of the output where the writer is
	// paused and the live heap measured (besides every spill).
	ndjsonMemSamples = 8
)

func TestNDJSON_HoldsBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a bundle of tens of thousands of events")
	}
	n, run := ndjsonMemEvents, ndjsonMemRunBytes
	if v := os.Getenv("STRATA_NDJSON_EVENTS"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1000 {
			t.Fatalf("STRATA_NDJSON_EVENTS=%q (at least 1000)", v)
		}
		n, run = k, DefaultNDJSONRunBytes
	}
	dir := t.TempDir()
	src, late := lateBundleFile(t, filepath.Join(dir, "acme.bundle"), n)
	t.Logf("bundle of %d events (%d late) in %d bytes", n, late, src.Size)

	// Speed, on its own: the memory samples below collect garbage.
	speedRuns := &countedRuns{dir: dir}
	out := &sampledWriter{sum: sha256.New()}
	var m NDJSONManifest
	var err error
	wall, cpu := proccpu.Timed(func() {
		m, err = WriteNDJSONWith(out, src, NDJSONConfig{RunBytes: run, NewRunFile: speedRuns.newFile})
	})
	if err != nil || m.Count != uint64(n) {
		t.Fatalf("%+v, %v", m, err)
	}

	// Memory: live heap over the heap before, at every spill (the run in
	// memory is full) and at ndjsonMemSamples points of the output.
	runs := &countedRuns{dir: dir}
	base := liveHeap()
	var peak uint64
	sample := func() { peak = max(peak, liveHeap()) }
	cfg := NDJSONConfig{RunBytes: run, NewRunFile: func() (RunFile, error) {
		sample()
		return runs.newFile()
	}}
	sampled := &sampledWriter{every: out.n / ndjsonMemSamples, fn: sample, sum: sha256.New()}
	if m, err = WriteNDJSONWith(sampled, src, cfg); err != nil || !bytes.Equal(sampled.sum.Sum(nil), out.sum.Sum(nil)) {
		t.Fatalf("%+v, %v", m, err)
	}
	growth := int64(peak) - int64(base)
	bound := int64(2*run + ndjsonMemSlack)
	t.Logf("streaming: %d bytes of NDJSON in %s: %.0f events/s, %.0f per CPU-second; %d run files; "+
		"live heap +%.1f MiB at most (%d samples; run size %d MiB, bound %.0f MiB)",
		out.n, wall.Round(time.Millisecond), float64(n)/wall.Seconds(), float64(n)/cpu.Seconds(), speedRuns.made,
		float64(growth)/(1<<20), sampled.samples+runs.made, run>>20, float64(bound)/(1<<20))
	if runs.open_+speedRuns.open_ != 0 {
		t.Fatalf("%d run files left open", runs.open_+speedRuns.open_)
	}
	if out.n < 4*bound {
		t.Fatalf("%d bytes of NDJSON: too few to tell holding it from not", out.n)
	}
	if growth > bound {
		t.Fatalf("the NDJSON writer held %d bytes of live heap over the heap before it, over %d", growth, bound)
	}

	// The legacy writer on the same bundle, for the ratio and its memory
	// (an index sorted whole, sampled when it first writes).
	base = liveHeap()
	peak = 0
	legacy := &sampledWriter{every: 1 << 62, first: sample, sum: sha256.New()}
	lwall, lcpu := proccpu.Timed(func() { _, err = writeNDJSONLegacy(legacy, src, nil, nil) })
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(legacy.sum.Sum(nil), out.sum.Sum(nil)) || legacy.n != out.n {
		t.Fatalf("legacy: %d bytes, streaming %d; digests differ", legacy.n, out.n)
	}
	t.Logf("legacy: %s: %.0f events/s, %.0f per CPU-second (streaming: x%.2f per CPU-second); its index +%.1f MiB live when it first writes",
		lwall.Round(time.Millisecond), float64(n)/lwall.Seconds(), float64(n)/lcpu.Seconds(), lcpu.Seconds()/cpu.Seconds(),
		float64(int64(peak)-int64(base))/(1<<20))
}

// lateBundleFile writes lateBundle's bundle of n events to path and
// opens it.
func lateBundleFile(t *testing.T, path string, n int) (Source, int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	late := lateBundle(t, f, n)
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		t.Fatal(err)
	}
	return Source{Name: path, R: f, Size: size}, late
}

// lateBundle writes a bundle of n JobCreated events of tenant "acme" to
// w, one in ten given the HLC of an event up to 2,000 before it (a late
// event), and returns how many are late.
func lateBundle(t testing.TB, w io.Writer, n int) int {
	t.Helper()
	r := rand.New(rand.NewPCG(uint64(n), 1))
	late := 0
	var hlcs []hlc.Timestamp
	_, err := WriteChain(w, WriterConfig{Tenant: "acme", CreatedAt: testCreated, CreatedBy: "g1", Rechain: true},
		func(fn func(*fsm.StoredEvent) error) error {
			for first := 0; first < n; first += 1000 {
				for _, e := range fsmtest.JobsCreated(first, min(1000, n-first), "acme", "use1") {
					hlcs = append(hlcs, e.HLC)
					if len(hlcs) > 2000 {
						hlcs = hlcs[1:]
					}
					if r.IntN(10) == 0 {
						e.HLC = hlcs[r.IntN(len(hlcs))]
						e.HLC.Node += 7 // not the HLC of the event it copies
						late++
					}
					if err := fn(&fsm.StoredEvent{Event: e}); err != nil {
						return err
					}
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return late
}

// sampledWriter counts and hashes what it takes, calls first before the
// first byte and fn every every bytes.
type sampledWriter struct {
	n, next, every int64
	first, fn      func()
	samples        int
	sum            hash.Hash
}

func (w *sampledWriter) Write(b []byte) (int, error) {
	if w.n == 0 && w.first != nil {
		w.first()
	}
	w.n += int64(len(b))
	if w.fn != nil && w.n >= w.next {
		w.next += w.every
		w.samples++
		w.fn()
	}
	w.sum.Write(b)
	return len(b), nil
}

// liveHeap collects garbage twice and returns the heap in use.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
