package commit

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/wal"
)

// noLeaderCommitter fails with "no leader" until up is set (fault
// injection standing in for an election), then commits at index 7.
type noLeaderCommitter struct {
	up    atomic.Bool
	calls atomic.Int64
}

func (c *noLeaderCommitter) Propose(ctx context.Context, batch []byte) (group.Proposal, error) {
	c.calls.Add(1)
	if !c.up.Load() {
		return group.Proposal{}, &group.NotLeaderError{Err: group.ErrNotLeader}
	}
	return group.Proposal{Index: 7}, nil
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
	events, _ := testkit.JobEvents(0, 1)
	done := make(chan error, 1)
	go func() {
		res, err := p.Submit(testkit.Ctx(t), events, DurabilityRegional)
		if err == nil && res.Index != 7 {
			err = context.DeadlineExceeded
		}
		done <- err
	}()
	deadline := time.Now().Add(testkit.Wait)
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

// failingSyncFS is the real file system whose files' fsyncs fail once
// broken is set (fault injection for the NodeWAL).
type failingSyncFS struct {
	wal.OSFS
	broken *atomic.Bool
}

type failingSyncFile struct {
	wal.File
	broken *atomic.Bool
}

func (f failingSyncFS) Create(path string) (wal.File, error) {
	file, err := f.OSFS.Create(path)
	return failingSyncFile{file, f.broken}, err
}

func (f failingSyncFS) OpenRW(path string) (wal.File, error) {
	file, err := f.OSFS.OpenRW(path)
	return failingSyncFile{file, f.broken}, err
}

func (f failingSyncFile) Sync() error {
	if f.broken.Load() {
		return errors.New("injected fsync failure")
	}
	return f.File.Sync()
}

// A NodeWAL that stops after an I/O error stops the node: the pipeline
// calls OnFatal once, however many records fail.
func TestPipeline_StoppedNodeWALIsFatal(t *testing.T) {
	var broken atomic.Bool
	w, err := wal.Open(wal.Config{Dir: t.TempDir(), SegmentBytes: 1 << 20, FS: failingSyncFS{broken: &broken}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c := &noLeaderCommitter{}
	c.up.Store(true)
	fatal := make(chan error, 4)
	p, err := NewPipeline(PipelineConfig{Tier: DurabilityRegional, WAL: w, Committer: c,
		OnFatal: func(err error) { fatal <- err }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	events, _ := testkit.JobEvents(0, 1)
	if _, err := p.Submit(testkit.Ctx(t), events, DurabilityLocal); err != nil {
		t.Fatal(err)
	}
	broken.Store(true)
	for range 3 {
		more, _ := testkit.JobEvents(1, 1)
		if _, err := p.Submit(testkit.Ctx(t), more, DurabilityLocal); err == nil {
			t.Fatal("LOCAL ack after the NodeWAL's fsync failed")
		}
	}
	select {
	case err := <-fatal:
		if !errors.Is(err, wal.ErrStopped) {
			t.Fatalf("OnFatal(%v), want wal.ErrStopped", err)
		}
	case <-testkit.Ctx(t).Done():
		t.Fatal("OnFatal not called")
	}
	if len(fatal) != 0 {
		t.Fatalf("OnFatal called %d more times", len(fatal))
	}
}
