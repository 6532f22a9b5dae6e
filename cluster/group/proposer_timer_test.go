package group

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
)

// The Proposer over a real hashicorp/raft in a testing/synctest bubble:
// one voter, in-memory stores and transport, so every goroutine of Raft
// blocks on channels and timers of the bubble, and its elections and
// timeouts run on virtual time. The group's own Open uses raft-boltdb and
// TCP, which a bubble cannot run; the Raft settings that matter here
// (BatchApplyCh, MaxAppendEntries, timings) are the group's.

// stallingLogStore is Raft's log store whose StoreLogs blocks while
// stalled, until released: a leader whose log disk hangs. The leader
// loop writes its own log inline, so while it is stuck it takes nothing
// more from raft.Apply.
type stallingLogStore struct {
	*raft.InmemStore
	mu      sync.Mutex
	stalled chan struct{} // nil: not stalled; closed by release
}

func (s *stallingLogStore) stall() {
	s.mu.Lock()
	s.stalled = make(chan struct{})
	s.mu.Unlock()
}

func (s *stallingLogStore) release() {
	s.mu.Lock()
	if s.stalled != nil {
		close(s.stalled)
		s.stalled = nil
	}
	s.mu.Unlock()
}

func (s *stallingLogStore) StoreLogs(logs []*raft.Log) error {
	s.mu.Lock()
	stalled := s.stalled
	s.mu.Unlock()
	if stalled != nil {
		<-stalled
	}
	return s.InmemStore.StoreLogs(logs)
}

func (s *stallingLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// appliedFSM answers every batch of a command entry as applied, one
// result per event: the responses the Proposer expects from the FSM.
type appliedFSM struct{}

func (appliedFSM) Apply(l *raft.Log) any {
	batches, err := DecodeEntry(l.Data)
	if err != nil {
		return &entryResponse{err: err}
	}
	resp := &entryResponse{batches: make([][]fsm.Result, len(batches))}
	for i, b := range batches {
		n, err := batchEventCount(b)
		if err != nil {
			return &entryResponse{err: err}
		}
		resp.batches[i] = make([]fsm.Result, n)
		for j := range resp.batches[i] {
			resp.batches[i][j].Outcome = fsm.OutcomeApplied
		}
	}
	return resp
}

func (appliedFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("no snapshots") }
func (appliedFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

// bubbleLeader starts a one-voter Raft with the group's settings and a
// Proposer over it, and waits until it leads. Call the returned stop
// inside the bubble: it releases the log, closes the Proposer and shuts
// Raft down.
func bubbleLeader(t *testing.T, cfg ProposerConfig) (*Proposer, *raft.Raft, *stallingLogStore, func()) {
	t.Helper()
	rc := raft.DefaultConfig()
	rc.LocalID = "n1"
	rc.Logger = hclog.NewNullLogger()
	rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout, rc.CommitTimeout = raftTimings(Regional)
	rc.MaxAppendEntries = raftMaxAppendEntries
	rc.BatchApplyCh = true
	logs := &stallingLogStore{InmemStore: raft.NewInmemStore()}
	stable, snaps := raft.NewInmemStore(), raft.NewDiscardSnapshotStore()
	addr, trans := raft.NewInmemTransport("n1")
	boot := raft.Configuration{Servers: []raft.Server{{ID: rc.LocalID, Address: addr}}}
	if err := raft.BootstrapCluster(rc, logs, stable, snaps, trans, boot); err != nil {
		t.Fatal(err)
	}
	r, err := raft.NewRaft(rc, appliedFSM{}, logs, stable, snaps, trans)
	if err != nil {
		t.Fatal(err)
	}
	for leads := false; !leads; {
		select {
		case leads = <-r.LeaderCh():
		case <-time.After(time.Minute): // virtual
			t.Fatal("no leader after a minute")
		}
	}
	p, err := NewProposer(r, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, r, logs, func() {
		logs.release()
		p.Close()
		if err := r.Shutdown().Error(); err != nil {
			t.Errorf("raft shutdown: %v", err)
		}
		trans.Close()
	}
}

// propose runs p.Propose in a goroutine; its outcome arrives on the
// returned channel.
func propose(ctx context.Context, p *Proposer, batch []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := p.Propose(ctx, batch)
		done <- err
	}()
	return done
}

// Propose never waits for room in the queue: while the entries in flight
// are stuck (the leader's log hangs) and the queue is full, it fails at
// once with ErrBackpressure; what was queued commits once the log moves.
func TestProposer_ProposeIntoAFullQueueFailsAtOnceWhileRaftIsStuck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewRegistry()
		p, _, logs, stop := bubbleLeader(t, ProposerConfig{MaxInFlight: 1, QueueBatches: 2, EnqueueTimeout: time.Hour, Registerer: reg})
		defer stop()
		ctx := t.Context()
		batch := testkit.MustBatch(t, testkit.JobEvent(1))

		logs.stall()
		inFlight := propose(ctx, p, batch) // handed to Raft, stuck in its log write
		synctest.Wait()
		queued := []<-chan error{propose(ctx, p, batch), propose(ctx, p, batch)} // wait for the one slot
		synctest.Wait()
		p.mu.Lock()
		got := len(p.queue)
		p.mu.Unlock()
		if got != 2 {
			t.Fatalf("%d batches queued, want 2", got)
		}

		start := time.Now()
		if _, err := p.Propose(ctx, batch); !errors.Is(err, ErrBackpressure) {
			t.Fatalf("propose into a full queue: %v, want ErrBackpressure", err)
		}
		if waited := time.Since(start); waited != 0 {
			t.Fatalf("refusal took %s, want none", waited)
		}
		if n := testkit.MetricValue(t, reg, "strata_pipeline_proposer_rejected_total", "reason", "backpressure"); n != 1 {
			t.Errorf("backpressure rejections %v, want 1", n)
		}

		logs.release()
		for i, done := range append([]<-chan error{inFlight}, queued...) {
			if err := <-done; err != nil {
				t.Errorf("proposal %d after the log moved: %v", i, err)
			}
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("queued proposals committed %s after the log moved", took)
		}
	})
}

// raft.Apply waits at most EnqueueTimeout to hand an entry to the leader
// loop: while that loop is stuck (its log hangs) and Raft's apply channel
// (MaxAppendEntries deep) is full, a proposal fails after exactly
// EnqueueTimeout with raft.ErrEnqueueTimeout instead of hanging, and
// the proposer keeps working once Raft does.
func TestProposer_EntryRaftDoesNotTakeWithinEnqueueTimeoutFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const enqueueTimeout = 500 * time.Millisecond
		p, r, logs, stop := bubbleLeader(t, ProposerConfig{EnqueueTimeout: enqueueTimeout})
		defer stop()
		ctx := t.Context()
		batch := testkit.MustBatch(t, testkit.JobEvent(1))
		if err := <-propose(ctx, p, batch); err != nil {
			t.Fatalf("propose to a healthy leader: %v", err)
		}

		// Stall the leader loop in a log write for an entry that is not
		// the proposer's (a barrier), then fill the apply channel behind it.
		logs.stall()
		var barriers sync.WaitGroup
		barriers.Go(func() { r.Barrier(0).Error() })
		synctest.Wait()
		for range raftMaxAppendEntries {
			barriers.Go(func() { r.Barrier(0).Error() })
		}
		synctest.Wait()

		start := time.Now()
		_, err := p.Propose(ctx, batch)
		if !errors.Is(err, raft.ErrEnqueueTimeout) {
			t.Fatalf("propose while Raft takes nothing: %v, want raft.ErrEnqueueTimeout", err)
		}
		if waited := time.Since(start); waited != enqueueTimeout {
			t.Fatalf("failed after %s, want EnqueueTimeout (%s)", waited, enqueueTimeout)
		}

		logs.release()
		barriers.Wait()
		if err := <-propose(ctx, p, batch); err != nil {
			t.Fatalf("propose after the log moved: %v", err)
		}
	})
}

// EnqueueTimeout does not bound an entry Raft has taken: with the group's
// settings the apply channel holds MaxAppendEntries entries, more than
// the Proposer keeps in flight, so while the leader's log hangs its
// entries wait in that channel. The caller's ctx bounds the wait; the
// entry commits once the log moves.
func TestProposer_EntryTakenByAStuckRaftEndsWithTheCallersContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const enqueueTimeout, callerTimeout = 500 * time.Millisecond, 2 * time.Second
		p, _, logs, stop := bubbleLeader(t, ProposerConfig{EnqueueTimeout: enqueueTimeout})
		defer stop()
		batch := testkit.MustBatch(t, testkit.JobEvent(1))

		logs.stall()
		ctx, cancel := context.WithTimeout(t.Context(), callerTimeout)
		defer cancel()
		start := time.Now()
		_, err := p.Propose(ctx, batch)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("propose while the log hangs: %v, want the caller's deadline", err)
		}
		if waited := time.Since(start); waited != callerTimeout {
			t.Fatalf("failed after %s, want the caller's timeout (%s)", waited, callerTimeout)
		}

		logs.release()
		out, err := p.Propose(t.Context(), batch)
		if err != nil {
			t.Fatalf("propose after the log moved: %v", err)
		}
		if out.Index < 4 { // bootstrap configuration, no-op, the stuck entry
			t.Fatalf("index %d: the stuck entry did not commit before this one", out.Index)
		}
	})
}
