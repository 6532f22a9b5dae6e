package decisive

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
)

func TestJobs_OneDecisiveWriteOfAJobAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := New()
		release, ok := j.TryAcquire("a")
		if !ok {
			t.Fatal("a free job was not taken")
		}
		if _, ok := j.TryAcquire("a"); ok {
			t.Fatal("a job in flight was taken twice")
		}
		other, ok := j.TryAcquire("b")
		if !ok {
			t.Fatal("another job was held by a's write")
		}
		other()

		got := make(chan func(), 1)
		go func() {
			r, err := j.Acquire(context.Background(), "a")
			if err != nil {
				t.Error(err)
			}
			got <- r
		}()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("Acquire returned while the write was in flight")
		default:
		}
		release()
		release() // idempotent: must not free a later holder
		synctest.Wait()
		r := <-got
		if _, ok := j.TryAcquire("a"); ok {
			t.Fatal("the waiter's hold was freed by the first holder's second release")
		}
		r()
		if j.Busy() != 0 {
			t.Fatalf("%d jobs still busy", j.Busy())
		}
	})
}

func TestJobs_AcquireEndsWithItsContextAndTakesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		j := New()
		release, _ := j.TryAcquire("a")
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := j.Acquire(ctx, "a")
			done <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Acquire = %v, want context.Canceled", err)
		}
		release()
		if j.Busy() != 0 {
			t.Fatal("a cancelled Acquire left the job taken")
		}
	})
}

func TestJobs_NilHoldsNothing(t *testing.T) {
	var j *Jobs
	r, err := j.Acquire(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	r()
	if r, ok := j.TryAcquire("a"); !ok {
		t.Fatal("nil Jobs refused")
	} else {
		r()
	}
}
