package lifecycle

import (
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
)

func TestChunkEvents_SplitsByCountAndBytesInOrder(t *testing.T) {
	events := make([]fsm.Event, 2*maxPlannedPerBatch+3)
	for i := range events {
		events[i] = testkit.JobEvent(i + 1)
	}
	chunks, err := chunkEvents(events)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range chunks {
		if len(c) == 0 || len(c) > maxPlannedPerBatch {
			t.Fatalf("chunk of %d events", len(c))
		}
		b, err := fsm.EncodeBatch(c)
		if err != nil || len(b) > maxPlannedBatchBytes+64 {
			t.Fatalf("chunk encodes to %d bytes (limit ≈ %d): %v", len(b), maxPlannedBatchBytes, err)
		}
		for _, e := range c {
			if e.ID != events[n].ID {
				t.Fatalf("event %d out of order", n)
			}
			n++
		}
	}
	if n != len(events) || len(chunks) != 3 {
		t.Fatalf("%d events in %d chunks, want %d in 3", n, len(chunks), len(events))
	}
}
