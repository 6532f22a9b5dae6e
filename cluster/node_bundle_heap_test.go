package cluster

import (
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// The live heap of an export through the API (issue 15), measured in the
// process of a test cluster: TestBundle_ExportSpeedThroughTheAPI.

// forwarderQueued is the events the managers' lifecycle forwarders of c
// hold read ahead (decoded, up to 100,000 each): background work of the
// process that a heap sample of an export would count.
func forwarderQueued(c *testCluster) int {
	queued := 0
	for _, cfg := range c.cfgs {
		if n := c.node(cfg.NodeID); n != nil && n.life != nil {
			if st, ok := n.life.ForwarderStatus(); ok {
				queued += st.QueueDepth
			}
		}
	}
	return queued
}

// waitForwardersIdle waits (polling, up to 15 minutes) until no forwarder
// holds queued events at two polls a second apart and the process has
// stopped allocating: the nodes' background work is done, and what an
// export adds to the heap is the export's.
func waitForwardersIdle(t *testing.T, c *testCluster) {
	start := time.Now()
	deadline := start.Add(15 * time.Minute)
	for idle := 0; idle < 2; {
		if q := forwarderQueued(c); q == 0 {
			idle++
		} else {
			idle = 0
		}
		if time.Now().After(deadline) {
			t.Fatalf("the forwarders still hold %d queued events after 15 minutes", forwarderQueued(c))
		}
		time.Sleep(time.Second)
	}
	quiesce(t)
	t.Logf("forwarders idle after %s", time.Since(start).Round(time.Millisecond))
}

// exportPausePoints is how many times exportLiveHeapPaused stops reading.
const exportPausePoints = 8

// exportLiveHeapConcurrent exports to file with a forced GC every 250 ms
// meanwhile, and returns the largest live heap growth over the heap before
// it (HeapAlloc right after each GC) and the most bytes allocated during
// one of those GCs: a GC counts what is allocated while it marks as live,
// so the growth includes up to that much of the export's garbage.
func exportLiveHeapConcurrent(t *testing.T, c *testCluster, file, profDir string) (growth, allocDuringGC uint64, queuedAtPeak int) {
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	if profDir != "" {
		writeHeapProfile(t, filepath.Join(profDir, "heap-base.pprof"))
	}
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				before := heapAllocsBytes()
				runtime.GC()
				runtime.ReadMemStats(&ms)
				allocDuringGC = max(allocDuringGC, heapAllocsBytes()-before)
				if ms.HeapAlloc > base+growth {
					growth = ms.HeapAlloc - base
					queuedAtPeak = forwarderQueued(c)
					if profDir != "" {
						writeHeapProfile(t, filepath.Join(profDir, "heap-concurrent-peak.pprof"))
					}
				}
			}
		}
	}()
	_, err = exportTo(c, f)
	close(done)
	<-sampled
	if err != nil {
		t.Fatal(err)
	}
	return growth, allocDuringGC, queuedAtPeak
}

// exportLiveHeapPaused exports to file reading the stream in
// exportPausePoints+1 parts; at the end of each part it stops reading
// until the process has stopped allocating (the export is blocked on its
// socket, holding what it holds mid-stream), collects garbage twice and
// samples the live heap. It returns the largest growth over the heap
// before the export and how many samples it took.
func exportLiveHeapPaused(t *testing.T, c *testCluster, file string, n int, profDir string) (growth uint64, pauses int) {
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	quiesce(t)
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	if profDir != "" {
		writeHeapProfile(t, filepath.Join(profDir, "heap-paused-base.pprof"))
	}
	part := int64(n) * 248 / (exportPausePoints + 1) // ~248 bytes an entry
	pw := &pausingWriter{w: f, every: max(part, 1), pause: func() {
		if pauses >= exportPausePoints {
			return
		}
		pauses++
		quiesce(t)
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		if ms.HeapAlloc > base+growth {
			growth = ms.HeapAlloc - base
			if profDir != "" {
				writeHeapProfile(t, filepath.Join(profDir, "heap-paused-peak.pprof"))
			}
		}
	}}
	if _, err := exportTo(c, pw); err != nil {
		t.Fatal(err)
	}
	return growth, pauses
}

// pausingWriter calls pause, with nothing being read meanwhile, each time
// another every bytes have gone through it.
type pausingWriter struct {
	w     io.Writer
	every int64
	next  int64
	n     int64
	pause func()
}

func (p *pausingWriter) Write(b []byte) (int, error) {
	if p.next == 0 {
		p.next = p.every
	}
	k, err := p.w.Write(b)
	p.n += int64(k)
	for p.n >= p.next {
		p.pause()
		p.next += p.every
	}
	return k, err
}

// quiesce polls (every 50 ms, for up to 30 s) until the process allocated
// less than 1 MiB between two polls: a paused export has filled its
// socket's buffers and blocks.
func quiesce(t *testing.T) {
	deadline := time.Now().Add(30 * time.Second)
	last := heapAllocsBytes()
	for {
		time.Sleep(50 * time.Millisecond)
		now := heapAllocsBytes()
		if now-last < 1<<20 {
			return
		}
		last = now
		if time.Now().After(deadline) {
			t.Logf("the process kept allocating for 30 s (%d bytes in the last 50 ms): sampling anyway", now-last)
			return
		}
	}
}

// heapAllocsBytes is the bytes allocated on the heap by the process so far.
func heapAllocsBytes() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
