package integration

import (
	"context"
	"net"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/cluster/devcluster"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// The job lifecycle on a real dev cluster (subnets 140-142): 3 regions of
// 1 gate + 3 managers, 2 reference workers per region, every one a
// process of its own. Jobs are submitted through the API and run by the
// workers; processes are killed with SIGKILL; a region is cut off from the
// gates by fault injection.

// lifecycleBreakerCooldown shortens the forwarder breaker's 30 s cooldown
// so the partition test heals quickly.
const lifecycleBreakerCooldown = 2 * time.Second

var allRegions = []string{"use1", "euw1", "apse1"}

func startLifecycleCluster(t *testing.T, subnet int) *devcluster.Cluster {
	return startClusterWith(t, devcluster.Options{SubnetBase: subnet, EnableFaultInjection: true, LogLevel: "info",
		WorkersPerRegion: 2, WorkerCapacity: 8}, []string{"STRATA_BREAKER_COOLDOWN=" + lifecycleBreakerCooldown.String()})
}

// lifecycleSpec is a job of tenant acme over regions, count workflows of
// duration d per region.
func lifecycleSpec(regions []string, count uint32, d, timeout time.Duration) *api.SubmitJobRequest {
	return &api.SubmitJobRequest{Tenant: "acme", Regions: regions, Timeout: fsm.Duration(timeout),
		Workflows: []fsm.WorkflowSpec{{Name: "load", Count: count, Duration: fsm.Duration(d), Rate: 20, FailureRatio: 0.05}}}
}

func submit(t *testing.T, cl *api.Client, spec *api.SubmitJobRequest) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, _, err := cl.SubmitJob(ctx, spec, api.WriteOptions{})
	if err != nil {
		t.Fatalf("submit: %v", err)
	}
	return res.JobID
}

// jobState reads a job from one gate's own ledger (eventual).
func jobState(cl *api.Client, id string) *fsm.JobState {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s, _, err := cl.Job(ctx, id, api.ReadOptions{Consistency: api.ConsistencyEventual})
	if err != nil {
		return nil
	}
	return s
}

// waitJob waits until every gate shows the job in want, and returns the
// gates' states.
func waitJob(t *testing.T, c *devcluster.Cluster, id string, want fsm.JobStatus, within time.Duration) []*fsm.JobState {
	t.Helper()
	var states []*fsm.JobState
	waitFor(t, "job "+id+" "+want.String()+" on every gate", within, func() bool {
		states = states[:0]
		for _, g := range nodesOf(c, cluster.RoleGate, "") {
			s := jobState(client(t, c, g), id)
			if s == nil || s.Status != want {
				return false
			}
			states = append(states, s)
		}
		return true
	})
	return states
}

// workflows lists the job's workflows in region (from its managers); nil
// while the region does not know the job yet.
func workflows(t *testing.T, c *devcluster.Cluster, region, id string) []fsm.WorkflowState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	wl, _, err := client(t, c, nodesOf(c, cluster.RoleManager, region)...).JobWorkflows(ctx, id, api.ReadOptions{})
	if err != nil {
		t.Logf("workflows of %s in %s: %v", id, region, err)
		return nil
	}
	return wl.Workflows
}

func TestLifecycle_Integration(t *testing.T) {
	c := startLifecycleCluster(t, 140)
	gates := client(t, c, nodesOf(c, cluster.RoleGate, "")...)

	t.Run("job across three regions completes; history and chain verify", func(t *testing.T) {
		start := time.Now()
		id := submit(t, gates, lifecycleSpec(allRegions, 2, 2*time.Second, 10*time.Minute))
		waitJob(t, c, id, fsm.JobStatusRunning, convergeWait)
		t.Logf("dispatch: RUNNING %s after submit", time.Since(start).Round(time.Millisecond))
		states := waitJob(t, c, id, fsm.JobStatusCompleted, convergeWait)
		t.Logf("completed %s after submit (workflows run 2 s)", time.Since(start).Round(time.Millisecond))
		for _, r := range states[0].Regions {
			if !r.Accepted || !r.Done || r.Completed+r.Failed != 2*2*20 {
				t.Errorf("region %s: %+v", r.Region, r)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		events, _, err := gates.JobEvents(ctx, id, api.Page{Limit: 1000}, api.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		count := map[fsm.EventType]int{}
		for _, e := range events.Events {
			count[e.Type]++
		}
		if count[fsm.TypeJobCreated] != 1 || count[fsm.TypeJobAccepted] != 3 || count[fsm.TypeJobCompleted] != 1 || count[fsm.TypeJobProgressReported] < 3 {
			t.Errorf("history: %v", count)
		}
		for _, g := range nodesOf(c, cluster.RoleGate, "") {
			if v, _, err := client(t, c, g).VerifyChain(ctx, "acme", api.ReadOptions{Consistency: api.ConsistencyEventual}); err != nil || !v.Verified {
				t.Errorf("chain on %s: %+v %v", g, v, err)
			}
		}
	})

	t.Run("cancel while running stops every region", func(t *testing.T) {
		id := submit(t, gates, lifecycleSpec(allRegions, 2, time.Minute, time.Hour))
		waitFor(t, "every region leased its workflows", convergeWait, func() bool {
			for _, r := range allRegions {
				ws := workflows(t, c, r, id)
				if len(ws) != 2 || slices.ContainsFunc(ws, func(w fsm.WorkflowState) bool { return w.Status != fsm.WorkflowStatusLeased }) {
					return false
				}
			}
			return true
		})
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		if _, _, err := gates.CancelJob(ctx, id, api.CancelJobRequest{Reason: "test"}, api.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		states := waitJob(t, c, id, fsm.JobStatusCancelled, convergeWait)
		for _, r := range states[0].Regions {
			if !r.CancelAcked || r.WorkflowsCancelled != 2 {
				t.Errorf("region %s: %+v", r.Region, r)
			}
		}
	})

	t.Run("kill -9 a worker: its workflows are rescheduled and the job completes", func(t *testing.T) {
		id := submit(t, gates, lifecycleSpec([]string{"euw1"}, 4, 8*time.Second, 10*time.Minute))
		var victim string
		waitFor(t, "workflows leased", convergeWait, func() bool {
			for _, w := range workflows(t, c, "euw1", id) {
				if w.Status == fsm.WorkflowStatusLeased {
					victim = w.Worker
					return true
				}
			}
			return false
		})
		killed := time.Now()
		if err := c.Kill(victim); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the killed worker's workflows rescheduled", convergeWait, func() bool {
			for _, w := range workflows(t, c, "euw1", id) {
				if w.Worker == victim && w.Status == fsm.WorkflowStatusLeased {
					return false
				}
			}
			return true
		})
		t.Logf("reschedule: %s after kill -9 of %s (ack window 5 s)", time.Since(killed).Round(time.Millisecond), victim)
		waitJob(t, c, id, fsm.JobStatusCompleted, convergeWait)
		moved := 0
		for _, w := range workflows(t, c, "euw1", id) {
			if w.Reschedules > 0 {
				moved++
			}
		}
		if moved == 0 {
			t.Fatal("no workflow was rescheduled")
		}
	})

	t.Run("kill -9 the regional leader: the job completes, no workflow runs twice", func(t *testing.T) {
		mgrs := client(t, c, nodesOf(c, cluster.RoleManager, "use1")...)
		id := submit(t, gates, lifecycleSpec([]string{"use1"}, 4, 6*time.Second, 10*time.Minute))
		waitFor(t, "workflows leased", convergeWait, func() bool {
			ws := workflows(t, c, "use1", id)
			return len(ws) == 4 && !slices.ContainsFunc(ws, func(w fsm.WorkflowState) bool { return w.Status != fsm.WorkflowStatusLeased })
		})
		leader := leaderOf(t, mgrs)
		if err := c.Kill(leader); err != nil {
			t.Fatal(err)
		}
		waitJob(t, c, id, fsm.JobStatusCompleted, convergeWait)
		// Every worker stayed alive and heartbeating through the new
		// leader, so no lease was taken back: each workflow ran on one
		// worker, once.
		for _, w := range workflows(t, c, "use1", id) {
			if w.Reschedules != 0 || w.Status != fsm.WorkflowStatusCompleted {
				t.Errorf("%s: %s after %d reschedules", w.ID, w.Status, w.Reschedules)
			}
		}
		if err := c.StartNode(leader); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a region cut off from the gates queues behind the breaker and replays in order", func(t *testing.T) {
		id := submit(t, gates, lifecycleSpec([]string{"use1", "apse1"}, 2, 3*time.Second, 10*time.Minute))
		waitFor(t, "apse1 accepted", convergeWait, func() bool {
			s := jobState(gates, id)
			return s != nil && s.Region("apse1").Accepted
		})
		cut := partitionFromGates(t, c, "apse1", true)
		// The workflows end while apse1 cannot reach the gates: its
		// "done" waits in the forwarder's queue behind the open breaker.
		apse1 := client(t, c, nodesOf(c, cluster.RoleManager, "apse1")...)
		var fw *api.ForwarderStatus
		waitFor(t, "apse1's breaker open with events queued", 2*convergeWait, func() bool {
			fw = forwarderOf(t, c, apse1)
			return fw != nil && fw.Breaker == "open" && fw.QueueDepth > 0
		})
		if s := jobState(gates, id); s.Status != fsm.JobStatusRunning || s.Region("apse1").Done {
			t.Fatalf("global ledger already saw apse1 finish while cut off: %+v", s)
		}
		partitionFromGates(t, c, "apse1", false)
		healed := time.Now()
		waitJob(t, c, id, fsm.JobStatusCompleted, convergeWait)
		t.Logf("breaker replay: job completed %s after the heal (cut at %s, cooldown %s, %d events queued)",
			time.Since(healed).Round(time.Millisecond), cut.Format(time.TimeOnly), lifecycleBreakerCooldown, fw.QueueDepth)
		// In order: apse1's events sit in the global chain in the order
		// apse1 decided them (HLC order).
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		events, _, err := gates.JobEvents(ctx, id, api.Page{Limit: 1000}, api.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var fromApse1 []fsm.StoredEvent
		for _, e := range events.Events {
			if e.Region == "apse1" {
				fromApse1 = append(fromApse1, e)
			}
		}
		sort.Slice(fromApse1, func(i, j int) bool { return fromApse1[i].Seq < fromApse1[j].Seq })
		for i := 1; i < len(fromApse1); i++ {
			if fromApse1[i].HLC.Less(fromApse1[i-1].HLC) {
				t.Fatalf("apse1 event %s (seq %d) reached the global chain before %s", fromApse1[i-1].Type, fromApse1[i-1].Seq, fromApse1[i].Type)
			}
		}
		if len(fromApse1) < 2 {
			t.Fatalf("only %d apse1 events in the global history", len(fromApse1))
		}
	})

	t.Run("time-out, and cancel racing completion, end the same on every gate", func(t *testing.T) {
		id := submit(t, gates, lifecycleSpec([]string{"use1"}, 1, time.Minute, 2*time.Second))
		waitJob(t, c, id, fsm.JobStatusTimedOut, convergeWait)
		for range 3 {
			id := submit(t, gates, lifecycleSpec([]string{"euw1"}, 1, time.Second, time.Minute))
			waitFor(t, "running", convergeWait, func() bool { s := jobState(gates, id); return s != nil && s.Status == fsm.JobStatusRunning })
			// Cancel from every gate at once as the workflow ends.
			for _, g := range nodesOf(c, cluster.RoleGate, "") {
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
					defer cancel()
					_, _, _ = client(t, c, g).CancelJob(ctx, id, api.CancelJobRequest{Reason: "race"}, api.WriteOptions{})
				}()
			}
			var final []*fsm.JobState
			waitFor(t, "a terminal state on every gate", convergeWait, func() bool {
				final = final[:0]
				for _, g := range nodesOf(c, cluster.RoleGate, "") {
					s := jobState(client(t, c, g), id)
					if s == nil || !s.Status.Terminal() || s.Status == fsm.JobStatusCancelled && !s.Regions[0].CancelAcked {
						return false
					}
					final = append(final, s)
				}
				return true
			})
			for _, s := range final[1:] {
				if s.Status != final[0].Status || s.Fence != final[0].Fence || s.Decision.EventID != final[0].Decision.EventID {
					t.Fatalf("gates disagree: %s/%d vs %s/%d", s.Status, s.Fence, final[0].Status, final[0].Fence)
				}
			}
		}
	})
}

// partitionFromGates cuts (or heals) every manager of region from every
// gate, in both directions (a rule on one side cuts both).
func partitionFromGates(t *testing.T, c *devcluster.Cluster, region string, cut bool) time.Time {
	t.Helper()
	var peers []map[string]any
	if cut {
		for _, g := range nodesOf(c, cluster.RoleGate, "") {
			n, _ := c.Node(g)
			host, _, err := net.SplitHostPort(n.Config.HTTPAddr)
			if err != nil {
				t.Fatal(err)
			}
			peers = append(peers, map[string]any{"peer": host, "partitioned": true})
		}
	}
	for _, m := range nodesOf(c, cluster.RoleManager, region) {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		_, err := client(t, c, m).SetFaults(ctx, map[string]any{"wan_latency": "0s", "peers": append([]map[string]any{}, peers...)}, nil)
		cancel()
		if err != nil {
			t.Fatalf("faults on %s: %v", m, err)
		}
	}
	return time.Now()
}

// forwarderOf returns the forwarder status of region's leader, or nil.
func forwarderOf(t *testing.T, c *devcluster.Cluster, mgrs *api.Client) *api.ForwarderStatus {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	leader := leaderOf(t, mgrs)
	st, _, err := client(t, c, leader).RaftStatus(ctx)
	if err != nil || len(st.Groups) == 0 {
		return nil
	}
	return st.Groups[0].Forwarder
}
