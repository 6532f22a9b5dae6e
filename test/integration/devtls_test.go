package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/cluster/devcluster"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/tlsutil"
)

// `strata dev --tls` as real processes: every node serves TLS and gossips
// encrypted, the reference workers register over HTTPS and fire progress
// over the data plane, and the CLI finds the CA in cluster.json.
// TestDevTLS_Integration is one region (1 gate, 1 manager, 1 worker) on
// 127.0.153.x, small enough for `make test`; with STRATA_DEVTLS_FULL=1,
// TestDevTLS_FullCluster runs the whole dev shape (3 regions × (1 gate + 3
// managers), 2 workers per region) on 127.0.107-109.x and restarts it on
// its data directory.
const (
	subnetDevTLS     = 153
	subnetDevTLSFull = 107
	envDevTLSFull    = "STRATA_DEVTLS_FULL"
)

// startTLSCluster starts a TLS dev cluster whose data directory is
// DIR/.strata-dev, so the CLI run in DIR finds its cluster.json the way a
// user's does; it returns the cluster and DIR.
func startTLSCluster(t *testing.T, opts devcluster.Options) (*devcluster.Cluster, string) {
	t.Helper()
	dir := t.TempDir()
	opts.DataDir = filepath.Join(dir, ".strata-dev")
	opts.TLS = true
	c, err := devcluster.New(devcluster.Config{Options: opts, Binary: binary})
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, c, dir)
	ctx, cancel := context.WithTimeout(context.Background(), clusterStartWait)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return c, dir
}

// stopOnCleanup stops c at the end of t and keeps dir if t failed.
func stopOnCleanup(t *testing.T, c *devcluster.Cluster, dir string) {
	t.Cleanup(func() {
		if err := c.StopAll(); err != nil {
			t.Logf("stop: %v", err)
		}
		if t.Failed() {
			keep, _ := os.MkdirTemp("", "strata-failed-")
			_ = exec.Command("cp", "-r", dir, keep).Run()
			t.Logf("data and logs kept in %s", keep)
		}
	})
}

// tlsClient is an API client of c's gates over TLS, with the CLI's client
// certificate.
func tlsClient(t *testing.T, c *devcluster.Cluster) *api.Client {
	t.Helper()
	ct := c.TLS()
	tc, err := api.ClientTLS(ct.CAFile, ct.CertFile, ct.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, id := range nodesOf(c, cluster.RoleGate, "") {
		addrs = append(addrs, mustNode(t, c, id).Config.HTTPAddr)
	}
	cl, err := api.New(api.ClientConfig{Addrs: addrs, Token: c.Token(), Timeout: callTimeout, TLS: tc})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func mustNode(t *testing.T, c *devcluster.Cluster, id string) devcluster.NodeSpec {
	t.Helper()
	n, err := c.Node(id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// cli runs the strata binary in dir with no STRATA_ variable but extra,
// bounded in time, and returns its stdout; a non-zero exit fails t.
func cli(t *testing.T, dir string, extra []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), convergeWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STRATA_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, extra...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("strata %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

// startWorker runs `strata args...` in dir (no STRATA_ variable, output
// to logPath) and returns a func that stops it with SIGTERM, bounded, and
// fails t unless it exited 0; cleanup kills it if it is still running.
func startWorker(t *testing.T, dir, logPath string, args ...string) (stop func()) {
	t.Helper()
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(binary, args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logFile, logFile
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STRATA_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return func() {
		t.Helper()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("worker: %v", err)
			}
		case <-time.After(callTimeout):
			t.Fatalf("worker still running %v after SIGTERM", callTimeout)
		}
	}
}

// waitCompleted waits until the job is COMPLETED on the gates and returns
// its state.
func waitCompleted(t *testing.T, cl *api.Client, id string) *fsm.JobState {
	t.Helper()
	var st *fsm.JobState
	waitFor(t, "job "+id+" COMPLETED", convergeWait, func() bool {
		st = jobState(cl, id)
		return st != nil && st.Status == fsm.JobStatusCompleted
	})
	return st
}

func TestDevTLS_Integration(t *testing.T) {
	c, dir := startTLSCluster(t, devcluster.Options{SubnetBase: subnetDevTLS, Regions: []string{"use1"},
		ManagersPerRegion: 1, WorkersPerRegion: 1, WorkerCapacity: 4, LogLevel: "info"})
	cl := tlsClient(t, c)
	gate, mgr := mustNode(t, c, "use1-gate1"), mustNode(t, c, "use1-mgr1")

	// The CLI finds the nodes, token and CA in ./.strata-dev/cluster.json.
	// The job runs on the worker, which registered over HTTPS.
	out := cli(t, dir, nil, "job", "submit", "-o", "json", "--tenant", "acme", "--region", "use1",
		"--workflow", "name=checkout,count=2,duration=1s,rate=20")
	var sub api.SubmitJobResponse
	if err := json.Unmarshal([]byte(out), &sub); err != nil || sub.JobID == "" {
		t.Fatalf("job submit printed %q (%v)", out, err)
	}
	cli(t, dir, nil, "job", "watch", "-o", "json", sub.JobID) // exit 0: COMPLETED
	st := waitCompleted(t, cl, sub.JobID)
	if r := st.Regions[0]; !r.Done || r.Completed+r.Failed != 2*20 {
		t.Fatalf("region use1 after COMPLETED: %+v; want 40 requests reported over the data plane", r)
	}

	// Every API command of the CLI talks TLS through cluster.json.
	for _, args := range [][]string{
		{"job", "status", sub.JobID},
		{"job", "list", "--tenant", "acme"},
		{"job", "events", sub.JobID},
		{"members"},
		{"raft", "peers"},
		{"chain", "verify", "--tenant", "acme"},
		{"keyring", "list"},
		{"antientropy", "status"},
		{"snapshot", "save", "-o", filepath.Join(dir, "snap")},
		{"bundle", "export", "--tenant", "acme", "-o", filepath.Join(dir, "acme.bundle")},
	} {
		cli(t, dir, nil, args...)
	}
	// ... and through STRATA_ADDR and STRATA_CA_FILE, as `strata dev` prints them.
	env := []string{"STRATA_ADDR=https://" + gate.Config.HTTPAddr, "STRATA_TOKEN=" + c.Token(), "STRATA_CA_FILE=" + c.TLS().CAFile}
	cli(t, t.TempDir(), env, "job", "status", sub.JobID)
	cli(t, t.TempDir(), []string{"STRATA_CA_FILE=" + c.TLS().CAFile}, "health", "--url", "https://"+mgr.Config.HTTPAddr+"/readyz")

	// Every node says it is secured: TLS and an encrypted gossip.
	for _, id := range []string{"use1-gate1", "use1-mgr1"} {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		ct := c.TLS()
		tc, _ := api.ClientTLS(ct.CAFile, "", "")
		one, _ := api.New(api.ClientConfig{Addrs: []string{mustNode(t, c, id).Config.HTTPAddr}, Token: c.Token(), TLS: tc})
		s, err := one.ClusterStatus(ctx)
		cancel()
		if err != nil || !s.Security.TLS || !s.Security.GossipEncrypted || len(s.Security.Warnings) > 0 {
			t.Fatalf("%s status %+v (%v)", id, s.Security, err)
		}
	}

	t.Run("WorkerFromClusterFileOverTCPDataPlane", func(t *testing.T) {
		// The dev worker goes; a `strata worker --progress tcp` started
		// by hand in DIR takes managers, token and CA from cluster.json,
		// registers over HTTPS and sends frames over the TCP data plane.
		if err := c.Stop("w-use1-1"); err != nil {
			t.Fatal(err)
		}
		logPath := filepath.Join(dir, "w-tcp.log")
		stop := startWorker(t, dir, logPath, "worker", "--region", "use1", "--progress", "tcp", "--id", "w-tcp-1", "--capacity", "4")
		id := submit(t, cl, &api.SubmitJobRequest{Tenant: "acme", Regions: []string{"use1"}, Timeout: fsm.Duration(10 * time.Minute),
			Workflows: []fsm.WorkflowSpec{{Name: "tcp", Count: 2, Duration: fsm.Duration(time.Second), Rate: 20}}})
		st := waitCompleted(t, cl, id)
		if r := st.Regions[0]; !r.Done || r.Completed+r.Failed != 2*20 {
			t.Fatalf("region use1 after COMPLETED: %+v", r)
		}
		stop()
		b, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		log := string(b)
		if !strings.Contains(log, `"progress over the data plane"`) || !strings.Contains(log, `"network":"tcp"`) ||
			strings.Contains(log, "progress goes over HTTP") {
			t.Fatalf("the worker did not keep to the TCP data plane:\n%s", log)
		}
	})
	// The benches last: `bench progress` registers simulated workers (no
	// other worker runs now) and fires frames over UDP; `bench` submits
	// jobs of a minute's work each, which would keep a worker busy.
	cli(t, dir, nil, "bench", "progress", "--workers", "1", "--workflows", "2", "--duration", "1s", "--no-progress")
	cli(t, dir, nil, "bench", "--requests", "20", "--duration", "10s", "--no-progress")

	t.Run("PlainHTTPIsRefused", func(t *testing.T) {
		resp, err := (&http.Client{Timeout: callTimeout}).Get("http://" + gate.Config.HTTPAddr + "/readyz")
		if err != nil {
			return // refused outright: fine
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "HTTPS") {
			t.Fatalf("plain HTTP got %d %q", resp.StatusCode, b)
		}
	})
	t.Run("AnotherCAIsRefused", func(t *testing.T) {
		other, err := tlsutil.NewCA(rand.Reader, time.Now(), "not the dev CA")
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tlsutil.NewCert(rand.Reader, time.Now(), other, tlsutil.CertRequest{Role: tlsutil.RoleClient, Node: "intruder"})
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(pair.Cert, pair.Key)
		if err != nil {
			t.Fatal(err)
		}
		caPEM, err := os.ReadFile(c.TLS().CAFile)
		if err != nil {
			t.Fatal(err)
		}
		pool, _ := tlsutil.ParseCAPool(caPEM)
		otherPool, _ := tlsutil.ParseCAPool(other.Cert)
		for _, tt := range []struct {
			name string
			cfg  *tls.Config
		}{
			// The client trusts the dev CA but presents another CA's
			// certificate, whatever CAs the node says it accepts.
			{"client certificate of another CA", &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13,
				GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }}},
			// The client trusts only another CA: the node's certificate fails.
			{"server checked against another CA", &tls.Config{RootCAs: otherPool, MinVersion: tls.VersionTLS13}},
		} {
			hc := &http.Client{Timeout: callTimeout, Transport: &http.Transport{TLSClientConfig: tt.cfg}}
			for _, n := range []devcluster.NodeSpec{gate, mgr} {
				// With the right token: only TLS can refuse it.
				req, _ := http.NewRequest(http.MethodGet, "https://"+n.Config.HTTPAddr+"/v1/cluster/members", nil)
				req.Header.Set("Authorization", "Bearer "+c.Token())
				resp, err := hc.Do(req)
				if err == nil {
					resp.Body.Close()
					t.Errorf("%s: %s answered %d", tt.name, n.ID(), resp.StatusCode)
				}
			}
		}
	})
}

// TestDevTLS_FullCluster is the whole `strata dev --tls` shape, a job
// across its three regions, then a restart of every process on the same
// data directory (same CA, certificates and gossip key) and a second job.
func TestDevTLS_FullCluster(t *testing.T) {
	if os.Getenv(envDevTLSFull) == "" {
		t.Skip("set " + envDevTLSFull + "=1 to run the whole dev cluster with TLS (about 15 s on 2 idle cores)")
	}
	opts := devcluster.Options{SubnetBase: subnetDevTLSFull, WorkersPerRegion: 2, WorkerCapacity: 8, LogLevel: "info"}
	c, dir := startTLSCluster(t, opts)
	runJob := func(c *devcluster.Cluster) {
		t.Helper()
		cl := tlsClient(t, c)
		id := submit(t, cl, lifecycleSpec(allRegions, 2, 2*time.Second, 10*time.Minute))
		st := waitCompleted(t, cl, id)
		for _, r := range st.Regions {
			if !r.Done || r.Completed+r.Failed != 2*2*20 {
				t.Errorf("region %s: %+v", r.Region, r)
			}
		}
		cli(t, dir, nil, "chain", "verify", "--tenant", "acme")
	}
	runJob(c)
	caBefore, err := os.ReadFile(c.TLS().CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.StopAll(); err != nil {
		t.Fatal(err)
	}
	opts.DataDir, opts.TLS = filepath.Join(dir, ".strata-dev"), true
	again, err := devcluster.New(devcluster.Config{Options: opts, Binary: binary})
	if err != nil {
		t.Fatal(err)
	}
	stopOnCleanup(t, again, dir)
	ctx, cancel := context.WithTimeout(context.Background(), clusterStartWait)
	defer cancel()
	if err := again.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if caAfter, _ := os.ReadFile(again.TLS().CAFile); !bytes.Equal(caAfter, caBefore) {
		t.Fatal("the restart made another CA")
	}
	runJob(again)
}
