package integration

import (
	"context"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/transport/api"
)

// Kill -9 the global leader, then the leader of a regional group, while
// clients write: writes resume and every acknowledged job is there.
func TestFailover_KillLeadersWhileWriting(t *testing.T) {
	c := startCluster(t, 110)
	gates := nodesOf(c, cluster.RoleGate, "")
	gcl := client(t, c, gates...)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var a acks
	wg := writeJobs(ctx, gcl, 8, api.DurabilityGlobal, "use1", &a)
	waitFor(t, "first acknowledgements", convergeWait, func() bool { return len(a.snapshot()) >= 20 })

	leader := leaderOf(t, gcl)
	killedAt := time.Now()
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "writes to resume after the global leader's kill", convergeWait, func() bool { return a.resumedAfter(killedAt) >= 0 })
	t.Logf("global leader %s killed: writes resumed after %s", leader, a.resumedAfter(killedAt))

	// The regional group of use1: kill its leader while writing
	// regional events (a batch of worker joins per request).
	mcl := client(t, c, nodesOf(c, cluster.RoleManager, "use1")...)
	mleader := leaderOf(t, mcl)
	var ra acks
	wg2 := writeWorkers(ctx, mcl, 8, &ra)
	waitFor(t, "regional acknowledgements", convergeWait, func() bool { return len(ra.snapshot()) >= 20 })
	killedAt = time.Now()
	if err := c.Kill(mleader); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "regional writes to resume", convergeWait, func() bool { return ra.resumedAfter(killedAt) >= 0 })
	t.Logf("regional leader %s killed: writes resumed after %s", mleader, ra.resumedAfter(killedAt))
	waitFor(t, "more acknowledgements after both kills", convergeWait, func() bool {
		return len(a.snapshot()) >= 40 && len(ra.snapshot()) >= 40
	})
	stop()
	wg.Wait()
	wg2.Wait()

	// Bring the killed nodes back: they rejoin with their data.
	for _, id := range []string{leader, mleader} {
		if err := c.StartNode(id); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(context.Background(), clusterStartWait)
		err := c.WaitReady(wctx, id)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	jobs := a.snapshot()
	t.Logf("%d jobs acknowledged at GLOBAL (%d failed calls), %d regional batches acknowledged", len(jobs), a.fails, len(ra.snapshot()))
	requireJobs(t, gcl, jobs)
	requireWorkers(t, c, "use1", ra.snapshot())
}

// An event acknowledged at LOCAL is in the receiving node's NodeWAL: it
// survives kill -9 of that node and reaches the global ledger once the
// node is back.
func TestFailover_LocalAcknowledgedSurvivesKill(t *testing.T) {
	c := startCluster(t, 120)
	gates := nodesOf(c, cluster.RoleGate, "")
	victim := gates[1]
	vcl := client(t, c, victim)
	var ids []string
	for range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		res, _, err := vcl.SubmitJob(ctx, jobSpec("use1"), api.WriteOptions{Durability: api.DurabilityLocal})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if res.Durability != "LOCAL" {
			t.Fatalf("acknowledged at %s, want LOCAL", res.Durability)
		}
		ids = append(ids, res.JobID)
	}
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(victim); err != nil {
		t.Fatal(err)
	}
	requireJobs(t, client(t, c, gates...), ids)
}

// Losing every node of a region keeps GLOBAL writes going with the gates
// of the other two.
func TestFailover_RegionLossKeepsGlobalWrites(t *testing.T) {
	c := startCluster(t, 130)
	var lost []string
	lost = append(lost, nodesOf(c, cluster.RoleGate, "apse1")...)
	lost = append(lost, nodesOf(c, cluster.RoleManager, "apse1")...)
	lostAt := time.Now()
	for _, id := range lost {
		if err := c.Kill(id); err != nil {
			t.Fatal(err)
		}
	}
	gcl := client(t, c, append(nodesOf(c, cluster.RoleGate, "use1"), nodesOf(c, cluster.RoleGate, "euw1")...)...)
	var ids []string
	waitFor(t, "a GLOBAL write without apse1", convergeWait, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		res, _, err := gcl.SubmitJob(ctx, jobSpec("euw1"), api.WriteOptions{})
		if err == nil {
			ids = append(ids, res.JobID)
		}
		return err == nil && res.Durability == "GLOBAL"
	})
	t.Logf("first GLOBAL write %s after losing apse1", time.Since(lostAt))
	for range 50 {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		res, _, err := gcl.SubmitJob(ctx, jobSpec("use1"), api.WriteOptions{})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.JobID)
	}
	requireJobs(t, gcl, ids)
}
