package lifecycle

import (
	"reflect"
	"testing"

	"github.com/strata-ledger/strata/fsm"
)

// newTestForwarder is a forwarder with its bookkeeping only (no node).
func newTestForwarder() *forwarder {
	return &forwarder{queued: map[string]int{}, readPos: map[string]uint64{}, marked: map[string]uint64{}}
}

func (f *forwarder) enqueue(tenant string, seq uint64) {
	f.queue = append(f.queue, queued{tenant: tenant, seq: seq})
	f.queued[tenant]++
	f.readPos[tenant] = seq
}

func TestForwarder_PositionsStopBeforeEachTenantsFirstQueuedEvent(t *testing.T) {
	f := newTestForwarder()
	f.readPos["idle"] = 40 // read past events that are not forwarded
	f.marked["idle"] = 10
	f.marked["done"] = 7
	f.readPos["done"] = 7 // nothing new: no mark
	f.enqueue("acme", 5)
	f.enqueue("globex", 3)
	f.enqueue("acme", 9)
	f.readPos["acme"] = 12
	want := []fsm.ForwardPosition{{Tenant: "acme", Seq: 4}, {Tenant: "globex", Seq: 2}, {Tenant: "idle", Seq: 40}}
	if got := f.positions(); !reflect.DeepEqual(got, want) {
		t.Fatalf("positions %v, want %v", got, want)
	}
	// Deliver the first two: acme's next queued event is seq 9, globex
	// has none left so its read position counts.
	f.sent(2)
	want = []fsm.ForwardPosition{{Tenant: "acme", Seq: 8}, {Tenant: "globex", Seq: 3}, {Tenant: "idle", Seq: 40}}
	if got := f.positions(); !reflect.DeepEqual(got, want) {
		t.Fatalf("after delivery: positions %v, want %v", got, want)
	}
	if len(f.queue) != 1 || f.queued["acme"] != 1 || f.queued["globex"] != 0 {
		t.Fatalf("queue %v, counts %v", f.queue, f.queued)
	}
	f.sent(1)
	want = []fsm.ForwardPosition{{Tenant: "acme", Seq: 12}, {Tenant: "globex", Seq: 3}, {Tenant: "idle", Seq: 40}}
	if got := f.positions(); !reflect.DeepEqual(got, want) {
		t.Fatalf("queue empty: positions %v, want %v", got, want)
	}
}

// BenchmarkForwarderReplay drains a full queue (forwarderQueueLimit events
// over 3 tenants) batch by batch, recomputing positions after each batch
// as the forwarder does after a delivery: "reslice" is the forwarder's
// way, "copy+scan" the obvious one it replaced (copy the rest of the queue
// after each batch, scan all of it for positions).
func BenchmarkForwarderReplay(b *testing.B) {
	fill := func() *forwarder {
		f := newTestForwarder()
		for i := range forwarderQueueLimit {
			f.enqueue([]string{"a", "b", "c"}[i%3], uint64(i/3+1))
		}
		return f
	}
	b.Run("reslice", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			f := fill()
			b.StartTimer()
			for len(f.queue) > 0 {
				f.sent(min(forwardBatchEvents, len(f.queue)))
				_ = f.positions()
			}
		}
	})
	b.Run("copy+scan", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			f := fill()
			b.StartTimer()
			for len(f.queue) > 0 {
				n := min(forwardBatchEvents, len(f.queue))
				f.queue = append(f.queue[:0:0], f.queue[n:]...)
				pos := map[string]uint64{}
				for _, q := range f.queue {
					if p, ok := pos[q.tenant]; !ok || q.seq-1 < p {
						pos[q.tenant] = q.seq - 1
					}
				}
			}
		}
	})
}
