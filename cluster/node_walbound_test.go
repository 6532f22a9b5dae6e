package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/wal"
)

// Bounded disk (issue 16 §2), subnet 117: events pushed through a
// manager — a follower, so every record is forwarded to the leader — at
// LOCAL, as the progress data plane does. Its NodeWAL is compacted as the
// records reach REGIONAL and Raft snapshots cover them, and ends within
// 2× the live state (the ledger file); records acknowledged at LOCAL while
// the manager is cut off from its group are never compacted; after a
// restart every acknowledged event is in the regional ledger.
//
// `make test` pushes walBoundEvents; STRATA_WAL_BOUND_EVENTS=1000000
// (make wal-bound) pushes a million and logs the figures.
const walBoundEvents = 20_000

func TestNode_NodeWALStaysBoundedAndLosesNothing(t *testing.T) {
	total := walBoundEvents
	if v := os.Getenv("STRATA_WAL_BOUND_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("STRATA_WAL_BOUND_EVENTS=%q", v)
		}
		total = n
	}
	// Raft entries carry up to 1 MiB of records each: a snapshot every few
	// entries. A snapshot streams the whole ledger, so the long run takes
	// them less often.
	threshold, interval := uint64(4), 500*time.Millisecond
	if total > walBoundEvents {
		threshold, interval = 64, 5*time.Second
	}
	c := startTestCluster(t, 117, func(cfg *NodeConfig) {
		cfg.WALSegmentBytes = MinWALSegmentBytes
		cfg.WALCompactInterval = 250 * time.Millisecond
		cfg.SnapshotThreshold = threshold
		cfg.SnapshotInterval = interval
	})
	waitFor := time.Duration(2+total/20_000) * time.Minute
	localWait := nodeTestWait
	if total > walBoundEvents {
		localWait = 5 * time.Minute
	}
	id := c.followers(RoleManager)[0]
	n := c.node(id)
	ledgerFile := filepath.Join(c.cfg(id).DataDir, "ledger.db")

	// Push: 8 writers, batches of 100 events, each acknowledged at LOCAL.
	const batch, writers = 100, 8
	start := time.Now()
	var next atomic.Int64
	var maxWAL atomic.Int64
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	walBoundNow := func() (int64, int64, bool) { // for the trace: no t.Fatal off the test goroutine
		w, _ := n.wal.DiskBytes()
		fi, err := os.Stat(ledgerFile)
		if err != nil {
			return w, 0, false
		}
		return w, fi.Size(), w <= 2*fi.Size()
	}
	traced := time.Now()
	go func() { // the largest the NodeWAL got
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				if b, err := n.wal.DiskBytes(); err == nil && b > maxWAL.Load() {
					maxWAL.Store(b)
				}
				if os.Getenv("STRATA_WAL_BOUND_TRACE") != "" && time.Since(traced) > 10*time.Second {
					t.Logf("pushing: %d of %d events submitted; %s", min(int(next.Load()), total), total, walState(n, walBoundNow))
					traced = time.Now()
				}
			case <-stopSampling:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for range writers {
		wg.Go(func() {
			for {
				first := int(next.Add(batch)) - batch
				if first >= total {
					return
				}
				if err := submitLocal(n, fsmtest.JobsCreated(first, min(batch, total-first), "acme", "use1"), localWait); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	pushed := time.Since(start)

	walBound := func() (int64, int64, bool) {
		w, err := n.wal.DiskBytes()
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(ledgerFile)
		if err != nil {
			t.Fatal(err)
		}
		return w, fi.Size(), w <= 2*fi.Size()
	}
	// Everything reaches REGIONAL; snapshots cover it; compaction follows.
	waitLong(t, waitFor, "every record at REGIONAL", func() bool { return n.pipe.Watermark() == n.wal.LastLSN() },
		func() string { return walState(n, walBound) })
	if total > walBoundEvents {
		// The long run snapshots every 64 entries: once the push stops, the
		// entries after the last snapshot (up to 63 MiB of records) wait for
		// traffic that does not come, and the NodeWAL's first segment may
		// hold a record committed in one of them (out of order, after
		// retries). Take the snapshot the next 64 entries would have.
		if err := n.raft.Raft.Snapshot().Error(); err != nil {
			t.Logf("snapshot after the push: %v", err)
		}
	}
	waitLong(t, waitFor, "the NodeWAL compacted within 2x the ledger", func() bool {
		_, _, ok := walBound()
		return ok && n.wal.FirstLSN() > 1 && n.wal.Watermarks().Compacted > 0
	}, func() string { return walState(n, walBound) })
	close(stopSampling)
	<-sampled
	walBytes, ledgerBytes, _ := walBound()
	marks := n.wal.Watermarks()
	t.Logf("%d events in %d records pushed through %s in %s; NodeWAL %d bytes in %d segments (largest seen %d), ledger file %d bytes; watermarks %+v, first LSN %d",
		total, n.wal.LastLSN(), id, pushed.Round(time.Millisecond), walBytes, n.wal.Segments(), maxWAL.Load(), ledgerBytes, marks, n.wal.FirstLSN())
	if marks.Compacted > marks.Applied || marks.Applied > marks.Regional {
		t.Fatalf("watermarks out of order: %+v", marks)
	}

	// Cut the manager off its group: what it acknowledges at LOCAL now
	// cannot reach REGIONAL, and no compaction round may drop it.
	for _, other := range c.cfgs {
		if other.Role == RoleManager && other.NodeID != id {
			n.Faults().Partition(strings.Split(other.RaftAddr, ":")[0])
		}
	}
	cutFirst := total
	var cutLSNs []wal.LSN
	for k := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), nodeTestWait)
		res, err := n.pipe.Submit(ctx, fsmtest.JobsCreated(cutFirst+k*10, 10, "acme", "use1"), commit.DurabilityLocal)
		cancel()
		if err != nil {
			t.Fatalf("LOCAL submit while cut off: %v", err)
		}
		cutLSNs = append(cutLSNs, res.LSN)
	}
	time.Sleep(6 * c.cfg(id).WALCompactInterval) // rounds run
	if m := n.wal.Watermarks(); m.Compacted >= cutLSNs[0] || m.Applied >= cutLSNs[0] || m.Regional >= cutLSNs[0] {
		t.Fatalf("records acknowledged at LOCAL only (LSN %d..%d) passed by a watermark: %+v", cutLSNs[0], cutLSNs[len(cutLSNs)-1], m)
	}
	if it, err := n.wal.Iterator(cutLSNs[0]); err != nil {
		t.Fatalf("LOCAL-only records compacted: %v", err)
	} else {
		it.Close()
	}

	// Restart it (its records still LOCAL), healed: recovery re-proposes
	// them, and every acknowledged event is in the regional ledger.
	c.stop(id)
	c.start(id)
	c.waitReady(id)
	n = c.node(id)
	waitLong(t, waitFor, "the recovered records at REGIONAL", func() bool { return n.pipe.Watermark() >= cutLSNs[len(cutLSNs)-1] },
		func() string { return walState(n, walBound) })
	lead := c.node(c.leader(RoleManager))
	want := fsmtest.JobsCreated(0, cutFirst+200, "acme", "use1")
	waitLong(t, waitFor, id+" caught up", func() bool { return n.ledger.AppliedIndex() >= lead.ledger.AppliedIndex() },
		func() string { return walState(n, walBound) })
	for _, node := range []*Node{lead, n} {
		missing := 0
		for _, e := range want {
			if _, err := node.ledger.Event("acme", e.ID); err != nil {
				if missing++; missing <= 3 {
					t.Errorf("%s: acknowledged event %x of job %s: %v", node.ID(), e.ID, e.JobID, err)
				}
			}
		}
		if missing > 0 {
			t.Fatalf("%s: %d of %d acknowledged events lost", node.ID(), missing, len(want))
		}
	}
	waitLong(t, waitFor, "the NodeWAL within 2x the ledger after the restart", func() bool { _, _, ok := walBound(); return ok },
		func() string { return walState(n, walBound) })
}

// walState describes n's NodeWAL for a failure message.
func walState(n *Node, bound func() (int64, int64, bool)) string {
	w, l, _ := bound()
	snap, err := n.raft.SnapshotIndex()
	return fmt.Sprintf("NodeWAL %d bytes, %d segments, first LSN %d, last %d, watermarks %+v; ledger file %d bytes, applied index %d; snapshot index %d (%v); pipeline watermark %d, covered(applied) %d, covered(snapshot) %d",
		w, n.wal.Segments(), n.wal.FirstLSN(), n.wal.LastLSN(), n.wal.Watermarks(), l, n.ledger.AppliedIndex(), snap, err,
		n.pipe.Watermark(), n.pipe.Covered(n.ledger.AppliedIndex()), n.pipe.Covered(snap))
}

// submitLocal submits events at LOCAL on n, retrying backpressure.
// localWait bounds the wait for one LOCAL acknowledgement: an fsync; on
// a machine loaded with other tests' I/O (and this test's Raft snapshots
// of a large ledger), one took more than nodeTestWait in the 1M run.
func submitLocal(n *Node, events []fsm.Event, localWait time.Duration) error {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), localWait)
		_, err := n.pipe.Submit(ctx, events, commit.DurabilityLocal)
		cancel()
		if err == nil || !errors.Is(err, group.ErrBackpressure) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitLong waits up to d for cond (snapshots of a large ledger take a
// while on a loaded machine); STRATA_WAL_BOUND_TRACE=1 logs state every
// 2 s meanwhile.
func waitLong(t *testing.T, d time.Duration, what string, cond func() bool, state func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	last := time.Now()
	for !cond() {
		if os.Getenv("STRATA_WAL_BOUND_TRACE") != "" && time.Since(last) > 2*time.Second {
			t.Logf("waiting for %s: %s", what, state())
			last = time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, state())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
