package commit

import (
	"context"
	"testing"
	"testing/synctest"
)

// Attempts are admitted lowest LSN first within the byte bound, whatever
// their arrival; one larger than the bound goes alone; a waiter whose
// context ends leaves the queue and the ones behind it move up.
func TestAdmission_LowestLSNFirstWithinTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAdmission(100)
		ctx := t.Context()
		if err := a.acquire(ctx, 1, 100); err != nil { // full
			t.Fatal(err)
		}
		order := make(chan uint64, 8)
		wait := func(ctx context.Context, key uint64, n int) {
			if err := a.acquire(ctx, key, n); err == nil {
				order <- key
			} else {
				order <- 1000 + key
			}
		}
		// They arrive 9, 5, 7, 3; 3 is larger than the bound.
		go wait(ctx, 9, 50)
		synctest.Wait()
		go wait(ctx, 5, 60)
		synctest.Wait()
		go wait(ctx, 7, 30)
		synctest.Wait()
		cctx, cancel := context.WithCancel(ctx)
		go wait(cctx, 3, 500)
		synctest.Wait()
		if len(order) != 0 {
			t.Fatalf("%d admitted while the bound was taken", len(order))
		}
		cancel()
		synctest.Wait()
		if got := <-order; got != 1003 {
			t.Fatalf("got %d, want 1003 (3 gave up)", got)
		}
		// 5 (60) then 7 (30) fit; 9 (50) does not. Arrival order would
		// have let 9 go first, and then 5 would not fit: the set admitted
		// shows the order (the two woken goroutines report in any order).
		a.release(100)
		synctest.Wait()
		if got := []uint64{<-order, <-order}; min(got[0], got[1]) != 5 || max(got[0], got[1]) != 7 {
			t.Fatalf("admitted %v, want 5 and 7: lowest LSN first", got)
		}
		if used, waiting := a.inFlight(); used != 90 || waiting != 1 {
			t.Fatalf("in flight %d bytes, %d waiting; want 90 and 1", used, waiting)
		}
		a.release(60)
		synctest.Wait()
		if got := <-order; got != 9 {
			t.Fatalf("admitted %d, want 9", got)
		}
		a.release(30)
		a.release(50)
		if err := a.acquire(ctx, 2, 500); err != nil { // alone: goes
			t.Fatal(err)
		}
		a.release(500)
		if used, waiting := a.inFlight(); used != 0 || waiting != 0 {
			t.Fatalf("%d bytes in flight, %d waiting at the end", used, waiting)
		}
	})
}
