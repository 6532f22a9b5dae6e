package group

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
)

// newTestFSM returns a ledger FSM over store (a fresh memstore if nil).
func newTestFSM(t *testing.T, store fsm.Store) (*FSM, *prometheus.Registry) {
	t.Helper()
	if store == nil {
		store = memstore.New()
	}
	led, err := fsm.New(fsm.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	f, err := NewFSM(FSMConfig{Ledger: led, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return f, reg
}

func command(index uint64, batches ...[]byte) *raft.Log {
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: AppendEntry(nil, batches)}
}

func entryResult(t *testing.T, resp any) *entryResponse {
	t.Helper()
	r, ok := resp.(*entryResponse)
	if !ok {
		t.Fatalf("response %T, want *entryResponse", resp)
	}
	return r
}

func TestFSMAdapter_EntryOfManyBatchesIsOneTransactionWithResultsPerBatch(t *testing.T) {
	f, reg := newTestFSM(t, nil)
	a, b, c := testkit.JobEvent(1), testkit.JobEvent(2), testkit.JobEvent(3)
	logs := []*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogConfiguration},
		command(2, testkit.MustBatch(t, a, b), testkit.MustBatch(t, a), []byte{fsm.BatchVersion, 1, 0xff}, testkit.MustBatch(t, c)),
	}
	out := f.ApplyBatch(logs)
	if len(out) != 2 || out[0] != nil {
		t.Fatalf("responses %v, want nil for the configuration entry", out)
	}
	resp := entryResult(t, out[1])
	if resp.err != nil || len(resp.batches) != 4 {
		t.Fatalf("response %+v, want 4 batch results", resp)
	}
	testkit.WantOutcomes(t, resp.batches[0], fsm.OutcomeApplied, fsm.OutcomeApplied)
	testkit.WantOutcomes(t, resp.batches[1], fsm.OutcomeDuplicate)
	testkit.WantOutcomes(t, resp.batches[2], fsm.OutcomeRejected)
	testkit.WantOutcomes(t, resp.batches[3], fsm.OutcomeApplied)
	if got := f.ledger.AppliedIndex(); got != 2 {
		t.Fatalf("applied index %d, want 2", got)
	}
	if n := testkit.MetricValue(t, reg, "strata_raft_applied_entries_total"); n != 1 {
		t.Fatalf("applied entries %v, want 1", n)
	}
	if n := testkit.MetricValue(t, reg, "strata_raft_applied_events_total", "outcome", "duplicate"); n != 1 {
		t.Fatalf("duplicate events %v, want 1", n)
	}

	// Raft replays an entry at or below the applied index: skipped whole.
	digest, _, _ := f.ledger.Digest()
	replay := entryResult(t, f.Apply(command(2, testkit.MustBatch(t, testkit.JobEvent(4)), testkit.MustBatch(t, a))))
	if replay.err == nil {
		t.Fatal("replayed index applied again")
	}
	if d, _, _ := f.ledger.Digest(); d != digest {
		t.Fatal("replayed entry changed the ledger")
	}
}

func TestFSMAdapter_SingleBatchEntryGetsOneResultPerEvent(t *testing.T) {
	f, _ := newTestFSM(t, nil)
	resp := entryResult(t, f.Apply(command(7, testkit.MustBatch(t, testkit.JobEvent(1), testkit.JobEvent(2), testkit.JobEvent(1)))))
	if resp.err != nil || len(resp.batches) != 1 {
		t.Fatalf("response %+v", resp)
	}
	testkit.WantOutcomes(t, resp.batches[0], fsm.OutcomeApplied, fsm.OutcomeApplied, fsm.OutcomeDuplicate)
	if got := f.ledger.AppliedIndex(); got != 7 {
		t.Fatalf("applied index %d, want 7", got)
	}
}

func TestFSMAdapter_MalformedEntryIsRejectedWholeAndItsIndexRecorded(t *testing.T) {
	f, _ := newTestFSM(t, nil)
	good := testkit.MustBatch(t, testkit.JobEvent(1))
	tests := []struct {
		name string
		data []byte
	}{
		{name: "empty", data: nil},
		{name: "unknown version", data: append([]byte{9, 1, byte(len(good))}, good...)},
		{name: "trailing byte", data: append(AppendEntry(nil, [][]byte{good}), 0)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			index := uint64(10 + i)
			resp := entryResult(t, f.Apply(&raft.Log{Index: index, Type: raft.LogCommand, Data: tt.data}))
			if !errors.Is(resp.err, ErrBadEntry) {
				t.Fatalf("err %v, want ErrBadEntry", resp.err)
			}
			if got := f.ledger.AppliedIndex(); got != index {
				t.Fatalf("applied index %d, want %d", got, index)
			}
		})
	}
	if _, err := f.ledger.Job("acme", testkit.JobID(1)); err == nil {
		t.Fatal("an event of a rejected entry was applied")
	}
}

func TestFSMAdapter_SnapshotRestoresAnEqualLedger(t *testing.T) {
	src, _ := newTestFSM(t, nil)
	var events []fsm.Event
	for i := range 20 {
		events = append(events, testkit.JobEvent(i))
	}
	src.Apply(command(5, testkit.MustBatch(t, events[:10]...), testkit.MustBatch(t, events[10:]...)))

	snaps := raft.NewInmemSnapshotStore()
	sink, err := snaps.Create(raft.SnapshotVersionMax, 5, 1, raft.Configuration{}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	snap.Release()
	_, rc, err := snaps.Open(sink.ID())
	if err != nil {
		t.Fatal(err)
	}
	dst, reg := newTestFSM(t, nil)
	if err := dst.Restore(rc); err != nil {
		t.Fatal(err)
	}
	want, wantIndex, _ := src.ledger.Digest()
	got, gotIndex, _ := dst.ledger.Digest()
	if got != want || gotIndex != wantIndex || gotIndex != 5 {
		t.Fatalf("restored digest %s at %d, want %s at %d", got, gotIndex, want, wantIndex)
	}
	if n := testkit.MetricValue(t, reg, "strata_raft_snapshot_restores_total"); n != 1 {
		t.Fatalf("restores %v, want 1", n)
	}
	if err := dst.Restore(io.NopCloser(bytes.NewReader([]byte("garbage")))); err == nil {
		t.Fatal("restore of garbage succeeded")
	}
	if got, _, _ := dst.ledger.Digest(); got != want {
		t.Fatal("failed restore changed the ledger")
	}
}

// failingSink is a SnapshotSink whose writes fail: a fault-injection fake.
type failingSink struct {
	canceled, closed bool
}

func (s *failingSink) Write([]byte) (int, error) { return 0, errors.New("disk full") }
func (s *failingSink) Close() error              { s.closed = true; return nil }
func (s *failingSink) ID() string                { return "failing" }
func (s *failingSink) Cancel() error             { s.canceled = true; return nil }

func TestFSMAdapter_PersistCancelsTheSinkOnError(t *testing.T) {
	f, _ := newTestFSM(t, nil)
	f.Apply(command(1, testkit.MustBatch(t, testkit.JobEvent(1))))
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &failingSink{}
	if err := snap.Persist(sink); err == nil {
		t.Fatal("persist into a failing sink succeeded")
	}
	if !sink.canceled || sink.closed {
		t.Fatalf("sink canceled %v, closed %v; want canceled only", sink.canceled, sink.closed)
	}
}

func TestFSMAdapter_StoreFailureStopsApplyingAndSnapshots(t *testing.T) {
	store := fsmtest.NewFaultyStore(memstore.New())
	f, reg := newTestFSM(t, store)
	var fatal []error
	f.onFatal = func(err error) { fatal = append(fatal, err) }

	f.Apply(command(1, testkit.MustBatch(t, testkit.JobEvent(1))))
	store.FailAfter(0)
	resp := entryResult(t, f.Apply(command(2, testkit.MustBatch(t, testkit.JobEvent(2)))))
	if !errors.Is(resp.err, ErrFSMFailed) {
		t.Fatalf("apply on a failing store: %v, want ErrFSMFailed", resp.err)
	}
	store.Heal()
	resp = entryResult(t, f.Apply(command(3, testkit.MustBatch(t, testkit.JobEvent(3)))))
	if !errors.Is(resp.err, ErrFSMFailed) || f.ledger.AppliedIndex() != 1 {
		t.Fatalf("apply after the failure: %v at applied %d; want ErrFSMFailed, nothing applied", resp.err, f.ledger.AppliedIndex())
	}
	if _, err := f.Snapshot(); !errors.Is(err, ErrFSMFailed) {
		t.Fatalf("snapshot after the failure: %v, want ErrFSMFailed", err)
	}
	if len(fatal) != 1 || testkit.MetricValue(t, reg, "strata_raft_fsm_failed") != 1 {
		t.Fatalf("OnFatal called %d times, want once, and the failed gauge set", len(fatal))
	}
}
