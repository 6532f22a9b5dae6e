package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/worker"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Lifecycle tests on real nodes (subnet 240): a job submitted through the
// API is dispatched by the reconcilers, leased to real worker runners (in
// process, over HTTP), and ends in one terminal state on every gate.

// startWorkers runs n worker runners of capacity capacity against the
// managers until the test ends (or their stop is called).
func startWorkers(t *testing.T, c *testCluster, n int, capacity uint32) (runners []*worker.Runner, stop []context.CancelFunc) {
	t.Helper()
	var addrs []string
	for _, id := range []string{"m1", "m2", "m3"} {
		addrs = append(addrs, c.cfg(id).HTTPAddr)
	}
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	for i := range n {
		cl, err := api.New(api.ClientConfig{Addrs: addrs, Token: testAdminToken})
		if err != nil {
			t.Fatal(err)
		}
		r, err := worker.New(worker.Config{Client: cl, Region: "use1", Capacity: capacity, WorkerID: fmt.Sprintf("w%d", i+1),
			Logger: slog.New(slog.DiscardHandler), ProgressInterval: 200 * time.Millisecond, LeaseWait: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		wg.Go(func() { _ = r.Run(ctx) })
		runners, stop = append(runners, r), append(stop, cancel)
	}
	return runners, stop
}

// lifecycleJob submits a job of tenant acme with count instances of one
// workflow and returns its id.
func lifecycleJob(t *testing.T, c *testCluster, count int, duration, timeout string) string {
	t.Helper()
	body := fmt.Appendf(nil, `{"tenant":"acme","regions":["use1"],"timeout":%q,`+
		`"workflows":[{"name":"load","count":%d,"duration":%q,"rate":50,"failure_ratio":0.1}]}`, timeout, count, duration)
	rep := c.call("g1", "POST", "/v1/jobs", testAcmeToken, body)
	if rep.status != http.StatusCreated {
		t.Fatalf("submit: %d %s", rep.status, rep.body)
	}
	var out api.SubmitJobResponse
	rep.decode(t, &out)
	return out.JobID
}

// jobOn reads a job's state from node id's own ledger.
func jobOn(c *testCluster, id, jobID string) *fsm.JobState {
	n := c.node(id)
	if n == nil {
		return nil
	}
	s, _ := n.ledger.JobByID(jobID)
	return s
}

// waitStatus waits until every gate's ledger shows the job in want.
func waitStatus(t *testing.T, c *testCluster, jobID string, want fsm.JobStatus) {
	t.Helper()
	c.waitFor("job "+jobID+" "+want.String()+" on every gate", func() bool {
		for _, g := range []string{"g1", "g2", "g3"} {
			if s := jobOn(c, g, jobID); s == nil || s.Status != want {
				return false
			}
		}
		return true
	})
}

// workflowsOf returns the job's workflows in the regional leader's ledger.
func workflowsOf(t *testing.T, c *testCluster, jobID string) []*fsm.WorkflowState {
	t.Helper()
	var out []*fsm.WorkflowState
	err := c.node(c.leader(RoleManager)).store.View(func(tx fsm.ReadTx) error {
		return tx.Workflows(jobID+"/", func(w *fsm.WorkflowState) error {
			out = append(out, w)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLifecycle(t *testing.T) {
	c := startLifecycleCluster(t, 240)
	runners, stop := startWorkers(t, c, 2, 4)

	t.Run("runs to completion with its history and chain", func(t *testing.T) {
		id := lifecycleJob(t, c, 3, "1s", "10m")
		waitStatus(t, c, id, fsm.JobStatusCompleted)
		s := jobOn(c, "g1", id)
		r := s.Regions[0]
		if !r.Accepted || !r.Done || r.Completed+r.Failed != 3*50 {
			t.Fatalf("region state %+v: want accepted, done, 150 simulated requests", r)
		}
		seen := map[fsm.EventType]bool{}
		page, err := c.node("g1").ledger.JobEvents(fsm.EventQuery{Tenant: "acme", JobID: id, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page.Events {
			seen[e.Type] = true
		}
		for _, want := range []fsm.EventType{fsm.TypeJobCreated, fsm.TypeJobAccepted, fsm.TypeJobProgressReported, fsm.TypeJobCompleted} {
			if !seen[want] {
				t.Errorf("history lacks %s", want)
			}
		}
		for _, g := range []string{"g1", "g2", "g3"} {
			if _, err := c.node(g).ledger.VerifyChain("acme"); err != nil {
				t.Errorf("%s: %v", g, err)
			}
		}
		for _, w := range workflowsOf(t, c, id) {
			if w.Status != fsm.WorkflowStatusCompleted {
				t.Errorf("%s: %s", w.ID, w.Status)
			}
		}
		// The same through the API: workflows via a gate (forwarded to a
		// manager), the chain check on a manager (forwarded to a gate).
		var wl api.WorkflowList
		if rep := c.call("g3", "GET", "/v1/jobs/"+id+"/workflows?consistency=strong", testAcmeToken, nil); rep.status != http.StatusOK {
			t.Fatalf("workflows: %d %s", rep.status, rep.body)
		} else if rep.decode(t, &wl); wl.Region != "use1" || len(wl.Workflows) != 3 {
			t.Fatalf("workflows: %+v", wl)
		}
		if rep := c.call("g3", "GET", "/v1/jobs/"+id+"/workflows", testGlobexToken, nil); rep.status != http.StatusNotFound {
			t.Fatalf("other tenant's workflows: %d %s", rep.status, rep.body)
		}
		var cv api.ChainVerification
		if rep := c.call("m2", "GET", "/v1/chain/verify?tenant=acme", testAcmeToken, nil); rep.status != http.StatusOK {
			t.Fatalf("verify: %d %s", rep.status, rep.body)
		} else if rep.decode(t, &cv); !cv.Verified || cv.Seq == 0 {
			t.Fatalf("verify: %+v", cv)
		}
		if rep := c.call("g1", "GET", "/v1/chain/verify?tenant=acme", testGlobexToken, nil); rep.status != http.StatusForbidden {
			t.Fatalf("verify another tenant's chain: %d %s", rep.status, rep.body)
		}
	})

	t.Run("cancel stops every workflow", func(t *testing.T) {
		id := lifecycleJob(t, c, 4, "10m", "1h")
		c.waitFor("4 workflows running on workers", func() bool {
			n := 0
			for _, r := range runners {
				n += len(r.Running())
			}
			return n == 4
		})
		beats := make([]uint64, len(runners))
		for i, r := range runners {
			beats[i] = r.Heartbeats()
		}
		rep := c.call("g2", "POST", "/v1/jobs/"+id+"/cancel", testAcmeToken, []byte(`{"reason":"test"}`))
		if rep.status != http.StatusOK {
			t.Fatalf("cancel: %d %s", rep.status, rep.body)
		}
		waitStatus(t, c, id, fsm.JobStatusCancelled)
		stoppedAt := make([]uint64, len(runners))
		c.waitFor("workers stopped the cancelled workflows", func() bool {
			for i, r := range runners {
				if len(r.Running()) > 0 {
					return false
				}
				if stoppedAt[i] == 0 {
					stoppedAt[i] = r.Heartbeats()
				}
			}
			return true
		})
		// Within two heartbeats of the cancel, counted by the workers
		// themselves rather than by a clock.
		for i := range runners {
			if n := stoppedAt[i] - beats[i]; n > 2 {
				t.Errorf("worker %d stopped %d heartbeats after the cancel, want at most 2", i+1, n)
			}
		}
		if r := jobOn(c, "g1", id).Regions[0]; !r.CancelAcked || r.WorkflowsCancelled != 4 {
			t.Fatalf("region %+v: want acked with 4 workflows cancelled", r)
		}
	})

	t.Run("times out by HLC", func(t *testing.T) {
		id := lifecycleJob(t, c, 1, "10m", "2s")
		waitStatus(t, c, id, fsm.JobStatusTimedOut)
		c.waitFor("region acknowledged the time-out", func() bool { return jobOn(c, "g1", id).Regions[0].CancelAcked })
	})

	t.Run("a departed worker's workflows move to another", func(t *testing.T) {
		id := lifecycleJob(t, c, 2, "3s", "10m")
		c.waitFor("both workflows leased", func() bool {
			n := 0
			for _, w := range workflowsOf(t, c, id) {
				if w.Status == fsm.WorkflowStatusLeased {
					n++
				}
			}
			return n == 2
		})
		stop[0]() // w1 leaves (deregisters): its leases go back
		waitStatus(t, c, id, fsm.JobStatusCompleted)
		for _, w := range workflowsOf(t, c, id) {
			if w.Worker != "" && w.Worker != "w2" {
				t.Errorf("%s ended on %s", w.ID, w.Worker)
			}
		}
	})
}
