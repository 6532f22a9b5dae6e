package commit

import (
	"context"
	"testing"
	"testing/synctest"
)

// Attempts are admitted in arrival order within the byte bound; one larger
// than the bound goes alone; a waiter whose context ends leaves the queue
// and the ones behind it move up.
func TestAdmission_FIFOWithinTheBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAdmission(100)
		ctx := t.Context()
		if err := a.acquire(ctx, 60); err != nil {
			t.Fatal(err)
		}
		order := make(chan int, 4)
		wait := func(id, n int, ctx context.Context) {
			if err := a.acquire(ctx, n); err == nil {
				order <- id
			} else {
				order <- -id
			}
		}
		go wait(1, 50, ctx) // does not fit beside 60
		synctest.Wait()
		go wait(2, 10, ctx) // fits, but 1 is ahead of it
		synctest.Wait()
		cctx, cancel := context.WithCancel(ctx)
		go wait(3, 500, cctx) // larger than the bound
		synctest.Wait()
		if len(order) != 0 {
			t.Fatalf("admitted %d past a waiter ahead of them", len(order))
		}
		a.release(60)
		synctest.Wait()
		if got := []int{<-order, <-order}; got[0] != 1 || got[1] != 2 {
			t.Fatalf("admitted %v, want [1 2]", got)
		}
		cancel()
		synctest.Wait()
		if got := <-order; got != -3 {
			t.Fatalf("waiter 3: %d, want its context's end (-3)", got)
		}
		if used, waiting := a.inFlight(); used != 60 || waiting != 0 {
			t.Fatalf("in flight %d bytes, %d waiting; want 60 and 0", used, waiting)
		}
		a.release(50)
		a.release(10)
		if err := a.acquire(ctx, 500); err != nil { // alone: goes
			t.Fatal(err)
		}
		a.release(500)
		if used, _ := a.inFlight(); used != 0 {
			t.Fatalf("%d bytes left in flight", used)
		}
	})
}
