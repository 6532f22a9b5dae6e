package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-ledger/strata/wal"
)

// noLeaderCommitter fails with "no leader" until up is set (fault
// injection standing in for an election), then commits at index 7.
type noLeaderCommitter struct {
	up    atomic.Bool
	calls atomic.Int64
}

func (c *noLeaderCommitter) Propose(ctx context.Context, batch []byte) (Proposal, error) {
	c.calls.Add(1)
	if !c.up.Load() {
		return Proposal{}, &NotLeaderError{Err: ErrNotLeader}
	}
	return Proposal{Index: 7}, nil
}

// A record waiting out a retry backoff (here an hour long) is retried at
// once when the node sees a new leader.
func TestPipeline_LeaderChangeEndsTheRetryBackoff(t *testing.T) {
	w, err := wal.Open(wal.Config{Dir: t.TempDir(), SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := &noLeaderCommitter{}
	p, err := NewPipeline(PipelineConfig{Tier: DurabilityRegional, WAL: w, Committer: c,
		RetryFirst: time.Hour, RetryMax: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	events, _ := jobEvents(0, 1)
	done := make(chan error, 1)
	go func() {
		res, err := p.Submit(testCtx(t), events, DurabilityRegional)
		if err == nil && res.Index != 7 {
			err = context.DeadlineExceeded
		}
		done <- err
	}()
	deadline := time.Now().Add(pipelineWait)
	for c.calls.Load() == 0 { // the first attempt failed: now in backoff
		if time.Now().After(deadline) {
			t.Fatal("no attempt made")
		}
		time.Sleep(time.Millisecond)
	}
	c.up.Store(true)
	p.LeaderChanged()
	if err := <-done; err != nil {
		t.Fatalf("submit after the leader change: %v", err)
	}
	if n := c.calls.Load(); n != 2 {
		t.Fatalf("%d attempts, want 2 (one failed, one after the change)", n)
	}
}
