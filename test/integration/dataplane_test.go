package integration

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/cluster/devcluster"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/progress"
)

// TestDataPlane_LocalAggregateSurvivesLeaderKill (issue 14): progress
// frames folded by the regional leader and acknowledged at LOCAL (in its
// NodeWAL) while it is cut off from its group survive kill -9 of that
// leader and reach the regional ledger once it is back. The test is the
// worker: it registers, heartbeats through the other managers, and sends
// frames to the leader's data_plane_addr.
func TestDataPlane_LocalAggregateSurvivesLeaderKill(t *testing.T) {
	c := startCluster(t, 133)
	mgrs := nodesOf(c, cluster.RoleManager, "use1")
	leader := leaderOf(t, client(t, c, mgrs...))
	var others []string
	for _, m := range mgrs {
		if m != leader {
			others = append(others, m)
		}
	}
	lcl, ocl := client(t, c, leader), client(t, c, others...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*convergeWait)
	defer cancel()

	// Register with the leader and take the lease of a long job's one
	// workflow (the cluster has no other worker).
	reg, _, err := lcl.RegisterWorker(ctx, &api.RegisterWorkerRequest{WorkerID: "dp-kill", Region: "use1", Capacity: 1})
	if err != nil || reg.DataPlane == nil {
		t.Fatalf("register: %+v, %v", reg, err)
	}
	job, _, err := client(t, c, nodesOf(c, cluster.RoleGate, "use1")...).SubmitJob(ctx, &api.SubmitJobRequest{Tenant: "acme",
		Regions: []string{"use1"}, Timeout: fsm.Duration(10 * time.Minute),
		Workflows: []fsm.WorkflowSpec{{Name: "load", Count: 1, Duration: fsm.Duration(10 * time.Minute), Rate: 10}}}, api.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lease api.Lease
	waitFor(t, "the workflow's lease", convergeWait, func() bool {
		l, _, err := ocl.Leases(ctx, "dp-kill", 0, time.Second)
		if err != nil || len(l.Leases) == 0 {
			return false
		}
		lease = l.Leases[0]
		return true
	})
	hbCtx, stopBeats := context.WithCancel(ctx)
	var beats sync.WaitGroup
	var each []*api.Client // one client per manager: a slow node never holds a beat
	for _, m := range mgrs {
		each = append(each, client(t, c, m))
	}
	beats.Go(func() { heartbeat(hbCtx, each, "dp-kill", lease) })
	defer func() { stopBeats(); beats.Wait() }()

	key, err := base64.StdEncoding.DecodeString(reg.DataPlane.Key)
	if err != nil {
		t.Fatal(err)
	}
	s, err := progress.NewSender(progress.SenderConfig{Addr: reg.DataPlane.UDPAddr, Network: "udp",
		Encoder: progress.EncoderConfig{Worker: "dp-kill", KeyID: reg.DataPlane.KeyID, Key: key}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	send := func(completed uint64) {
		if err := s.Set(progress.Update{Workflow: lease.Workflow, Fence: lease.LeaseFence, Completed: completed}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// recorded reads the workflow's counter with a strong read through
	// the other managers, waiting out an election.
	recorded := func() uint64 {
		var got uint64
		waitFor(t, "a strong read of the workflow", convergeWait, func() bool {
			rctx, rcancel := context.WithTimeout(ctx, callTimeout)
			defer rcancel()
			l, _, err := ocl.JobWorkflows(rctx, job.JobID, api.ReadOptions{Consistency: api.ConsistencyStrong})
			if err != nil || len(l.Workflows) != 1 {
				return false
			}
			got = l.Workflows[0].Completed
			return true
		})
		return got
	}
	waitFor(t, "100 in the regional ledger", convergeWait, func() bool { send(100); return recorded() == 100 })

	// Cut the leader off from its group: what it folds now can reach its
	// NodeWAL (LOCAL) and nothing further.
	var cut []map[string]any
	for _, m := range others {
		n, _ := c.Node(m)
		host, _, _ := net.SplitHostPort(n.Config.HTTPAddr)
		cut = append(cut, map[string]any{"peer": host, "partitioned": true})
	}
	if _, err := lcl.SetFaults(ctx, map[string]any{"peers": cut}, nil); err != nil {
		t.Fatal(err)
	}
	n, _ := c.Node(leader)
	local0 := metricValue(t, n.Config.HTTPAddr, c.Token(), "strata_progress_local_events_total")
	waitFor(t, "200 acknowledged at LOCAL on the cut-off leader", convergeWait, func() bool {
		send(200)
		return metricValue(t, n.Config.HTTPAddr, c.Token(), "strata_progress_local_events_total") > local0
	})
	if got := recorded(); got != 100 {
		t.Fatalf("the group holds %d while its old leader is cut off, want 100: the test did not cut it off", got)
	}
	if err := c.Kill(leader); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(leader); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the LOCAL-acknowledged 200 in the regional ledger after the restart", convergeWait, func() bool { return recorded() == 200 })

	// Staged only: a manager that commits once an hour still has what it
	// folded in its NodeWAL within milliseconds (a staged record); kill
	// -9 it before any commit, and the restarted manager (back to the
	// normal interval) commits it from the NodeWAL.
	// x is a follower now, so that its restarts move no leadership, and
	// the lease must still be the worker's (heartbeats kept it).
	x := others[0]
	if now := leaderOf(t, ocl); now == x {
		x = others[1]
	}
	xn, _ := c.Node(x)
	requireLease(t, ctx, ocl, job.JobID, lease)
	if err := c.Reconfigure(x, func(cfg *cluster.NodeConfig) { cfg.DataPlaneCommitInterval = time.Hour }); err != nil {
		t.Fatal(err)
	}
	restart(t, c, x)
	xs, err := progress.NewSender(progress.SenderConfig{Addr: xn.Config.DataPlaneAddr, Network: "udp",
		Encoder: progress.EncoderConfig{Worker: "dp-kill", KeyID: reg.DataPlane.KeyID, Key: key}})
	if err != nil {
		t.Fatal(err)
	}
	defer xs.Close()
	staged0 := metricValue(t, xn.Config.HTTPAddr, c.Token(), "strata_progress_local_seconds_count")
	sendStart := time.Now()
	waitFor(t, "300 staged on "+x, convergeWait, func() bool {
		if err := xs.Set(progress.Update{Workflow: lease.Workflow, Fence: lease.LeaseFence, Completed: 300}); err != nil {
			t.Fatal(err)
		}
		if _, err := xs.Flush(); err != nil {
			return false // the restarted manager may not listen yet
		}
		staged := metricValue(t, xn.Config.HTTPAddr, c.Token(), "strata_progress_local_seconds_count") > staged0
		if !staged && time.Since(sendStart) > convergeWait-5*time.Second { // about to time out: say why
			t.Logf("%s has staged nothing; its drops: %v", x, metricLines(t, xn.Config.HTTPAddr, c.Token(), "strata_progress_dropped_total"))
			requireLease(t, ctx, ocl, job.JobID, lease)
		}
		return staged
	})
	if got := recorded(); got != 200 {
		t.Fatalf("the group holds %d before %s committed anything, want 200", got, x)
	}
	if err := c.Kill(x); err != nil {
		t.Fatal(err)
	}
	if err := c.Reconfigure(x, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(x); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the staged 300 in the regional ledger after the restart", convergeWait, func() bool { return recorded() == 300 })
}

// restart stops node id gracefully and starts it again (its config read
// anew).
func restart(t *testing.T, c *devcluster.Cluster, id string) {
	t.Helper()
	if err := c.Stop(id); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(id); err != nil {
		t.Fatal(err)
	}
}

// requireLease fails the test unless the job's workflow is still leased
// to the worker at the lease's fence.
func requireLease(t *testing.T, ctx context.Context, cl *api.Client, jobID string, l api.Lease) {
	t.Helper()
	rctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	wfs, _, err := cl.JobWorkflows(rctx, jobID, api.ReadOptions{Consistency: api.ConsistencyStrong})
	if err != nil || len(wfs.Workflows) != 1 {
		t.Fatalf("workflows of %s: %+v, %v", jobID, wfs, err)
	}
	if wf := wfs.Workflows[0]; wf.Worker != "dp-kill" || wf.LeaseFence != l.LeaseFence {
		t.Fatalf("the lease moved: workflow %s is %s, held by %q at fence %d (the test's lease: fence %d)",
			wf.ID, wf.Status, wf.Worker, wf.LeaseFence, l.LeaseFence)
	}
}

// metricLines are the samples of a metric family on a node.
func metricLines(t *testing.T, addr, token, family string) []string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return []string{err.Error()}
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), family) {
			out = append(out, sc.Text())
		}
	}
	return out
}

// heartbeat keeps the worker's lease until ctx ends: every 300 ms it
// tries the managers one by one (1 s each) until one answers, so that a
// manager being killed, cut off or restarted never costs the worker its
// ack window (5 s).
func heartbeat(ctx context.Context, clients []*api.Client, id string, l api.Lease) {
	t := time.NewTicker(300 * time.Millisecond)
	defer t.Stop()
	req := &api.HeartbeatRequest{Running: []api.RunningWorkflow{{Workflow: l.Workflow, LeaseFence: l.LeaseFence}}}
	for {
		for _, cl := range clients {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			_, _, err := cl.Heartbeat(cctx, id, req)
			cancel()
			if err == nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// metricValue reads an unlabelled sample from a node's /metrics (0 if
// the node does not answer).
func metricValue(t *testing.T, addr, token, name string) float64 {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(fmt.Errorf("metric: %w", err))
			}
			return f
		}
	}
	return 0
}
