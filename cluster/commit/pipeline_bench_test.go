package commit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
)

// applyEach is the baseline committer: one raft.Apply per submission
// (group.ApplyOne), its entry holding that one batch.
type applyEach struct{ g *group.Group }

func (a applyEach) Propose(_ context.Context, batch []byte) (group.Proposal, error) {
	return a.g.ApplyOne(batch, time.Second)
}

// benchEventsPerSubmit is the events of one benchmark submission.
const benchEventsPerSubmit = 4

// benchJobs hands out unique job numbers across sub-benchmarks.
var benchJobs atomic.Int64

// runSubmitters submits at REGIONAL on p (a pipeline of leader) from
// writers goroutines, one submission per b.Loop iteration, and reports
// submissions/s and events/s measured over the whole run including the
// drain, and the submissions per Raft entry applied on the leader.
func runSubmitters(b *testing.B, leader *pipeNode, p *Pipeline, writers int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	work := make(chan []fsm.Event)
	var wg sync.WaitGroup
	var failed atomic.Value
	for range writers {
		wg.Go(func() {
			for evs := range work {
				if _, err := p.Submit(ctx, evs, DurabilityRegional); err != nil {
					failed.Store(err)
				}
			}
		})
	}
	// Events are built before the timer runs.
	batches := make(chan []fsm.Event, 1024)
	go func() {
		defer close(batches)
		for {
			evs, _ := testkit.JobEvents(int(benchJobs.Add(benchEventsPerSubmit)), benchEventsPerSubmit)
			select {
			case batches <- evs:
			case <-ctx.Done():
				return
			}
		}
	}()
	entries := testkit.MetricValue(b, leader.Reg, "strata_raft_applied_entries_total")
	b.ReportAllocs()
	start, n := time.Now(), 0
	for b.Loop() {
		work <- <-batches
		n++
	}
	close(work)
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	if err := failed.Load(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(n)/elapsed, "submits/s")
	b.ReportMetric(float64(n*benchEventsPerSubmit)/elapsed, "events/s")
	if d := testkit.MetricValue(b, leader.Reg, "strata_raft_applied_entries_total") - entries; d > 0 {
		b.ReportMetric(float64(n)/d, "submits/entry")
	}
}

// benchSubnet gives every benchmark group its own loopback subnet.
var benchSubnet atomic.Int32

// benchCluster starts a fresh 3-node group for one sub-benchmark, so that
// no run pays for the ledger (in memory, all three replicas in this
// process) an earlier run grew.
func benchCluster(b *testing.B) (*pipeCluster, *pipeNode) {
	b.Helper()
	c := startPipeCluster(b, 3, 20+int(benchSubnet.Add(1)%200), DurabilityRegional, group.ProposerConfig{})
	return c, c.leader()
}

// BenchmarkPipelineRegional compares REGIONAL submissions on a 3-node
// loopback group through the batching Proposer with one raft.Apply per
// submission.
func BenchmarkPipelineRegional(b *testing.B) {
	for _, writers := range []int{1, 64, 256} {
		for _, mode := range []string{"batching", "apply-each"} {
			b.Run(fmt.Sprintf("writers=%d/proposer=%s", writers, mode), func(b *testing.B) {
				c, leader := benchCluster(b)
				p := leader.pipe
				if mode == "apply-each" {
					p = c.newPipeline(leader, applyEach{leader.Group})
					defer p.Close()
				}
				runSubmitters(b, leader, p, writers)
			})
		}
	}
}

// BenchmarkProposerDepth measures the raft.Apply calls kept in flight
// (ProposerConfig.MaxInFlight).
func BenchmarkProposerDepth(b *testing.B) {
	for _, writers := range []int{64, 256} {
		for _, depth := range []int{1, 2, 4, 8} {
			b.Run(fmt.Sprintf("writers=%d/depth=%d", writers, depth), func(b *testing.B) {
				c, leader := benchCluster(b)
				prop, err := group.NewProposer(leader.Group.Raft, group.ProposerConfig{MaxInFlight: depth})
				if err != nil {
					b.Fatal(err)
				}
				defer prop.Close()
				p := c.newPipeline(leader, prop)
				defer p.Close()
				runSubmitters(b, leader, p, writers)
			})
		}
	}
}
