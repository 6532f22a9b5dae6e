package integration

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/cluster/devcluster"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/transport/api"
)

// workersPerBatch is the worker joins of one regional write.
const workersPerBatch = 10

var workerSeq atomic.Uint64

// writeWorkers registers workers in batches at REGIONAL from `writers`
// goroutines until ctx ends; every acknowledged worker name is recorded.
func writeWorkers(ctx context.Context, cl *api.Client, writers int, a *acks) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for ctx.Err() == nil {
				req := &api.BatchRequest{}
				var names []string
				for range workersPerBatch {
					name := fmt.Sprintf("w%d", workerSeq.Add(1))
					names = append(names, name)
					req.Events = append(req.Events, fsm.Event{Type: fsm.TypeWorkerJoined, Body: &fsm.WorkerJoined{Worker: name, Capacity: 1}})
				}
				started := time.Now()
				cctx, cancel := context.WithTimeout(ctx, callTimeout)
				res, _, err := cl.SubmitEvents(cctx, req, api.WriteOptions{Durability: api.DurabilityRegional})
				cancel()
				if err != nil || res.Durability != "REGIONAL" {
					a.failed()
					continue
				}
				for i, r := range res.Results {
					if r.Outcome == "applied" || r.Outcome == "duplicate" {
						a.ok(names[i], started)
					}
				}
			}
		})
	}
	return &wg
}

// requireWorkers waits until every manager of region applied its group's
// commit index, stops the cluster, and checks that every manager's ledger
// holds every acknowledged worker.
func requireWorkers(t *testing.T, c *devcluster.Cluster, region string, names []string) {
	t.Helper()
	managers := nodesOf(c, cluster.RoleManager, region)
	lead := leaderOf(t, client(t, c, managers...))
	want := uint64(0)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	st, _, err := client(t, c, lead).RaftStatus(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	want = st.Groups[0].CommitIndex
	for _, id := range managers {
		cl := client(t, c, id)
		waitFor(t, id+" applying index "+fmt.Sprint(want), convergeWait, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			st, _, err := cl.RaftStatus(ctx)
			return err == nil && st.Groups[0].AppliedIndex >= want
		})
	}
	if err := c.StopAll(); err != nil {
		t.Fatal(err)
	}
	for _, id := range managers {
		n, err := c.Node(id)
		if err != nil {
			t.Fatal(err)
		}
		store, err := boltstore.Open(boltstore.Config{Path: filepath.Join(n.Config.DataDir, "ledger.db")})
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		missing := 0
		err = store.View(func(tx fsm.ReadTx) error {
			for _, name := range names {
				w, err := tx.Worker(name)
				if err != nil {
					return err
				}
				if w == nil {
					missing++
				}
			}
			return nil
		})
		store.Close()
		if err != nil || missing > 0 {
			t.Fatalf("%s: %d of %d acknowledged workers missing (%v)", id, missing, len(names), err)
		}
	}
}
