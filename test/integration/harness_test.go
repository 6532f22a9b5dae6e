package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/cluster/devcluster"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Bounds of every wait of these tests.
const (
	clusterStartWait = 90 * time.Second
	convergeWait     = 60 * time.Second
	callTimeout      = 10 * time.Second
)

// binary is the strata executable built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "strata-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "strata")
	build := exec.Command("go", "build", "-o", binary, "../../cmd/strata")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build strata:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startCluster starts a dev cluster on 127.0.<subnet..subnet+2>.x and
// stops it at cleanup (its logs are kept on failure).
func startCluster(t *testing.T, subnet int) *devcluster.Cluster {
	return startClusterWith(t, devcluster.Options{SubnetBase: subnet, EnableFaultInjection: true, LogLevel: "info"}, nil)
}

// startClusterWith starts a dev cluster with opts (its data in a test
// directory) and env added to every process's environment.
func startClusterWith(t *testing.T, opts devcluster.Options, env []string) *devcluster.Cluster {
	t.Helper()
	dir := t.TempDir()
	opts.DataDir = dir
	c, err := devcluster.New(devcluster.Config{Options: opts, Binary: binary, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.StopAll(); err != nil {
			t.Logf("stop: %v", err)
		}
		if t.Failed() {
			for _, n := range c.Nodes() {
				t.Logf("log of %s: %s", n.ID(), n.LogPath)
			}
			keep, _ := os.MkdirTemp("", "strata-failed-")
			_ = exec.Command("cp", "-r", dir, keep).Run()
			t.Logf("data and logs kept in %s", keep)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), clusterStartWait)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

// client returns an API client over the given nodes.
func client(t *testing.T, c *devcluster.Cluster, ids ...string) *api.Client {
	t.Helper()
	var addrs []string
	for _, id := range ids {
		n, err := c.Node(id)
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, n.Config.HTTPAddr)
	}
	cl, err := api.New(api.ClientConfig{Addrs: addrs, Token: c.Token(), Timeout: callTimeout})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// nodesOf returns the ids of the nodes with role (and region, if not "").
func nodesOf(c *devcluster.Cluster, role cluster.Role, region string) []string {
	var out []string
	for _, n := range c.Nodes() {
		if n.Config.Role == role && (region == "" || n.Config.Region == region) {
			out = append(out, n.ID())
		}
	}
	return out
}

// leaderOf asks a node of the group for its leader, waiting for one.
func leaderOf(t *testing.T, cl *api.Client) string {
	t.Helper()
	var leader string
	waitFor(t, "a leader", convergeWait, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		st, _, err := cl.RaftStatus(ctx)
		if err != nil || len(st.Groups) == 0 {
			return false
		}
		leader = st.Groups[0].Leader
		return leader != ""
	})
	return leader
}

func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		<-tick.C
	}
}

// jobSpec is a small job of tenant acme in region.
func jobSpec(region string) *api.SubmitJobRequest {
	return &api.SubmitJobRequest{Tenant: "acme", Regions: []string{region}, Timeout: fsm.Duration(10 * time.Minute),
		Workflows: []fsm.WorkflowSpec{{Name: "checkout", Count: 1, Duration: fsm.Duration(time.Second), Rate: 10}}}
}

// acks records acknowledged writes and when writes succeeded, to measure
// how long writes stopped after a kill.
type acks struct {
	mu    sync.Mutex
	ids   []string
	times []time.Time
	// starts is when the call of each acknowledgement began.
	starts []time.Time
	fails  int
}

// ok records id, acknowledged now for a call that began at started.
func (a *acks) ok(id string, started time.Time) {
	a.mu.Lock()
	a.ids = append(a.ids, id)
	a.times = append(a.times, time.Now())
	a.starts = append(a.starts, started)
	a.mu.Unlock()
}

func (a *acks) failed() {
	a.mu.Lock()
	a.fails++
	a.mu.Unlock()
}

// resumedAfter is the time from t0 to the first acknowledgement of a call
// begun after t0 (the write outage a kill at t0 caused), or -1 if none.
// Calls begun before t0 do not count: their writes may have committed
// before the kill, with only the answer arriving after it.
func (a *acks) resumedAfter(t0 time.Time) time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, at := range a.times {
		if a.starts[i].After(t0) {
			return at.Sub(t0)
		}
	}
	return -1
}

func (a *acks) snapshot() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.ids...)
}

// writeJobs submits jobs from `writers` goroutines until ctx ends and
// records the acknowledged ones.
func writeJobs(ctx context.Context, cl *api.Client, writers int, durability, region string, a *acks) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for ctx.Err() == nil {
				started := time.Now()
				cctx, cancel := context.WithTimeout(ctx, callTimeout)
				res, _, err := cl.SubmitJob(cctx, jobSpec(region), api.WriteOptions{Durability: durability})
				cancel()
				if err != nil {
					a.failed()
					continue
				}
				a.ok(res.JobID, started)
			}
		})
	}
	return &wg
}

// requireJobs checks with strong reads that every job id exists.
func requireJobs(t *testing.T, cl *api.Client, ids []string) {
	t.Helper()
	for _, id := range ids {
		waitFor(t, "job "+id, convergeWait, func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			_, _, err := cl.Job(ctx, id, api.ReadOptions{Consistency: api.ConsistencyStrong})
			return err == nil
		})
	}
}
