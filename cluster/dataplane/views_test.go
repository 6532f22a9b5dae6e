package dataplane

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// The data-plane caches: an answer is reused for its TTL, read again
// early only when the caller asks for something newer after the recheck
// delay, never cached when the read failed, and bounded.
func TestDataPlaneCache(t *testing.T) {
	var c ttlCache[int]
	reads := 0
	read := func(v int, ok bool) func() (int, bool) {
		return func() (int, bool) { reads++; return v, ok }
	}
	never := func(int) bool { return false }
	always := func(int) bool { return true }
	t0 := time.Unix(1000, 0)

	if got := c.get("k", t0, never, read(1, false)); got != 1 || reads != 1 {
		t.Fatalf("failed read: got %d after %d reads", got, reads)
	}
	if c.get("k", t0, never, read(2, true)); reads != 2 {
		t.Fatal("a failed read was cached")
	}
	steps := []struct {
		what  string
		at    time.Duration
		stale func(int) bool
		reads int
	}{
		{"within the TTL", dataPlaneCacheTTL - time.Millisecond, never, 2},
		{"newer asked before the recheck delay", dataPlaneRecheck - time.Millisecond, always, 2},
		{"newer asked after the recheck delay", dataPlaneRecheck, always, 3},
		{"past the TTL", dataPlaneRecheck + dataPlaneCacheTTL, never, 4},
	}
	for _, s := range steps {
		c.get("k", t0.Add(s.at), s.stale, read(3, true))
		if reads != s.reads {
			t.Fatalf("%s: %d reads, want %d", s.what, reads, s.reads)
		}
	}
	for i := range dataPlaneCacheEntries + 1 {
		c.get(string(rune(i)), t0, never, read(i, true))
	}
	if len(c.m) > dataPlaneCacheEntries {
		t.Fatalf("cache holds %d entries, bound %d", len(c.m), dataPlaneCacheEntries)
	}
}

// BenchmarkCacheClock: a cache hit as the fold goroutine makes one per
// update, with the clock read through time.Now and through the coarse
// clock, side by side.
func BenchmarkCacheClock(b *testing.B) {
	var c ttlCache[int]
	never := func(int) bool { return false }
	read := func() (int, bool) { return 1, true }
	coarse := newCoarseClock()
	for _, clk := range []struct {
		name string
		now  func() time.Time
	}{{"time.Now", time.Now}, {"coarse", coarse.now}} {
		b.Run(clk.name, func(b *testing.B) {
			c.get("k", clk.now(), never, read)
			for b.Loop() {
				c.get("k", clk.now(), never, read)
			}
		})
	}
}

// The coarse clock follows the clock tick by tick (synctest's fake time).
func TestCoarseClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newCoarseClock()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go c.run(ctx)
		start := c.now()
		time.Sleep(3*coarseTick + time.Millisecond)
		synctest.Wait()
		if got := c.now().Sub(start); got != 3*coarseTick {
			t.Fatalf("after 3 ticks the coarse clock moved %s", got)
		}
	})
}
