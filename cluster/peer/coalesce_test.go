package peer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
)

// fakeLeader stands in for the leader's propose-many endpoint (fault
// injection: it can hold calls and fail them); it answers each batch with
// an index derived from the batch, so outcomes can be matched to callers.
type fakeLeader struct {
	mu       sync.Mutex
	calls    [][]string // batches of each call, as strings
	hold     chan struct{}
	holdOnly string // hold only calls to this leader ("": all)
	fail     error
}

func (f *fakeLeader) post(ctx context.Context, leader group.Leader, batches [][]byte) ([]forwardOutcome, error) {
	f.mu.Lock()
	call := make([]string, len(batches))
	for i, b := range batches {
		call[i] = leader.ID + ":" + string(b)
	}
	f.calls = append(f.calls, call)
	hold, fail := f.hold, f.fail
	if f.holdOnly != "" && leader.ID != f.holdOnly {
		hold = nil
	}
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail != nil {
		return nil, fail
	}
	outs := make([]forwardOutcome, len(batches))
	for i, b := range batches {
		outs[i].out.Index = uint64(len(b))
		if string(b) == "bad" {
			outs[i].err = group.ErrInvalidBatch
		}
	}
	return outs, nil
}

func (f *fakeLeader) snapshot() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func startCoalescer(t *testing.T, f *fakeLeader) (*coalescer, context.CancelFunc) {
	t.Helper()
	c, err := newCoalescer(f.post, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return c, cancel
}

// waitQueued polls until n items wait in c's queue.
func waitQueued(t *testing.T, c *coalescer, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		q := len(c.queue)
		c.mu.Unlock()
		if q >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d items queued, want %d", q, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// fillSlots occupies every call slot with a held call of one batch,
// one at a time (batches queued together would share a call).
func fillSlots(t *testing.T, c *coalescer, f *fakeLeader, results chan<- error) {
	t.Helper()
	for i := range coalesceInFlight {
		go func() {
			_, err := c.Forward(context.Background(), group.Leader{ID: "m1"}, fmt.Appendf(nil, "slot%d", i))
			if results != nil {
				results <- err
			}
		}()
		deadline := time.Now().Add(10 * time.Second)
		for len(f.snapshot()) < i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("call %d not made", i+1)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func TestCoalescer_LoneBatchGoesAtOnceWithItsOutcome(t *testing.T) {
	f := &fakeLeader{}
	c, _ := startCoalescer(t, f)
	out, err := c.Forward(context.Background(), group.Leader{ID: "m1"}, []byte("abc"))
	if err != nil || out.Index != 3 {
		t.Fatalf("Forward = %+v, %v; want index 3", out, err)
	}
	if _, err := c.Forward(context.Background(), group.Leader{ID: "m1"}, []byte("bad")); !errors.Is(err, group.ErrInvalidBatch) {
		t.Fatalf("per-batch error: %v, want ErrInvalidBatch", err)
	}
	if calls := f.snapshot(); len(calls) != 2 || len(calls[0]) != 1 {
		t.Fatalf("calls %v, want two of one batch", calls)
	}
}

// While every slot of a leader is busy, its batches queue; the next free
// slot sends them all in one call, each caller getting its own outcome.
// Another leader's batch goes at once, in a call of its own.
func TestCoalescer_MergesWhatQueuedWhileCallsWereInFlight(t *testing.T) {
	f := &fakeLeader{hold: make(chan struct{})}
	c, _ := startCoalescer(t, f)
	type res struct {
		batch string
		idx   uint64
		err   error
	}
	results := make(chan res, 64)
	forward := func(leader, batch string) {
		out, err := c.Forward(context.Background(), group.Leader{ID: leader}, []byte(batch))
		results <- res{batch, out.Index, err}
	}
	slotErrs := make(chan error, coalesceInFlight)
	fillSlots(t, c, f, slotErrs)
	var want []string
	for i := range 10 {
		b := fmt.Sprintf("q%02d", i) + string(make([]byte, i)) // distinct lengths → distinct indexes
		want = append(want, "m1:"+b)
		go forward("m1", b)
	}
	waitQueued(t, c, 10)
	go forward("m2", "other") // m2's slots are free: it goes at once
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(f.snapshot(), func(call []string) bool { return slices.Contains(call, "m2:other") }) {
		if time.Now().After(deadline) {
			t.Fatal("m2's batch waited for m1's slots")
		}
		time.Sleep(time.Millisecond)
	}
	close(f.hold)

	for range coalesceInFlight {
		if err := <-slotErrs; err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]uint64{}
	for range 11 {
		r := <-results
		if r.err != nil {
			t.Fatalf("batch %q: %v", r.batch, r.err)
		}
		got[r.batch] = r.idx
	}
	for b, idx := range got {
		if idx != uint64(len(b)) {
			t.Errorf("batch %q got index %d, want %d (someone else's outcome)", b, idx, len(b))
		}
	}
	calls := f.snapshot()
	var merged, other []string
	for _, call := range calls[coalesceInFlight:] {
		if len(call) == 10 {
			merged = call
		}
		if slices.Contains(call, "m2:other") {
			other = call
		}
	}
	slices.Sort(merged)
	if !slices.Equal(merged, want) {
		t.Fatalf("calls after the slots freed: %v; want one call of the 10 queued m1 batches", calls[coalesceInFlight:])
	}
	if len(other) != 1 {
		t.Fatalf("m2's batch went in %v, want a call of its own", other)
	}
}

// Calls hung on one leader (a partitioned old leader, until the call
// timeout) hold back neither the new leader's batches nor their caller.
func TestCoalescer_HungLeaderDoesNotHoldBackAnother(t *testing.T) {
	f := &fakeLeader{hold: make(chan struct{}), holdOnly: "m1"}
	c, _ := startCoalescer(t, f)
	fillSlots(t, c, f, nil)
	go func() { _, _ = c.Forward(context.Background(), group.Leader{ID: "m1"}, []byte("stuck")) }()
	waitQueued(t, c, 1)
	out, err := c.Forward(testkit.Ctx(t), group.Leader{ID: "m2"}, []byte("abcd"))
	if err != nil || out.Index != 4 {
		t.Fatalf("forward to m2 while m1's calls hang: %+v, %v", out, err)
	}
	close(f.hold)
}

// A call's body, the entry envelope of its batches, stays within the
// leader's body limit, length prefixes included: 1,024 batches of 1,023
// bytes fit as raw bytes but not as an envelope.
func TestCoalescer_CallBodyStaysWithinTheLeadersLimit(t *testing.T) {
	c, err := newCoalescer(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range coalesceMaxBatches + 10 {
		c.queue = append(c.queue, &forwardItem{ctx: context.Background(), leader: group.Leader{ID: "m1"}, batch: make([]byte, 1023)})
	}
	for total := 0; len(c.queue) > 0; {
		items := c.take()
		if items == nil {
			t.Fatalf("%d items left and none taken", len(c.queue))
		}
		batches := make([][]byte, len(items))
		for i, it := range items {
			batches[i] = it.batch
		}
		if n := group.EncodedEntryLen(batches); n > group.MaxEntryBytes || len(items) > coalesceMaxBatches {
			t.Fatalf("a call of %d batches, %d bytes: over %d batches or %d bytes", len(items), n, coalesceMaxBatches, group.MaxEntryBytes)
		}
		if _, err := group.DecodeEntry(group.AppendEntry(nil, batches)); err != nil {
			t.Fatalf("the leader refuses the call's body: %v", err)
		}
		c.inFlight = map[group.Leader]int{} // the call ended
		if total += len(items); total > coalesceMaxBatches+10 {
			t.Fatal("items taken twice")
		}
	}
}

func TestCoalescer_CallErrorReachesEveryBatchOfTheCall(t *testing.T) {
	boom := errors.New("connection refused")
	f := &fakeLeader{fail: boom}
	c, _ := startCoalescer(t, f)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if _, err := c.Forward(context.Background(), group.Leader{ID: "m1"}, fmt.Appendf(nil, "b%d", i)); !errors.Is(err, boom) {
				t.Errorf("batch %d: %v, want the call's error", i, err)
			}
		})
	}
	wg.Wait()
}

func TestCoalescer_GivenUpBatchesAreNotSent(t *testing.T) {
	f := &fakeLeader{hold: make(chan struct{})}
	c, _ := startCoalescer(t, f)
	fillSlots(t, c, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { _, err := c.Forward(ctx, group.Leader{ID: "m1"}, []byte("gone")); errc <- err }()
	waitQueued(t, c, 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("given-up Forward: %v, want context.Canceled", err)
	}
	live := make(chan error, 1)
	go func() { _, err := c.Forward(context.Background(), group.Leader{ID: "m1"}, []byte("live")); live <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for queued := false; !queued; {
		c.mu.Lock()
		queued = slices.ContainsFunc(c.queue, func(it *forwardItem) bool { return string(it.batch) == "live" })
		c.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("live batch not queued")
		}
		time.Sleep(time.Millisecond)
	}
	close(f.hold)
	if err := <-live; err != nil {
		t.Fatal(err)
	}
	for _, call := range f.snapshot() {
		if slices.Contains(call, "m1:gone") {
			t.Fatalf("a given-up batch was sent: %v", call)
		}
	}
}

func TestCoalescer_StopFailsQueuedAndLaterForwards(t *testing.T) {
	f := &fakeLeader{hold: make(chan struct{})}
	c, cancel := startCoalescer(t, f)
	errs := make(chan error, coalesceInFlight+1)
	fillSlots(t, c, f, errs)
	go func() {
		_, err := c.Forward(context.Background(), group.Leader{ID: "m1"}, []byte("queued"))
		errs <- err
	}()
	waitQueued(t, c, 1)
	cancel()
	for range coalesceInFlight + 1 {
		if err := <-errs; err == nil {
			t.Fatal("a forward succeeded after stop")
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.Forward(context.Background(), group.Leader{ID: "m1"}, []byte("late"))
		if errors.Is(err, group.ErrClosed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Forward after stop: %v, want ErrClosed", err)
		}
	}
}
