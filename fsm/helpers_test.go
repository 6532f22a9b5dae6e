package fsm_test

import (
	"runtime"
	"testing"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// allocatedBytes returns the heap bytes fn allocates: the least of a few
// runs, because the counter is process-wide and other goroutines (parallel
// tests, the runtime) allocate during a run too.
func allocatedBytes(fn func()) uint64 {
	least := ^uint64(0)
	for range 5 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		least = min(least, after.TotalAlloc-before.TotalAlloc)
	}
	return least
}

// checkAllocBound fails if decoding an input of n bytes allocated more
// than a fixed multiple of n: decoders check lengths before allocating.
func checkAllocBound(t *testing.T, n int, fn func()) {
	t.Helper()
	if got, limit := allocatedBytes(fn), uint64(64*n+32<<10); got > limit {
		t.Fatalf("decoding %d bytes allocated %d bytes (limit %d)", n, got, limit)
	}
}

func newStore(testing.TB) fsm.Store { return memstore.New() }

func newLedger(t testing.TB) *fsm.Ledger {
	t.Helper()
	led, _ := fsmtest.NewLedger(t, newStore)
	return led
}
