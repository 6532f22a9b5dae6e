package httpapi

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/strata-ledger/strata/bundle"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/internal/proccpu"
)

// The export's own memory and speed (issue 15), in a process of its own:
// a bbolt ledger with one tenant's chain of N events, exported by
// writeExport (the handler's read view, ChainEvents and bundle writer)
// with nothing else running. STRATA_EXPORT_STORE_EVENTS sets N (1000000
// for BENCHMARKS.md "Bundles"); STRATA_EXPORT_STORE_PROFILE names a
// directory for heap profiles at the paused peaks.
const (
	exportStoreEvents = 5_000
	// maxExportLiveBytes bounds what a paused export holds over the heap
	// before it: buffers, never the bundle.
	maxExportLiveBytes = 16 << 20
	// exportPauses is the points of the stream where the reader stops.
	exportPauses = 8
)

func TestExport_HoldsBoundedMemoryFromBolt(t *testing.T) {
	if testing.Short() {
		t.Skip("a bbolt ledger of thousands of events")
	}
	n := exportStoreEvents
	if v := os.Getenv("STRATA_EXPORT_STORE_EVENTS"); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1000 {
			t.Fatalf("STRATA_EXPORT_STORE_EVENTS=%q (at least 1000)", v)
		}
		n = k
	}
	profDir := os.Getenv("STRATA_EXPORT_STORE_PROFILE")
	dir := t.TempDir()
	st, err := boltstore.Open(boltstore.Config{Path: filepath.Join(dir, "ledger.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	led, err := fsm.New(fsm.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for first, index := 0, uint64(1); first < n; first, index = first+1000, index+1 {
		if _, err := led.Apply(index, fsmtest.JobsCreated(first, min(1000, n-first), "acme", "use1")); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("ledger of %d events applied in %s", n, time.Since(start).Round(time.Millisecond))
	cfg := bundle.WriterConfig{Tenant: "acme", CreatedAt: time.Unix(1_700_000_000, 0), CreatedBy: "g1"}
	file := filepath.Join(dir, "acme.bundle")

	// Speed: three exports to a file, then three verifications of it.
	var size int64
	for run := range 3 {
		f, err := os.Create(file)
		if err != nil {
			t.Fatal(err)
		}
		wall, cpu := proccpu.Timed(func() { err = writeExport(st, f, cfg) })
		if err == nil {
			size, err = f.Seek(0, io.SeekCurrent)
		}
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("export %d: %d bytes in %s: %.0f events/s, %.0f per CPU-second", run, size, wall.Round(time.Millisecond), float64(n)/wall.Seconds(), float64(n)/cpu.Seconds())
	}
	for run := range 3 {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		var rep bundle.Report
		wall, cpu := proccpu.Timed(func() { rep, err = bundle.Verify(bufio.NewReaderSize(f, 1<<20), bundle.VerifyConfig{}) })
		f.Close()
		if err != nil || rep.Entries != uint64(n) {
			t.Fatalf("verify: %+v %v", rep, err)
		}
		t.Logf("verify %d: %s: %.0f events/s, %.0f per CPU-second", run, wall.Round(time.Millisecond), float64(n)/wall.Seconds(), float64(n)/cpu.Seconds())
	}

	// Memory, paused: the reader of a pipe stops at exportPauses points;
	// the export blocks in its write holding what it holds, and two GCs
	// find it.
	base := liveHeap()
	if profDir != "" {
		writeProfile(t, filepath.Join(profDir, "export-base.pprof"))
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := writeExport(st, pw, cfg)
		pw.CloseWithError(err)
		done <- err
	}()
	var peak uint64
	every, next, read := size/(exportPauses+1), size/(exportPauses+1), int64(0)
	buf := make([]byte, 32<<10)
	for {
		k, err := pr.Read(buf)
		read += int64(k)
		if read >= next {
			next += every
			if h := liveHeap(); h > peak {
				peak = h
				if profDir != "" {
					writeProfile(t, filepath.Join(profDir, "export-paused-peak.pprof"))
				}
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	growth := int64(peak) - int64(base)

	// Concurrent, for comparison: forced GCs while the export runs count
	// what it allocates during each as live.
	concurrent, during := concurrentGrowth(t, func() error { return writeExport(st, io.Discard, cfg) })

	// NDJSON: the handler writes the bundle to a file, then verifies it
	// and sorts its lines by HLC, in memory up to 16 MiB and in sorted
	// runs on disk past it; the first write to the client comes once they
	// are sorted (bundle's TestNDJSON_HoldsBoundedMemory bounds it).
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ndBase := liveHeap()
	var ndPeak uint64
	fw := &firstWrite{fn: func() { ndPeak = liveHeap() }}
	wall, cpu := proccpu.Timed(func() {
		_, err = bundle.WriteNDJSONWith(fw, bundle.Source{Name: "export", R: f, Size: size}, bundle.NDJSONConfig{NewRunFile: tempRunFile})
	})
	if err != nil {
		t.Fatal(err)
	}
	ndGrowth := int64(ndPeak) - int64(ndBase)
	t.Logf("memory: paused export +%.2f MiB live at most (%d pauses; bound %d MiB); concurrent GC sampling +%.1f MiB (up to %.1f MiB allocated during one GC); NDJSON +%.1f MiB live when it first writes (%.0f bytes an entry), NDJSON of %d bytes in %s (%.0f events/s, %.0f per CPU-second)",
		float64(growth)/(1<<20), exportPauses, maxExportLiveBytes>>20, float64(concurrent)/(1<<20), float64(during)/(1<<20),
		float64(ndGrowth)/(1<<20), float64(ndGrowth)/float64(n), fw.n, wall.Round(time.Millisecond), float64(n)/wall.Seconds(), float64(n)/cpu.Seconds())
	if growth > maxExportLiveBytes {
		t.Fatalf("a paused export holds %d bytes of live heap over the heap before it", growth)
	}
	if limit := int64(2*bundle.DefaultNDJSONRunBytes + maxExportLiveBytes); ndGrowth > limit { // a run of lines and its records
		t.Fatalf("the NDJSON writer holds %d bytes for %d entries, over %d", ndGrowth, n, limit)
	}
}

// liveHeap collects garbage twice and returns the heap in use.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// concurrentGrowth runs fn with a forced GC every 50 ms meanwhile and
// returns the largest live heap growth seen right after one, and the most
// allocated during one.
func concurrentGrowth(t *testing.T, fn func() error) (growth, during uint64) {
	base := liveHeap()
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				before := heapAllocs()
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				during = max(during, heapAllocs()-before)
				if ms.HeapAlloc > base {
					growth = max(growth, ms.HeapAlloc-base)
				}
			}
		}
	}()
	err := fn()
	close(stop)
	<-stopped
	if err != nil {
		t.Fatal(err)
	}
	return growth, during
}

func heapAllocs() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// firstWrite counts bytes and calls fn before the first one is taken.
type firstWrite struct {
	fn func()
	n  int64
}

func (w *firstWrite) Write(b []byte) (int, error) {
	if w.n == 0 && w.fn != nil {
		w.fn()
	}
	w.n += int64(len(b))
	return len(b), nil
}

func writeProfile(t *testing.T, path string) {
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		t.Fatal(err)
	}
}
