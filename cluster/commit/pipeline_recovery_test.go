package commit

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/wal"
)

// gatedCommitter holds each proposal until the test opens the gate of the
// batch's first job: a fake for injecting an unreachable tier and
// out-of-order completion. It answers as if every event were applied.
type gatedCommitter struct {
	mu       sync.Mutex
	gates    map[string]chan struct{}
	openAll  bool
	proposed map[string]int // attempts per job
}

func newGatedCommitter(openAll bool) *gatedCommitter {
	return &gatedCommitter{gates: map[string]chan struct{}{}, openAll: openAll, proposed: map[string]int{}}
}

func (g *gatedCommitter) gate(job string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch, ok := g.gates[job]
	if !ok {
		ch = make(chan struct{})
		if g.openAll {
			close(ch)
		}
		g.gates[job] = ch
	}
	return ch
}

func (g *gatedCommitter) release(job string) { close(g.gate(job)) }

func (g *gatedCommitter) attempts(job string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.proposed[job]
}

func (g *gatedCommitter) Propose(ctx context.Context, batch []byte) (group.Proposal, error) {
	events, err := fsm.DecodeBatch(batch)
	if err != nil {
		return group.Proposal{}, errors.Join(group.ErrInvalidBatch, err)
	}
	job := events[0].JobID
	g.mu.Lock()
	g.proposed[job]++
	g.mu.Unlock()
	select {
	case <-g.gate(job):
	case <-ctx.Done():
		return group.Proposal{}, ctx.Err()
	}
	results := make([]fsm.Result, len(events))
	for i := range results {
		results[i].Outcome = fsm.OutcomeApplied
	}
	return group.Proposal{Index: 1, Results: results}, nil
}

// openTestWAL opens a NodeWAL in dir, closed at cleanup.
func openTestWAL(t *testing.T, dir string) *wal.WAL {
	t.Helper()
	w, err := wal.Open(wal.Config{Dir: dir, SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

func newTestPipeline(t *testing.T, w *wal.WAL, c Committer, maxPending int) (*Pipeline, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	p, err := NewPipeline(PipelineConfig{Tier: DurabilityRegional, WAL: w, Committer: c, MaxPending: maxPending, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p, reg
}

func TestPipeline_WatermarkAdvancesOnlyOverAGapFreePrefix(t *testing.T) {
	w := openTestWAL(t, t.TempDir())
	gc := newGatedCommitter(false)
	p, reg := newTestPipeline(t, w, gc, 3)
	ctx := testkit.Ctx(t)

	var lsns []wal.LSN
	for i := range 3 {
		res, err := p.Submit(ctx, []fsm.Event{testkit.JobEvent(i)}, DurabilityLocal)
		if err != nil {
			t.Fatal(err)
		}
		lsns = append(lsns, res.LSN)
	}
	if _, err := p.Submit(ctx, []fsm.Event{testkit.JobEvent(3)}, DurabilityLocal); !errors.Is(err, group.ErrBackpressure) {
		t.Fatalf("submit beyond MaxPending: %v, want ErrBackpressure", err)
	}
	if last := w.LastLSN(); last != lsns[2] {
		t.Fatalf("refused submit reached the NodeWAL: last LSN %d, want %d", last, lsns[2])
	}
	if f := p.QueueFill(); f != 1 {
		t.Fatalf("queue fill %v with MaxPending records pending, want 1", f)
	}

	steps := []struct {
		name     string
		release  int
		inFlight float64
		want     wal.LSN
	}{
		{name: "third first: gap at 1 and 2", release: 2, inFlight: 2, want: 0},
		{name: "first: prefix up to 1", release: 0, inFlight: 1, want: lsns[0]},
		{name: "second closes the gap", release: 1, inFlight: 0, want: lsns[2]},
	}
	for _, st := range steps {
		gc.release(testkit.JobID(st.release))
		testkit.WaitUntil(t, st.name, func() bool {
			return testkit.MetricValue(t, reg, "strata_pipeline_in_flight") == st.inFlight && p.QueueFill() == st.inFlight/3
		})
		if got := p.Watermark(); got != st.want {
			t.Fatalf("%s: watermark %d, want %d", st.name, got, st.want)
		}
	}
	testkit.WaitUntil(t, "the checkpoint to follow", func() bool { return w.Watermarks().Regional == lsns[2] })
}

func TestPipeline_RecoverReproposesOnlyRecordsAboveTheWatermark(t *testing.T) {
	dir := t.TempDir()
	w, err := wal.Open(wal.Config{Dir: dir, SegmentBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	gc := newGatedCommitter(false)
	p, err := NewPipeline(PipelineConfig{Tier: DurabilityGlobal, WAL: w, Committer: gc})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Ctx(t)
	for i := range 3 {
		if _, err := p.Submit(ctx, []fsm.Event{testkit.JobEvent(i)}, DurabilityLocal); err != nil {
			t.Fatal(err)
		}
	}
	gc.release(testkit.JobID(0))
	gc.release(testkit.JobID(2))
	testkit.WaitUntil(t, "record 1 at the tier", func() bool { return p.Watermark() == 1 })
	p.Close() // record 2 never reached the tier; record 3 did, above the gap
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	w = openTestWAL(t, dir)
	if got := w.Watermarks().Global; got != 1 {
		t.Fatalf("GLOBAL watermark after restart %d, want 1", got)
	}
	again := newGatedCommitter(true)
	p2, err := NewPipeline(PipelineConfig{Tier: DurabilityGlobal, WAL: w, Committer: again})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	n, err := p2.Recover(ctx)
	if err != nil || n != 2 {
		t.Fatalf("Recover = %d, %v; want the 2 records above the watermark", n, err)
	}
	testkit.WaitUntil(t, "recovered records at the tier", func() bool { return p2.Watermark() == 3 })
	for i, want := range []int{0, 1, 1} {
		if got := again.attempts(testkit.JobID(i)); got != want {
			t.Errorf("job %d re-proposed %d times, want %d", i, got, want)
		}
	}
	if _, err := p2.Recover(ctx); err == nil {
		t.Fatal("second Recover succeeded")
	}
}

func TestPipeline_RecoveryAfterLostQuorumAppliesLocalAckedEventsExactlyOnce(t *testing.T) {
	c := startPipeCluster(t, 3, 5, DurabilityRegional, group.ProposerConfig{})
	a := c.leader() // its proposals without quorum may survive in its Raft log
	ctx := testkit.Ctx(t)

	warm, warmJobs := testkit.JobEvents(0, 1)
	if _, err := a.pipe.Submit(ctx, warm, DurabilityRegional); err != nil {
		t.Fatal(err)
	}
	for _, nd := range c.nodes {
		if nd != a {
			c.stop(nd)
		}
	}

	const batches, perBatch = 5, 2
	var local []fsm.Event
	var localJobs []string
	var last wal.LSN
	for b := range batches {
		evs, jobs := testkit.JobEvents(1+b*perBatch, perBatch)
		res, err := a.pipe.Submit(ctx, evs, DurabilityLocal)
		if err != nil {
			t.Fatal(err)
		}
		if res.Level != DurabilityLocal {
			t.Fatalf("submit without quorum acked at %s, want LOCAL", res.Level)
		}
		local, localJobs, last = append(local, evs...), append(localJobs, jobs...), res.LSN
	}
	for _, id := range localJobs {
		if _, err := a.Ledger.Job("acme", id); err == nil {
			t.Fatalf("job %s applied without a quorum", id)
		}
	}
	c.stop(a)

	for _, nd := range c.nodes {
		c.start(nd)
	}
	n, err := a.pipe.Recover(ctx)
	if err != nil || n != batches {
		t.Fatalf("Recover on %s = %d, %v; want %d records", a.ID, n, err, batches)
	}
	for _, nd := range c.nodes {
		if nd != a {
			if n, err := nd.pipe.Recover(ctx); err != nil || n != 0 {
				t.Fatalf("Recover on %s = %d, %v; want nothing", nd.ID, n, err)
			}
		}
	}
	testkit.WaitUntil(t, "recovered records at the tier", func() bool { return a.pipe.Watermark() >= last })
	allJobs := append(warmJobs, localJobs...)
	digest := c.WaitConverged(allJobs)
	testkit.WaitUntil(t, "every node to apply each event once", func() bool {
		for _, nd := range c.nodes {
			if testkit.MetricValue(t, nd.Reg, "strata_raft_applied_events_total", "outcome", "applied") != float64(len(allJobs)) {
				return false
			}
		}
		return true
	})

	t.Logf("%s applied %v events as duplicates (proposals that survived in its Raft log)",
		a.ID, testkit.MetricValue(t, a.Reg, "strata_raft_applied_events_total", "outcome", "duplicate"))
	res, err := a.pipe.Submit(ctx, local, DurabilityRegional)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WantOutcomes(t, res.Results, repeat(fsm.OutcomeDuplicate, len(local))...)
	if d := c.WaitConverged(allJobs); d != digest {
		t.Fatalf("duplicates changed the ledger digest")
	}
}
