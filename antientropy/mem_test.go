package antientropy

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestTree_EmptyTreeIsSmall: an empty tree of DefaultDepth allocates its
// dense levels and chunk headers only (3.5 MiB), not 2^depth of anything.
func TestTree_EmptyTreeIsSmall(t *testing.T) {
	const limit = 4 << 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	tr, err := New(DefaultDepth)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(tr)
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Fatalf("New(%d) allocated %d bytes, want at most %d", DefaultDepth, got, limit)
	}
	if got := testing.AllocsPerRun(3, func() { _, _ = New(DefaultDepth) }); got > 3 {
		t.Fatalf("New(%d) makes %v allocations, want at most 3", DefaultDepth, got)
	}
}

// TestTree_DefaultDepthIncrementalEqualsRebuild: at DefaultDepth, where
// levels denseLevels..21 are summed from the chunks, Set and Delete leave
// the tree equal, node for node, to one rebuilt from the ledger.
func TestTree_DefaultDepthIncrementalEqualsRebuild(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 4))
	tr, err := New(DefaultDepth)
	if err != nil {
		t.Fatal(err)
	}
	model := ledger{}
	for range 20000 {
		id := jobID(r.IntN(5000))
		if r.IntN(4) == 0 {
			if got, want := tr.Delete(id), has(model, id); got != want {
				t.Fatalf("Delete(%s) = %v, want %v", id, got, want)
			}
			delete(model, id)
			continue
		}
		d := digestOf(id, r.IntN(3))
		if err := tr.Set(id, d); err != nil {
			t.Fatal(err)
		}
		model[id] = d
	}
	sameTree(t, tr, treeOf(t, DefaultDepth, model))
}

// heapAlloc returns the live heap after a full collection.
func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkTreeMemory measures what a tree of DefaultDepth keeps live:
// fixedB for an empty tree, B/job for one rebuilt from 1M jobs (the
// fixed part and the ids included, since the tree holds them), both from
// runtime.MemStats' HeapAlloc after a collection.
func BenchmarkTreeMemory(b *testing.B) {
	const jobs = 1_000_000
	var fixed, perJob float64
	for b.Loop() {
		before := heapAlloc()
		empty, err := New(DefaultDepth)
		if err != nil {
			b.Fatal(err)
		}
		fixed = float64(heapAlloc() - before)
		runtime.KeepAlive(empty)
		empty = nil
		before = heapAlloc()
		tr, err := Rebuild(DefaultDepth, benchJobs(jobs))
		if err != nil {
			b.Fatal(err)
		}
		perJob = float64(heapAlloc()-before) / jobs
		runtime.KeepAlive(tr)
	}
	b.ReportMetric(fixed, "fixedB")
	b.ReportMetric(perJob, "B/job")
}
