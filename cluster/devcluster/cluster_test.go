package devcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/auth"
)

// Each launcher test takes its own subnets (two regions each) far from the
// dev default, so tests never collide with each other or a dev cluster.
const (
	subnetLifecycle  = 201
	subnetExit       = 203
	subnetFailFast   = 205
	subnetIgnoreTerm = 207
	subnetNotReady   = 209
	subnetRestart    = 211
	subnetPortInUse  = 213
	subnetWorkers    = 215

	testStartTimeout = 30 * time.Second
)

type testCluster struct {
	*Cluster
	exits chan Exit
}

// newTestCluster plans two regions of one gate and one manager, run by
// fake agents; env adds fake behaviour. StopAll runs at cleanup.
func newTestCluster(t *testing.T, dir string, subnet int, env ...string) *testCluster {
	t.Helper()
	return newTestClusterWith(t, dir, subnet, nil, env...)
}

// newTestClusterWith is newTestCluster with options adjusted by mod.
func newTestClusterWith(t *testing.T, dir string, subnet int, mod func(*Options), env ...string) *testCluster {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	tc := &testCluster{exits: make(chan Exit, 16)}
	o := Options{DataDir: dir, Regions: []string{"use1", "euw1"}, ManagersPerRegion: 1, SubnetBase: subnet}
	if mod != nil {
		mod(&o)
	}
	c, err := New(Config{
		Options: o,
		Binary:  bin,
		// A race-enabled binary sleeps 1 s at exit unless told not to.
		Env:         append([]string{fakeAgentEnv + "=1", "GORACE=atexit_sleep_ms=0"}, env...),
		StopTimeout: 5 * time.Second,
		OnExit: func(e Exit) {
			select {
			case tc.exits <- e:
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tc.Cluster = c
	t.Cleanup(func() {
		if err := c.StopAll(); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return tc
}

func startCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testStartTimeout)
	t.Cleanup(cancel)
	return ctx
}

func readyStatus(addr string) (int, error) {
	c := http.Client{Timeout: time.Second}
	resp, err := c.Get("http://" + addr + "/readyz")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func TestCluster_StartKillRestartStop(t *testing.T) {
	// Nodes must not inherit config from the launcher's environment: the
	// fake exits if they do, and Start would fail.
	t.Setenv("STRATA_HTTP_ADDR", "127.0.0.1:1")
	c := newTestCluster(t, t.TempDir(), subnetLifecycle)
	if err := c.Start(startCtx(t)); err != nil {
		t.Fatal(err)
	}
	nodes := c.Nodes()
	if len(nodes) != 4 {
		t.Fatalf("%d nodes, want 4", len(nodes))
	}
	pids := make(map[int]string)
	for _, n := range nodes {
		pid := c.PID(n.ID())
		if pid == 0 || pids[pid] != "" {
			t.Fatalf("%s pid %d (pids %v)", n.ID(), pid, pids)
		}
		pids[pid] = n.ID()
		if code, err := readyStatus(n.Config.HTTPAddr); code != http.StatusOK {
			t.Fatalf("%s readyz: %d %v", n.ID(), code, err)
		}
		if m := fileMode(t, n.ConfigPath); m != 0o600 {
			t.Errorf("%s agent.yaml mode %v, want 0600", n.ID(), m)
		}
	}
	checkClusterFile(t, c.Cluster)

	mgr := nodes[1].ID()
	if err := c.Kill(mgr); err != nil {
		t.Fatal(err)
	}
	if c.PID(mgr) != 0 {
		t.Fatalf("%s still has a pid after Kill", mgr)
	}
	if _, err := readyStatus(nodes[1].Config.HTTPAddr); err == nil {
		t.Fatalf("%s still answers after Kill", mgr)
	}
	if err := c.Kill(mgr); err != nil {
		t.Fatalf("Kill of a stopped node: %v", err)
	}
	if err := c.StartNode(mgr); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode(mgr); !errors.Is(err, ErrRunning) {
		t.Fatalf("second StartNode: err = %v, want ErrRunning", err)
	}
	if err := c.WaitReady(startCtx(t), mgr); err != nil {
		t.Fatal(err)
	}
	checkClusterFile(t, c.Cluster)

	gate := nodes[0].ID()
	before := c.PID(gate)
	if err := c.Restart(gate); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(startCtx(t), gate); err != nil {
		t.Fatal(err)
	}
	if after := c.PID(gate); after == before || after == 0 {
		t.Fatalf("%s pid %d after Restart, was %d", gate, after, before)
	}
	if err := c.Stop(gate); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := c.StopAll(); err != nil {
		t.Fatalf("StopAll: %v", err)
	}
	for _, n := range nodes {
		if c.PID(n.ID()) != 0 {
			t.Errorf("%s runs after StopAll", n.ID())
		}
	}
	select {
	case e := <-c.exits:
		t.Fatalf("requested stops reported as unexpected: %+v", e)
	default:
	}
	if err := c.WaitReady(startCtx(t), gate); !errors.Is(err, ErrExited) && !errors.Is(err, ErrNotRunning) {
		t.Fatalf("WaitReady of a stopped node: %v", err)
	}
}

// checkClusterFile compares DATA/cluster.json with ClusterFile.
func checkClusterFile(t *testing.T, c *Cluster) {
	t.Helper()
	path := filepath.Join(c.DataDir(), clusterFileName)
	if m := fileMode(t, path); m != 0o600 {
		t.Errorf("cluster.json mode %v, want 0600", m)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeClusterFile(b)
	if err != nil {
		t.Fatal(err)
	}
	want := c.ClusterFile()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("cluster.json\n%+v\nwant\n%+v", got, want)
	}
	if got.Token != c.Token() || got.DataDir != c.DataDir() {
		t.Fatalf("cluster.json token/data dir %q %q", got.Token, got.DataDir)
	}
	for _, n := range append(got.Nodes, got.Workers...) {
		if n.PID != c.PID(n.NodeID) || n.PID == 0 {
			t.Errorf("%s pid %d, running as %d", n.NodeID, n.PID, c.PID(n.NodeID))
		}
	}
	if len(got.Workers) != len(c.Workers()) {
		t.Errorf("cluster.json lists %d workers, %d planned", len(got.Workers), len(c.Workers()))
	}
}

func TestCluster_UnexpectedExitIsReportedAndOthersKeepRunning(t *testing.T) {
	c := newTestCluster(t, t.TempDir(), subnetExit)
	if err := c.Start(startCtx(t)); err != nil {
		t.Fatal(err)
	}
	victim := c.Nodes()[3]
	if err := syscall.Kill(c.PID(victim.ID()), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-c.exits:
		want := Exit{NodeID: victim.ID(), Status: "signal: killed", LogPath: victim.LogPath}
		if e != want {
			t.Fatalf("exit %+v, want %+v", e, want)
		}
	case <-time.After(testStartTimeout):
		t.Fatal("no exit reported")
	}
	for _, n := range c.Nodes()[:3] {
		if code, err := readyStatus(n.Config.HTTPAddr); code != http.StatusOK {
			t.Errorf("%s: readyz %d %v after another node died", n.ID(), code, err)
		}
	}
}

func TestCluster_StartFailsFastWhenANodeExits(t *testing.T) {
	c := newTestCluster(t, t.TempDir(), subnetFailFast, fakeExitEnv+"=euw1-mgr1")
	began := time.Now()
	err := c.Start(startCtx(t))
	if !errors.Is(err, ErrExited) {
		t.Fatalf("err = %v, want ErrExited", err)
	}
	node, _ := c.Node("euw1-mgr1")
	for _, want := range []string{"euw1-mgr1", "exit status 3", node.LogPath} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if took := time.Since(began); took > testStartTimeout/2 {
		t.Errorf("Start took %v: it waited for the others", took)
	}
	b, _ := os.ReadFile(node.LogPath)
	if !strings.Contains(string(b), "exiting as told") {
		t.Errorf("log %s lacks the node's output: %q", node.LogPath, b)
	}
}

func TestCluster_StopKillsANodeThatIgnoresSIGTERM(t *testing.T) {
	c := newTestCluster(t, t.TempDir(), subnetIgnoreTerm, fakeIgnoreTermEnv+"=use1-gate1")
	c.cfg.StopTimeout = 300 * time.Millisecond
	if err := c.Start(startCtx(t)); err != nil {
		t.Fatal(err)
	}
	err := c.Stop("use1-gate1")
	if err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("err = %v, want a report that it was killed", err)
	}
	if c.PID("use1-gate1") != 0 {
		t.Fatal("node runs after Stop")
	}
	if err := c.Stop("euw1-gate1"); err != nil {
		t.Fatalf("a node that drains: %v", err)
	}
}

func TestCluster_StartTimesOutNamingTheNodeNotReady(t *testing.T) {
	c := newTestCluster(t, t.TempDir(), subnetNotReady, fakeNotReadyEnv+"=euw1-gate1")
	// Long enough for every other (fake) node to be ready on a loaded
	// machine: the error must name only the one that never is.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := c.Start(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	for _, want := range []string{"euw1-gate1 not ready", "503"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "use1-gate1") {
		t.Errorf("error %q names a ready node", err)
	}
}

func TestCluster_RestartFromDataDirKeepsTokensAndShape(t *testing.T) {
	dir := t.TempDir()
	first := newTestCluster(t, dir, subnetRestart)
	if err := first.Start(startCtx(t)); err != nil {
		t.Fatal(err)
	}
	if err := first.StopAll(); err != nil {
		t.Fatal(err)
	}
	second := newTestCluster(t, dir, subnetRestart)
	if second.Token() != first.Token() || second.opts.ClusterToken != first.opts.ClusterToken {
		t.Fatal("a restarted cluster got new tokens")
	}
	if err := second.Start(startCtx(t)); err != nil {
		t.Fatal(err)
	}
	bin, _ := os.Executable()
	_, err := New(Config{Binary: bin, Options: Options{DataDir: dir, Regions: []string{"use1", "apse1"}, ManagersPerRegion: 1, SubnetBase: subnetRestart}})
	if !errors.Is(err, ErrShapeMismatch) {
		t.Fatalf("other regions on the same dir: err = %v, want ErrShapeMismatch", err)
	}
	var f struct {
		Token        string `json:"token"`
		ClusterToken string `json:"cluster_token"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, secretsFileName))
	if err := json.Unmarshal(b, &f); err != nil || f.Token != first.Token() {
		t.Fatalf("secrets.json %q: %v", b, err)
	}
}

func TestCluster_StartNamesAPortInUse(t *testing.T) {
	c := newTestCluster(t, t.TempDir(), subnetPortInUse)
	n, _ := c.Node("euw1-gate1")
	l, err := net.Listen("tcp", n.Config.RaftAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	err = c.Start(startCtx(t))
	if !errors.Is(err, ErrAddrUnusable) || !strings.Contains(err.Error(), "euw1-gate1 raft_addr "+n.Config.RaftAddr) {
		t.Fatalf("err = %v, want ErrAddrUnusable naming euw1-gate1 raft_addr", err)
	}
	for _, n := range c.Nodes() {
		if c.PID(n.ID()) != 0 {
			t.Errorf("%s was started although a port was taken", n.ID())
		}
	}
}

func TestCheckIP_NonLocalAddressIsNamed(t *testing.T) {
	err := checkIP("192.0.2.1") // TEST-NET-1: never assigned to this host
	if !errors.Is(err, ErrAddrUnusable) || !strings.Contains(err.Error(), "192.0.2.1") {
		t.Fatalf("err = %v, want ErrAddrUnusable naming the IP", err)
	}
	if err := checkIP("127.0.250.9"); err != nil {
		t.Fatalf("loopback beyond 127.0.0.1: %v", err)
	}
}

func TestNodeEnv_DropsStrataVariables(t *testing.T) {
	got := nodeEnv([]string{"HOME=/h", "STRATA_TOKEN=x", "PATH=/bin", "STRATA_CONFIG=y"}, []string{"GODEBUG=z"})
	want := []string{"HOME=/h", "PATH=/bin", "GODEBUG=z"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("env %v, want %v", got, want)
	}
}

func TestNew_RejectsBadConfig(t *testing.T) {
	if _, err := New(Config{Options: Options{DataDir: t.TempDir()}}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("no binary: err = %v", err)
	}
	dir := filepath.Join(t.TempDir(), "never-made")
	_, err := New(Config{Binary: "strata", Options: Options{DataDir: dir, ManagersPerRegion: 9}})
	if !errors.Is(err, ErrBadOptions) {
		t.Errorf("bad options: err = %v", err)
	}
	if _, statErr := os.Stat(dir); statErr == nil {
		t.Error("bad options created the data dir")
	}
	if _, err := New(Config{Binary: "strata", Options: Options{DataDir: t.TempDir(), Token: "short"}}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("short token: err = %v", err)
	}
}

// waitLog polls path until it contains want.
func waitLog(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(testStartTimeout)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s lacks %q:\n%s", path, want, b)
		}
		time.Sleep(20 * time.Millisecond) // polling a file, bounded by the deadline
	}
}

func TestCluster_WorkersRunAtTheirManagersAndStopFirst(t *testing.T) {
	dir := t.TempDir()
	// The launcher's STRATA_ variables must not reach workers either.
	t.Setenv("STRATA_REGION", "nowhere")
	c := newTestClusterWith(t, dir, subnetWorkers, func(o *Options) { o.WorkersPerRegion = 2; o.WorkerCapacity = 3 })
	if err := c.Start(startCtx(t)); err != nil {
		t.Fatal(err)
	}
	workers := c.Workers()
	if len(workers) != 4 {
		t.Fatalf("%d workers, want 2 per region", len(workers))
	}
	for _, w := range workers {
		if c.PID(w.ID) == 0 {
			t.Fatalf("%s is not running after Start", w.ID)
		}
		if err := c.WaitReady(startCtx(t), w.ID); err != nil {
			t.Fatalf("WaitReady(%s): %v", w.ID, err)
		}
		mgr, err := c.Node(w.Region + "-mgr1")
		if err != nil {
			t.Fatal(err)
		}
		waitLog(t, w.LogPath, fmt.Sprintf("fake worker %s: region=%s managers=%s capacity=3 log=info token=%s",
			w.ID, w.Region, mgr.Config.HTTPAddr, WorkerToken(c.Token(), w.ID)))
		if !slices.ContainsFunc(mgr.Config.Tokens, func(tc auth.TokenConfig) bool {
			return tc.Token == WorkerToken(c.Token(), w.ID) && tc.Worker == w.ID
		}) {
			t.Fatalf("%s's config lacks %s's token, bound to it", mgr.Config.NodeID, w.ID)
		}
	}
	checkClusterFile(t, c.Cluster)
	f := c.ClusterFile()
	if f.Workers[0].Role != "worker" || f.Workers[0].Region != "use1" || f.Workers[0].NodeID != "w-use1-1" {
		t.Fatalf("cluster.json worker %+v", f.Workers[0])
	}

	// Kill -9 by id, start again, restart: as with nodes.
	if err := c.Kill("w-use1-1"); err != nil {
		t.Fatal(err)
	}
	if c.PID("w-use1-1") != 0 || c.PID("w-use1-2") == 0 {
		t.Fatalf("after Kill: pids %d %d", c.PID("w-use1-1"), c.PID("w-use1-2"))
	}
	if err := c.StartNode("w-use1-1"); err != nil {
		t.Fatal(err)
	}
	if err := c.StartNode("w-use1-1"); !errors.Is(err, ErrRunning) {
		t.Fatalf("second StartNode: %v, want ErrRunning", err)
	}
	before := c.PID("w-euw1-2")
	if err := c.Restart("w-euw1-2"); err != nil {
		t.Fatal(err)
	}
	if after := c.PID("w-euw1-2"); after == before || after == 0 {
		t.Fatalf("w-euw1-2 pid %d after Restart, was %d", after, before)
	}
	checkClusterFile(t, c.Cluster)
	if err := c.Kill("w-nowhere-9"); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("Kill of an unknown worker: %v", err)
	}

	// A worker dying on its own is reported like a node.
	victim, _ := c.Worker("w-euw1-1")
	if err := syscall.Kill(c.PID(victim.ID), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case e := <-c.exits:
		if want := (Exit{NodeID: victim.ID, Status: "signal: killed", LogPath: victim.LogPath}); e != want {
			t.Fatalf("exit %+v, want %+v", e, want)
		}
	case <-time.After(testStartTimeout):
		t.Fatal("no exit reported")
	}

	// The fake workers exit 5 if their manager is gone when they are told
	// to stop: StopAll must stop them before the nodes.
	if err := c.StopAll(); err != nil {
		t.Fatalf("StopAll: %v", err)
	}
	for _, w := range workers {
		if c.PID(w.ID) != 0 {
			t.Errorf("%s runs after StopAll", w.ID)
		}
	}
	select {
	case e := <-c.exits:
		t.Fatalf("requested stops reported as unexpected: %+v", e)
	default:
	}

	// The number of workers may change between runs on one data dir.
	bin, _ := os.Executable()
	if _, err := New(Config{Binary: bin, Options: Options{DataDir: dir, Regions: []string{"use1", "euw1"}, ManagersPerRegion: 1,
		SubnetBase: subnetWorkers, WorkersPerRegion: 1}}); err != nil {
		t.Fatalf("fewer workers on the same data dir: %v", err)
	}
}
