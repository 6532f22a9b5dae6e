package walgc

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/wal"
)

// logCommitter is a Raft log in miniature: a proposal of a job whose gate
// is closed waits (no quorum); an open one is appended at the next index.
type logCommitter struct {
	mu    sync.Mutex
	index uint64
	held  map[string]chan struct{}
}

func (c *logCommitter) hold(job string) {
	c.mu.Lock()
	c.held[job] = make(chan struct{})
	c.mu.Unlock()
}

func (c *logCommitter) release(job string) {
	c.mu.Lock()
	close(c.held[job])
	delete(c.held, job)
	c.mu.Unlock()
}

func (c *logCommitter) last() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.index
}

func (c *logCommitter) Propose(ctx context.Context, batch []byte) (group.Proposal, error) {
	events, err := fsm.DecodeBatch(batch)
	if err != nil {
		return group.Proposal{}, errors.Join(group.ErrInvalidBatch, err)
	}
	c.mu.Lock()
	gate := c.held[events[0].JobID]
	c.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return group.Proposal{}, ctx.Err()
		}
	}
	c.mu.Lock()
	c.index++
	idx := c.index
	c.mu.Unlock()
	return group.Proposal{Index: idx, Results: make([]fsm.Result, len(events))}, nil
}

// node is a NodeWAL, its pipeline and a GC over them, with the applied
// and snapshot indexes set by the test.
type node struct {
	w    *wal.WAL
	p    *commit.Pipeline
	gc   *GC
	mu   sync.Mutex
	snap uint64
}

func (n *node) setSnapshot(i uint64) { n.mu.Lock(); n.snap = i; n.mu.Unlock() }

func openNode(t *testing.T, dir string, c commit.Committer) *node {
	t.Helper()
	w, err := wal.Open(wal.Config{Dir: dir, SegmentBytes: wal.MinSegmentBytes, Retain: []wal.Level{wal.Regional, wal.Compacted}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := commit.NewPipeline(commit.PipelineConfig{Tier: commit.DurabilityRegional, WAL: w, Committer: c, WatermarkInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	n := &node{w: w, p: p}
	n.gc, err = New(Config{WAL: w, Coverage: p, Registerer: prometheus.NewRegistry(),
		Applied:  func() uint64 { n.mu.Lock(); defer n.mu.Unlock(); return n.snap },
		Snapshot: func() (uint64, error) { n.mu.Lock(); defer n.mu.Unlock(); return n.snap, nil }})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *node) close() {
	n.p.Close()
	n.w.Close()
}

func submit(t *testing.T, n *node, job int) wal.LSN {
	t.Helper()
	// Enough events that a few records fill a segment.
	events, _ := testkit.JobEvents(job*100, 100)
	for i := range events {
		events[i].JobID = testkit.JobID(job)
	}
	res, err := n.p.Submit(testkit.Ctx(t), events, commit.DurabilityLocal)
	if err != nil {
		t.Fatal(err)
	}
	return res.LSN
}

// A record acknowledged at LOCAL that has not reached its tier is never
// compacted, whatever snapshot exists; records at the tier are compacted
// only once a snapshot holds their entries; after a restart, records at
// the tier whose indexes were not written down wait for a later proposal
// to bound them, and nothing Recover needs is ever gone.
func TestGC_CompactsOnlyWhatIsAtTheTierAndInASnapshot(t *testing.T) {
	dir := t.TempDir()
	c := &logCommitter{held: map[string]chan struct{}{}}
	n := openNode(t, dir, c)

	stuck := 7
	c.hold(testkit.JobID(stuck))
	var lsns []wal.LSN
	for job := range 20 {
		lsns = append(lsns, submit(t, n, job))
	}
	stuckLSN := lsns[stuck]
	testkit.WaitUntil(t, "the others at REGIONAL", func() bool { return n.p.Watermark() == stuckLSN-1 })
	testkit.WaitUntil(t, "the checkpoint", func() bool { return n.w.Watermarks().Regional == stuckLSN-1 })

	n.setSnapshot(0) // nothing in a snapshot: nothing goes
	if err := n.gc.Once(); err != nil {
		t.Fatal(err)
	}
	if m := n.w.Watermarks(); m.Compacted != 0 || m.Applied != 0 || n.w.FirstLSN() != 1 {
		t.Fatalf("compacted without a snapshot: %+v, first LSN %d", m, n.w.FirstLSN())
	}
	n.setSnapshot(1 << 40) // every entry there is in a snapshot
	if err := n.gc.Once(); err != nil {
		t.Fatal(err)
	}
	m := n.w.Watermarks()
	if m.Compacted != stuckLSN-1 || m.Applied != stuckLSN-1 {
		t.Fatalf("watermarks %+v, want APPLIED and COMPACTED at %d (below the LOCAL-only record)", m, stuckLSN-1)
	}
	if n.w.FirstLSN() <= 1 || n.w.FirstLSN() > stuckLSN {
		t.Fatalf("first LSN on disk %d: want segments removed, none at or above %d", n.w.FirstLSN(), stuckLSN)
	}

	// The stuck record reaches the tier at index I: compacted only once a
	// snapshot reaches I.
	c.release(testkit.JobID(stuck))
	testkit.WaitUntil(t, "all at REGIONAL", func() bool { return n.w.Watermarks().Regional == lsns[len(lsns)-1] })
	at := c.last()
	n.setSnapshot(at - 1)
	if err := n.gc.Once(); err != nil {
		t.Fatal(err)
	}
	if m := n.w.Watermarks(); m.Compacted >= stuckLSN {
		t.Fatalf("COMPACTED %d passes LSN %d, whose entry %d is not in snapshot %d", m.Compacted, stuckLSN, at, at-1)
	}

	// Restart with a record held again: the records at the tier have
	// unknown indexes, the held one must be recovered.
	c.hold(testkit.JobID(100))
	held := submit(t, n, 100)
	before := n.w.Watermarks()
	n.close()
	n = openNode(t, dir, c)
	defer n.close()
	n.setSnapshot(1 << 40)
	if err := n.gc.Once(); err != nil {
		t.Fatal(err)
	}
	if m := n.w.Watermarks(); m.Compacted != before.Compacted {
		t.Fatalf("after the restart, COMPACTED moved %d → %d before any index bounded the records at the tier", before.Compacted, m.Compacted)
	}
	if _, err := n.p.Recover(testkit.Ctx(t)); err != nil {
		t.Fatal(err)
	}
	c.release(testkit.JobID(100))
	testkit.WaitUntil(t, "the held record recovered to REGIONAL", func() bool { return n.w.Watermarks().Regional >= held })
	if err := n.gc.Once(); err != nil {
		t.Fatal(err)
	}
	if m := n.w.Watermarks(); m.Compacted != held {
		t.Fatalf("after recovery, COMPACTED %d, want %d (everything at the tier and in the snapshot)", m.Compacted, held)
	}
}
