package bundle

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// TestMerge_ExternalMemoryFigure (STRATA_MERGE_EVENTS=N to run): two
// bundles of two thirds of an N-event chain each, overlapping in a third,
// written to files, merged in memory and then externally (runs of
// STRATA_MERGE_RUN_ENTRIES, default N/10), each timed and with the live
// heap sampled (a GC before each sample, every 100 ms); the outputs must
// be equal. It logs the figures of BENCHMARKS.md "Bundles".
func TestMerge_ExternalMemoryFigure(t *testing.T) {
	s := os.Getenv("STRATA_MERGE_EVENTS")
	if s == "" {
		t.Skip("STRATA_MERGE_EVENTS not set")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 100 {
		t.Fatalf("STRATA_MERGE_EVENTS=%q", s)
	}
	run := n / 10
	if s := os.Getenv("STRATA_MERGE_RUN_ENTRIES"); s != "" {
		if run, err = strconv.Atoi(s); err != nil || run < 1 {
			t.Fatalf("STRATA_MERGE_RUN_ENTRIES=%q", s)
		}
	}
	dir := t.TempDir()
	var srcs []Source
	{
		chain := chainOf(t, applyAll(t, oneTenantStream(n+n/10)), "acme")[:n]
		third := len(chain) / 3
		for i, part := range [][]int{{0, 2 * third}, {third, len(chain)}} {
			name := filepath.Join(dir, strconv.Itoa(i)+".bundle")
			if err := os.WriteFile(name, rechained(t, chain[part[0]:part[1]], testCreated, "n"+strconv.Itoa(i)), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			srcs = append(srcs, Source{Name: name, R: f, Size: st.Size()})
		}
	}
	var outs [2][]byte
	for i, cfg := range []MergeConfig{{}, {RunEntries: run, NewRunFile: tempRuns(dir)}} {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		base, peak := ms.HeapAlloc, ms.HeapAlloc
		done, sampled := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(sampled)
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-done:
					return
				case <-tick.C:
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapAlloc)
				}
			}
		}()
		out, err := os.Create(filepath.Join(dir, "out"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		res, err := Merge(out, srcs, cfg)
		elapsed := time.Since(start)
		close(done)
		<-sampled
		out.Close()
		if err != nil {
			t.Fatal(err)
		}
		outs[i], _ = os.ReadFile(out.Name())
		t.Logf("merge (run entries %d): %d entries read, %d duplicates, %d runs, %v (%.0f input entries/s, GC sampling included), live heap +%.1f MiB at peak",
			cfg.RunEntries, res.Read, res.Duplicates, res.Runs, elapsed.Round(time.Millisecond), float64(res.Read)/elapsed.Seconds(),
			float64(int64(peak)-int64(base))/(1<<20))
	}
	if !bytes.Equal(outs[0], outs[1]) {
		t.Fatal("the external merge wrote other bytes")
	}
}
