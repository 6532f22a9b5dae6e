package boltstore_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// largeJobs is the size of a large-restore test: STRATA_BOLT_RESTORE_JOBS
// (e.g. 1000000) or def jobs, each created and accepted.
func largeJobs(def int) int { return fsmtest.EnvInt("STRATA_BOLT_RESTORE_JOBS", def) }

// fillJobs applies n jobs (a JobCreated and a JobAccepted each) in
// batches of 1,000 events.
func fillJobs(t testing.TB, led *fsm.Ledger, n int) {
	t.Helper()
	regions := []string{"euw1", "use1"}
	created := &fsm.JobCreated{Spec: fsmtest.Spec("acme", regions...), AssignedRegions: regions}
	accepted := &fsm.JobAccepted{Region: "use1", WorkerCount: 4}
	batch := make([]fsm.Event, 0, 1000)
	index := led.AppliedIndex()
	flush := func() {
		index++
		if _, err := led.Apply(index, batch); err != nil {
			t.Fatal(err)
		}
		batch = make([]fsm.Event, 0, 1000)
	}
	for i := range n {
		tenant := fmt.Sprintf("tenant%d", i%8)
		created := *created
		created.Spec.Tenant = tenant
		ms := int64(1_700_000_000_000 + i/1000)
		id := fsm.JobID{Region: "use1", UnixMs: ms, Gate: "gate1", Seq: uint32(i%1000 + 1)}.String()
		batch = append(batch,
			fsmtest.NewEvent(fsmtest.ID(uint64(2*i+1)), id, tenant, "use1", "gate1", fsmtest.TS(ms, uint32(i%1000), 1), 1, &created),
			fsmtest.NewEvent(fsmtest.ID(uint64(2*i+2)), id, tenant, "use1", "mgr1", fsmtest.TS(ms+1, uint32(i%1000), 2), 1, accepted))
		if len(batch) == cap(batch) {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
}

// heapPeak samples HeapInuse every few milliseconds while fn runs and
// returns the growth of its peak over the value before fn. The GC runs
// at GOGC=25 meanwhile, so the peak is mostly what fn holds, not garbage
// waiting for a collection.
func heapPeak(fn func()) (growth uint64) {
	defer debug.SetGCPercent(debug.SetGCPercent(25))
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	fn()
	close(done)
	wg.Wait()
	return peak - base
}

// restoreLarge snapshots a store of largeJobs() jobs (snap writes it) to a
// file and restores it from the file into a new store, checking that the
// heap grows by less than limit(snapshot size) and that the digest and
// the applied index are the store's.
func restoreLarge(t *testing.T, n int, snap func(*fsm.Ledger, io.Writer) error, limit func(size int64) uint64) {
	cfg := testConfig(t)
	cfg.InitialMmapBytes, cfg.ReplaceCommitBytes = 0, 1<<20
	src := ledgerOn(t, openStore(t, cfg))
	start := time.Now()
	fillJobs(t, src, n)
	t.Logf("%d jobs applied in %s", n, time.Since(start).Round(time.Millisecond))
	path := filepath.Join(t.TempDir(), "snapshot")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := snap(src, f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(path)
	dst := ledgerOn(t, openStore(t, inNewDir(t, cfg)))
	start = time.Now()
	growth := heapPeak(func() {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := dst.Restore(f); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("restored a %d-byte snapshot in %s; peak heap growth %d bytes (%.1f%% of the snapshot)",
		info.Size(), time.Since(start).Round(time.Millisecond), growth, 100*float64(growth)/float64(info.Size()))
	if limit := limit(info.Size()); growth > limit {
		t.Fatalf("restore grew the heap by %d bytes, limit %d", growth, limit)
	}
	want, _, _ := src.Digest()
	got, _, _ := dst.Digest()
	if got != want || dst.AppliedIndex() != src.AppliedIndex() {
		t.Fatalf("restored digest %s at %d, want %s at %d", got, dst.AppliedIndex(), want, src.AppliedIndex())
	}
}

// An image is streamed to disk, checked and swapped in: the heap grows by
// a small fraction of the snapshot (a few buffers, one decoded job at a
// time while the digest is checked).
func TestRestore_LargeImageInBoundedMemory(t *testing.T) {
	restoreLarge(t, largeJobs(50_000), (*fsm.Ledger).Snapshot, func(size int64) uint64 { return uint64(size) / 4 })
}

// A record stream (from any store) fills a new file committed every
// ReplaceCommitBytes (1 MiB here): the heap grows by a few commits' worth
// and bbolt's bookkeeping of the new file, a small part of the snapshot
// at scale (12 MB at 20,000 jobs, 600 MB at 1,000,000), hence the 16 MiB
// floor. Its restore re-verifies every chain link, hence fewer jobs.
func TestRestore_LargeRecordStreamInBoundedMemory(t *testing.T) {
	restoreLarge(t, largeJobs(20_000), (*fsm.Ledger).SnapshotRecords, func(size int64) uint64 {
		return max(16<<20, uint64(size)/8)
	})
}

// Record streams move state between stores: memstore to bbolt (through
// Replace, committing many times) and back, equal to the model.
func TestRestore_RecordStreamsCrossStores(t *testing.T) {
	const seed = 8
	t.Logf("seed %d", seed)
	mem := ledgerOn(t, memstore.New())
	m := fsmtest.NewModel()
	fsmtest.Drive(t, seed, mem, m, 6000, 0)
	cfg := testConfig(t)
	cfg.ReplaceCommitBytes = 1 << 20
	bolt := ledgerOn(t, openStore(t, cfg))
	if err := bolt.Restore(bytes.NewReader(state(t, mem))); err != nil {
		t.Fatal(err)
	}
	fsmtest.CompareWithModel(t, bolt, m)
	back := ledgerOn(t, memstore.New())
	if err := back.Restore(bytes.NewReader(state(t, bolt))); err != nil {
		t.Fatal(err)
	}
	fsmtest.CompareWithModel(t, back, m)
	fsmtest.Drive(t, seed+1, bolt, m, 1000, 0)
	fsmtest.CompareWithModel(t, bolt, m)
}
