package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/lifecycle/plan"
	"github.com/strata-ledger/strata/cluster/worker"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Cluster-wide maintenance and draining on real nodes (issue 18 §2;
// subnets 126 and 127): two regions, use1 (gates g1..g3, managers
// m1..m3 on 127.0.126.*) and euw1 (gate eg1, managers em1..em3 on
// 127.0.127.*), one reference worker in each.

// startTwoRegions starts use1, waits until it is ready, then euw1. eg1
// never bootstraps a group of its own (bootstrap_expect above the gates
// it sees): the gates' leader adds it to theirs.
func startTwoRegions(t *testing.T) *testCluster {
	t.Helper()
	c := startNodes(t, 126, true)
	var seeds []string
	for i := 1; i <= 4; i++ {
		seeds = append(seeds, fmt.Sprintf("127.0.127.%d:7300", i))
	}
	for i := 1; i <= 4; i++ {
		ip := fmt.Sprintf("127.0.127.%d", i)
		cfg := DefaultNodeConfig()
		cfg.Region, cfg.Tokens, cfg.ClusterToken = "euw1", testTokens(), testClusterToken
		cfg.HTTPAddr, cfg.RaftAddr, cfg.GossipAddr = ip+":7100", ip+":7200", ip+":7300"
		cfg.Join, cfg.EnableFaultInjection, cfg.SessionWait = seeds, true, 2*time.Second
		if i == 1 {
			cfg.NodeID, cfg.Role, cfg.GossipWANAddr, cfg.BootstrapExpect = "eg1", RoleGate, ip+":7400", 5
			cfg.JoinWAN = []string{"127.0.126.1:7400"}
		} else {
			cfg.NodeID, cfg.Role, cfg.DataPlaneAddr = fmt.Sprintf("em%d", i-1), RoleManager, ip+":7500"
		}
		cfg.DataDir = filepath.Join(c.base, cfg.NodeID)
		c.cfgs = append(c.cfgs, cfg)
		c.start(cfg.NodeID)
	}
	// eg1 joins the gates' group as a non-voter (DESIGN §1: the gates
	// beyond the voters), so euw1's forwarder reaches the global ledger.
	rep := c.call("g1", "POST", "/v1/cluster/raft/join", testAdminToken, []byte(`{"node_id":"eg1","raft_addr":"127.0.127.1:7200","non_voter":true}`))
	if rep.status != http.StatusOK {
		t.Fatalf("join eg1: %d %s", rep.status, rep.body)
	}
	for _, id := range []string{"eg1", "em1", "em2", "em3"} {
		c.waitReady(id)
	}
	return c
}

// regionLeader is the id of region's manager leader among running nodes.
func (c *testCluster) regionLeader(region string) string {
	c.t.Helper()
	var id string
	c.waitFor(region+" manager leader", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for nid, n := range c.nodes {
			if n.cfg.Role == RoleManager && n.cfg.Region == region && n.raft.IsLeader() {
				id = nid
				return true
			}
		}
		return false
	})
	return id
}

// regionWorkflows is the job's workflows in region's leader's ledger.
func regionWorkflows(t *testing.T, c *testCluster, region, jobID string) []*fsm.WorkflowState {
	t.Helper()
	var out []*fsm.WorkflowState
	err := c.node(c.regionLeader(region)).store.View(func(tx fsm.ReadTx) error {
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

// regionLeases counts the job's WorkflowLeased and drain reschedules in
// region's leader's ledger.
func regionLeases(t *testing.T, c *testCluster, region, jobID string) (leased, drained int) {
	t.Helper()
	page, err := c.node(c.regionLeader(region)).ledger.JobEvents(fsm.EventQuery{Tenant: "acme", JobID: jobID, Limit: fsm.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Events {
		switch b := e.Body.(type) {
		case *fsm.WorkflowLeased:
			leased++
		case *fsm.WorkflowRescheduled:
			if b.Reason == plan.DrainReason {
				drained++
			}
		}
	}
	return leased, drained
}

// startRegionWorker runs reference worker id in region against managers.
func startRegionWorker(t *testing.T, c *testCluster, region, id string, managers ...string) {
	t.Helper()
	var addrs []string
	for _, m := range managers {
		addrs = append(addrs, c.cfg(m).HTTPAddr)
	}
	cl, err := api.New(api.ClientConfig{Addrs: addrs, Token: testAdminToken})
	if err != nil {
		t.Fatal(err)
	}
	r, err := worker.New(worker.Config{Client: cl, Region: region, Capacity: 8, WorkerID: id,
		Logger: slog.New(slog.DiscardHandler), ProgressInterval: 200 * time.Millisecond, LeaseWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	t.Cleanup(cancel)
	wg.Go(func() { _ = r.Run(ctx) })
}

// submitTo submits a job of acme over regions: count workflows of
// duration d each.
func submitTo(t *testing.T, c *testCluster, d time.Duration, count int, regions ...string) string {
	t.Helper()
	rs, _ := json.Marshal(regions)
	body := fmt.Appendf(nil, `{"tenant":"acme","regions":%s,"timeout":"10m",`+
		`"workflows":[{"name":"load","count":%d,"duration":%q,"rate":20,"failure_ratio":0}]}`, rs, count, d.String())
	rep := c.call("g1", "POST", "/v1/jobs", testAcmeToken, body)
	if rep.status != http.StatusCreated {
		t.Fatalf("submit: %d %s", rep.status, rep.body)
	}
	var out api.SubmitJobResponse
	rep.decode(t, &out)
	return out.JobID
}

// clusterMaintenance is GET /v1/maintenance/cluster from node.
func clusterMaintenance(t *testing.T, c *testCluster, node string) api.ClusterMaintenanceStatus {
	t.Helper()
	rep := c.call(node, "GET", api.PathClusterMaintenance, testReaderToken, nil)
	if rep.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", api.PathClusterMaintenance, rep.status, rep.body)
	}
	var st api.ClusterMaintenanceStatus
	rep.decode(t, &st)
	return st
}

// setClusterMaintenance switches the cluster's mode through node.
func setClusterMaintenance(t *testing.T, c *testCluster, node, body string) api.MaintenanceResponse {
	t.Helper()
	rep := c.call(node, "POST", api.PathClusterMaintenance, testAdminToken, []byte(body))
	if rep.status != http.StatusOK {
		t.Fatalf("POST %s %s: %d %s", api.PathClusterMaintenance, body, rep.status, rep.body)
	}
	var out api.MaintenanceResponse
	rep.decode(t, &out)
	return out
}

// waitRegionsHold waits until every region answers GET
// /v1/maintenance/cluster holding the cluster's current record, in
// effect as want (on, drain, by).
func waitRegionsHold(t *testing.T, c *testCluster, want map[string]api.MaintenanceEffect) {
	t.Helper()
	c.waitFor("every region to hold the cluster's maintenance mode", func() bool {
		st := clusterMaintenance(t, c, "g2")
		if len(st.Regions) != len(want) || st.Cluster.HLC == nil {
			return false
		}
		for _, r := range st.Regions {
			w, ok := want[r.Region]
			if !ok || r.Cluster == nil || r.Cluster.HLC == nil || *r.Cluster.HLC != *st.Cluster.HLC || r.Effective == nil ||
				r.Effective.On != w.On || r.Effective.Drain != w.Drain || !slices.Equal(r.Effective.By, w.By) {
				return false
			}
		}
		return true
	})
}

func TestClusterMaintenance(t *testing.T) {
	c := startTwoRegions(t)
	startRegionWorker(t, c, "use1", "w-use1", "m1", "m2", "m3")
	startRegionWorker(t, c, "euw1", "w-euw1", "em1", "em2", "em3")
	both := []string{"use1", "euw1"}

	t.Run("bad requests are refused and change nothing", func(t *testing.T) {
		for _, bad := range []struct {
			token, body string
			status      int
		}{
			{testAcmeToken, `{"on":true,"reason":"r","ticket":"T"}`, http.StatusForbidden},
			{testAdminToken, `{"on":true,"reason":"r"}`, http.StatusBadRequest},
			{testAdminToken, `{"on":false,"drain":true,"reason":"r","ticket":"T"}`, http.StatusBadRequest},
			{testAdminToken, `{"on":true,"reason":"r","ticket":"T","scope":"x"}`, http.StatusBadRequest},
		} {
			rep := c.call("m1", "POST", api.PathClusterMaintenance, bad.token, []byte(bad.body))
			if rep.status != bad.status {
				t.Errorf("POST %s: %d %s, want %d", bad.body, rep.status, rep.body, bad.status)
			} else {
				rep.apiError(t)
			}
		}
		if st := clusterMaintenance(t, c, "g3"); st.Cluster.HLC != nil || st.Cluster.On {
			t.Fatalf("a refused request changed the cluster's mode: %+v", st.Cluster)
		}
	})

	t.Run("on holds every region, a region down when switched included, and a leader kill; off lets leases flow", func(t *testing.T) {
		for _, id := range []string{"eg1", "em1", "em2", "em3"} { // euw1 is down when the mode is switched
			c.stop(id)
		}
		on := setClusterMaintenance(t, c, "m2", `{"on":true,"reason":"fleet upgrade","ticket":"OPS-9"}`)
		if on.Maintenance.Scope != api.MaintenanceScopeCluster || !on.Maintenance.On || on.Durability != "GLOBAL" {
			t.Fatalf("on: %+v", on)
		}
		for _, id := range []string{"eg1", "em1", "em2", "em3"} {
			c.start(id)
		}
		cluster := []string{"cluster"}
		waitRegionsHold(t, c, map[string]api.MaintenanceEffect{"use1": {On: true, By: cluster}, "euw1": {On: true, By: cluster}})
		// Every status call reaches every region: the gate of another
		// region forwards to any of its managers, follower or leader
		// (a strong read there was a third hop, refused: 503 two times in
		// three). Twelve calls from both regions' gates.
		for i := range 12 {
			for _, r := range clusterMaintenance(t, c, []string{"g1", "eg1"}[i%2]).Regions {
				if r.Error != "" {
					t.Fatalf("status call %d: region %s: %s", i, r.Region, r.Error)
				}
			}
		}

		id := submitTo(t, c, 300*time.Millisecond, 2, both...)
		for _, r := range both {
			c.waitFor("the job's workflows dispatched in "+r, func() bool { return len(regionWorkflows(t, c, r, id)) == 2 })
		}
		// Reads and status calls answer while no region grants a lease.
		for _, p := range []string{"/v1/jobs/" + id, "/v1/jobs/" + id + "/workflows", "/v1/jobs?tenant=acme", api.PathMaintenance} {
			if rep := c.call("em2", "GET", p, testAcmeToken, nil); rep.status != http.StatusOK {
				t.Fatalf("GET %s in maintenance: %d %s", p, rep.status, rep.body)
			}
		}
		var st api.ClusterStatus
		if rep := c.call("m3", "GET", api.PathClusterStatus, testAdminToken, nil); rep.status != http.StatusOK {
			t.Fatalf("status: %d %s", rep.status, rep.body)
		} else if rep.decode(t, &st); st.Maintenance == nil || st.Maintenance.On || st.Maintenance.Effective == nil || !st.Maintenance.Effective.On {
			t.Fatalf("a manager's status under the cluster's mode: %+v", st.Maintenance)
		}
		// The region's leader dies: the next one holds the mode (it is in the ledger).
		old := c.regionLeader("use1")
		c.stop(old)
		next := c.regionLeader("use1")
		c.start(old)
		c.waitReady(old)
		waitRegionsHold(t, c, map[string]api.MaintenanceEffect{"use1": {On: true, By: cluster}, "euw1": {On: true, By: cluster}})
		for _, r := range both {
			if leased, _ := regionLeases(t, c, r, id); leased != 0 {
				t.Fatalf("%s granted %d leases under the cluster's maintenance (use1 led by %s, then %s)", r, leased, old, next)
			}
		}
		off := setClusterMaintenance(t, c, "g1", `{"on":false,"reason":"done","ticket":"OPS-9"}`)
		waitStatus(t, c, id, fsm.JobStatusCompleted)
		for _, r := range both {
			if leased := firstLeaseMsIn(t, c, r, id); leased < off.HLC.WallMs {
				t.Fatalf("%s leased at %d, before the cluster's maintenance ended at %d", r, leased, off.HLC.WallMs)
			}
		}
	})

	t.Run("a region in its own maintenance stays there when the cluster's goes off", func(t *testing.T) {
		rep := c.call("m1", "POST", api.PathMaintenance, testAdminToken, []byte(`{"region":"use1","on":true,"reason":"kernel","ticket":"OPS-7"}`))
		if rep.status != http.StatusOK {
			t.Fatalf("use1 on: %d %s", rep.status, rep.body)
		}
		setClusterMaintenance(t, c, "g2", `{"on":true,"reason":"fleet","ticket":"OPS-10"}`)
		waitRegionsHold(t, c, map[string]api.MaintenanceEffect{"use1": {On: true, By: []string{"region", "cluster"}},
			"euw1": {On: true, By: []string{"cluster"}}})
		setClusterMaintenance(t, c, "g3", `{"on":false,"reason":"fleet done","ticket":"OPS-10"}`)
		waitRegionsHold(t, c, map[string]api.MaintenanceEffect{"use1": {On: true, By: []string{"region"}}, "euw1": {By: []string{}}})
		id := submitTo(t, c, 300*time.Millisecond, 1, both...)
		c.waitFor("euw1's workflow completed", func() bool {
			wfs := regionWorkflows(t, c, "euw1", id)
			return len(wfs) == 1 && wfs[0].Status == fsm.WorkflowStatusCompleted
		})
		if wfs := regionWorkflows(t, c, "use1", id); len(wfs) != 1 || wfs[0].Status != fsm.WorkflowStatusDispatched {
			t.Fatalf("use1, in its own maintenance, ran its workflow: %+v", wfs)
		}
		rep = c.call("m2", "POST", api.PathMaintenance, testAdminToken, []byte(`{"region":"use1","on":false,"reason":"done","ticket":"OPS-7"}`))
		if rep.status != http.StatusOK {
			t.Fatalf("use1 off: %d %s", rep.status, rep.body)
		}
		waitStatus(t, c, id, fsm.JobStatusCompleted)
	})

	t.Run("drain takes running workflows back, keeps their progress, and they complete after off", func(t *testing.T) {
		id := submitTo(t, c, 6*time.Second, 2, both...)
		for _, r := range both {
			c.waitFor("progress recorded in "+r, func() bool {
				wfs := regionWorkflows(t, c, r, id)
				return len(wfs) == 2 && wfs[0].Status == fsm.WorkflowStatusLeased && wfs[0].Completed > 0 &&
					wfs[1].Status == fsm.WorkflowStatusLeased && wfs[1].Completed > 0
			})
		}
		before := map[string]uint64{}
		for _, r := range both {
			for _, w := range regionWorkflows(t, c, r, id) {
				before[w.ID] = w.Completed
			}
		}
		setClusterMaintenance(t, c, "g1", `{"on":true,"drain":true,"reason":"migration","ticket":"OPS-11"}`)
		for _, r := range both {
			c.waitFor("every workflow drained in "+r, func() bool {
				for _, w := range regionWorkflows(t, c, r, id) {
					if w.Status != fsm.WorkflowStatusDispatched {
						return false
					}
				}
				return true
			})
			for _, w := range regionWorkflows(t, c, r, id) {
				if w.Completed < before[w.ID] || w.Reschedules == 0 {
					t.Fatalf("%s drained without its progress (%d, was %d) or reschedule (%d)", w.ID, w.Completed, before[w.ID], w.Reschedules)
				}
			}
			if _, drained := regionLeases(t, c, r, id); drained != 2 {
				t.Fatalf("%s: %d drain reschedules, want 2", r, drained)
			}
		}
		if s := jobOn(c, "g1", id); s == nil || s.Status != fsm.JobStatusRunning {
			t.Fatalf("a drained job is not running: %+v", s)
		}
		setClusterMaintenance(t, c, "g2", `{"on":false,"reason":"migrated","ticket":"OPS-11"}`)
		waitStatus(t, c, id, fsm.JobStatusCompleted)
		for _, r := range both {
			for _, w := range regionWorkflows(t, c, r, id) {
				if w.Status != fsm.WorkflowStatusCompleted || w.LeaseFence < 2 {
					t.Fatalf("%s after off: %s at fence %d (want COMPLETED under a new lease)", w.ID, w.Status, w.LeaseFence)
				}
			}
		}
	})
}

// firstLeaseMsIn is the HLC wall time of the job's first WorkflowLeased
// in region's leader's ledger, 0 if none.
func firstLeaseMsIn(t *testing.T, c *testCluster, region, jobID string) int64 {
	t.Helper()
	page, err := c.node(c.regionLeader(region)).ledger.JobEvents(fsm.EventQuery{Tenant: "acme", JobID: jobID, Limit: fsm.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Events {
		if e.Type == fsm.TypeWorkflowLeased {
			return e.HLC.WallMs
		}
	}
	return 0
}
