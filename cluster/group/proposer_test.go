package group

import (
	"errors"
	"strings"
	"testing"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
)

// newIdleProposer returns a proposer whose loops are not running, to test
// its queue and entry packing alone.
func newIdleProposer(t *testing.T, cfg ProposerConfig) *Proposer {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m, err := newProposerMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Proposer{cfg: cfg, m: m, wake: make(chan struct{}, 1)}
}

func queueN(t *testing.T, p *Proposer, n int, batch []byte) {
	t.Helper()
	events, err := batchEventCount(batch)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := p.enqueue(&proposal{batch: batch, events: events, done: make(chan struct{})})[0]; err != nil {
			t.Fatal(err)
		}
	}
}

// A coalesced forward's batches are queued together, each admitted while
// there is room and refused alone after (what ProposeMany relies on).
func TestProposer_EnqueueManyAdmitsWhatFits(t *testing.T) {
	p := newIdleProposer(t, ProposerConfig{QueueBatches: 3})
	batch := testkit.MustBatch(t, testkit.JobEvent(1))
	queueN(t, p, 2, batch)
	prs := make([]*proposal, 3)
	for i := range prs {
		prs[i] = &proposal{batch: batch, events: 1, done: make(chan struct{})}
	}
	errs := p.enqueue(prs...)
	if errs[0] != nil || !errors.Is(errs[1], ErrBackpressure) || !errors.Is(errs[2], ErrBackpressure) {
		t.Fatalf("errors %v: want the first admitted, the others refused", errs)
	}
	if got := len(p.queue); got != 3 {
		t.Fatalf("%d queued, want 3", got)
	}
}

func TestProposer_FullQueueFailsAtOnceWithBackpressure(t *testing.T) {
	p := newIdleProposer(t, ProposerConfig{QueueBatches: 3})
	batch := testkit.MustBatch(t, testkit.JobEvent(1))
	queueN(t, p, 3, batch)
	err := p.enqueue(&proposal{batch: batch, events: 1, done: make(chan struct{})})[0]
	if !errors.Is(err, ErrBackpressure) {
		t.Fatalf("enqueue into a full queue: %v, want ErrBackpressure", err)
	}
	if p.take() == nil {
		t.Fatal("nothing taken")
	}
	queueN(t, p, 1, batch) // room again
}

func TestProposer_EntriesRespectTheirLimits(t *testing.T) {
	small := testkit.MustBatch(t, testkit.JobEvent(1))
	var many []fsm.Event
	for i := range 3000 {
		many = append(many, fsm.Event{ID: testkit.JobEvent(i).ID, Type: fsm.TypeWorkerJoined, Node: "n1", HLC: testkit.JobEvent(i).HLC,
			Body: &fsm.WorkerJoined{Worker: "w", Capacity: 1}})
	}
	thousands := testkit.MustBatch(t, many...)
	tests := []struct {
		name   string
		cfg    ProposerConfig
		batch  []byte
		queued int
		want   []int // batches per entry, in order
	}{
		{name: "all fit in one entry", batch: small, queued: 50, want: []int{50}},
		{name: "batch limit", cfg: ProposerConfig{MaxEntryBatches: 16}, batch: small, queued: 40, want: []int{16, 16, 8}},
		{name: "no batching", cfg: ProposerConfig{MaxEntryBatches: 1}, batch: small, queued: 3, want: []int{1, 1, 1}},
		{name: "event limit", batch: thousands, queued: 7, want: []int{3, 3, 1}},
		{name: "byte limit", batch: bytes400K(t), queued: 5, want: []int{2, 2, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newIdleProposer(t, tt.cfg)
			queueN(t, p, tt.queued, tt.batch)
			var got []int
			for props := p.take(); props != nil; props = p.take() {
				batches := make([][]byte, len(props))
				for i, pr := range props {
					batches[i] = pr.batch
				}
				if n := EncodedEntryLen(batches); n > p.cfg.MaxEntryBytes {
					t.Fatalf("entry of %d bytes, limit %d", n, p.cfg.MaxEntryBytes)
				}
				got = append(got, len(props))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("entries %v, want %v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("entries %v, want %v", got, tt.want)
				}
			}
		})
	}
}

// bytes400K returns a batch of about 430 KiB: two fit in an entry, three
// do not.
func bytes400K(t *testing.T) []byte {
	t.Helper()
	evs := make([]fsm.Event, 384)
	for i := range evs {
		evs[i] = testkit.JobEvent(i)
		evs[i].Body.(*fsm.JobCreated).Spec.IdempotencyKey = strings.Repeat("k", 1000)
	}
	b := testkit.MustBatch(t, evs...)
	if len(b) <= MaxEntryBytes/3 || len(b) >= MaxEntryBytes/2 {
		t.Fatalf("batch of %d bytes", len(b))
	}
	return b
}
