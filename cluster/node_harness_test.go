package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/cluster/tracing"
	"github.com/strata-ledger/strata/transport/api"
)

// Real nodes in one test process: every node has its own loopback IP
// (127.0.<subnet>.<n>), NodeWAL, Raft group, gossip pools and HTTP API. The
// default topology is one region, use1, with 3 gates (the global group)
// and 3 managers (the region's group); fault injection is on.

const (
	testAdminToken   = "admin-token-0123456789"
	testAcmeToken    = "acme-token-0123456789"
	testReaderToken  = "acme-reader-0123456789"
	testGlobexToken  = "globex-token-0123456789"
	testClusterToken = "cluster-secret-0123456789"
	// testWorkerToken acts for worker w-bound only.
	testWorkerToken = "worker-bound-0123456789"
	// nodeTestWait bounds every wait of these tests.
	nodeTestWait = 30 * time.Second
)

func testTokens() []auth.TokenConfig {
	return []auth.TokenConfig{
		{Token: testAdminToken, Tenant: auth.AllTenants, Scopes: []string{"operator", "jobs:read", "jobs:write"}},
		{Token: testAcmeToken, Tenant: "acme", Scopes: []string{"jobs:read", "jobs:write"}},
		{Token: testReaderToken, Tenant: "acme", Scopes: []string{"jobs:read"}},
		{Token: testGlobexToken, Tenant: "globex", Scopes: []string{"jobs:read", "jobs:write"}},
		{Token: testWorkerToken, Tenant: auth.AllTenants, Scopes: []string{"worker"}, Worker: "w-bound"},
	}
}

type testCluster struct {
	t     testing.TB
	base  string
	cfgs  []NodeConfig
	mu    sync.Mutex
	nodes map[string]*Node
	http  *http.Client
	// reconcile runs the job-lifecycle reconcilers on the leaders.
	reconcile bool
	// scheme is https when the nodes serve TLS (the client trusts their CA).
	scheme string
	// tracer, when set, gives each node its tracer (NodeOptions.Tracer).
	tracer func(id string) *tracing.Tracer
}

// startTestCluster starts 3 gates (g1..g3, 127.0.<subnet>.1-3) and 3
// managers (m1..m3, .4-.6) of region use1 and waits until both groups
// have a leader and every node is ready.
// The reconcilers do not run (tests of the API see only the changes they
// make); startLifecycleCluster runs them.
func startTestCluster(t testing.TB, subnet int, configure ...func(*NodeConfig)) *testCluster {
	return startNodes(t, subnet, false, configure...)
}

// startLifecycleCluster is startTestCluster with the reconcilers running.
func startLifecycleCluster(t testing.TB, subnet int) *testCluster {
	return startNodes(t, subnet, true)
}

// startNodes starts the cluster; configure adjusts every node's config
// before it starts.
func startNodes(t testing.TB, subnet int, reconcile bool, configure ...func(*NodeConfig)) *testCluster {
	t.Helper()
	return startNodesWith(t, subnet, reconcile, nil, configure...)
}

// startNodesWith is startNodes with setup run on the cluster before any
// node starts (it may set tracer).
func startNodesWith(t testing.TB, subnet int, reconcile bool, setup func(*testCluster), configure ...func(*NodeConfig)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, base: t.TempDir(), nodes: map[string]*Node{}, http: &http.Client{Timeout: nodeTestWait}, reconcile: reconcile}
	if setup != nil {
		setup(c)
	}
	var seeds []string
	for i := 1; i <= 6; i++ {
		seeds = append(seeds, fmt.Sprintf("127.0.%d.%d:7300", subnet, i))
	}
	for i := 1; i <= 6; i++ {
		ip := fmt.Sprintf("127.0.%d.%d", subnet, i)
		cfg := DefaultNodeConfig()
		cfg.Region, cfg.Tokens, cfg.ClusterToken = "use1", testTokens(), testClusterToken
		cfg.HTTPAddr, cfg.RaftAddr, cfg.GossipAddr = ip+":7100", ip+":7200", ip+":7300"
		cfg.Join, cfg.EnableFaultInjection, cfg.SessionWait = seeds, true, 2*time.Second
		if i <= 3 {
			cfg.NodeID, cfg.Role, cfg.GossipWANAddr = fmt.Sprintf("g%d", i), RoleGate, ip+":7400"
			cfg.JoinWAN = []string{fmt.Sprintf("127.0.%d.1:7400", subnet)}
		} else {
			cfg.NodeID, cfg.Role, cfg.DataPlaneAddr = fmt.Sprintf("m%d", i-3), RoleManager, ip+":7500"
		}
		cfg.DataDir = filepath.Join(c.base, cfg.NodeID)
		for _, f := range configure {
			f(&cfg)
		}
		c.cfgs = append(c.cfgs, cfg)
	}
	c.scheme = "http"
	if tf := c.cfgs[0].TLS; tf.Enabled() {
		tc, err := api.ClientTLS(tf.CAFile, "", "")
		if err != nil {
			t.Fatal(err)
		}
		c.scheme, c.http.Transport = "https", &http.Transport{TLSClientConfig: tc}
	}
	t.Cleanup(c.closeAll)
	for _, cfg := range c.cfgs {
		c.start(cfg.NodeID)
	}
	for _, cfg := range c.cfgs {
		c.waitReady(cfg.NodeID)
	}
	return c
}

func (c *testCluster) cfg(id string) NodeConfig {
	for _, cfg := range c.cfgs {
		if cfg.NodeID == id {
			return cfg
		}
	}
	c.t.Fatalf("no node %s", id)
	return NodeConfig{}
}

func (c *testCluster) start(id string) *Node {
	c.t.Helper()
	return c.startLogging(id, nodeTestLogger())
}

// startLogging starts node id with its log going to logger.
func (c *testCluster) startLogging(id string, logger *slog.Logger) *Node {
	c.t.Helper()
	opts := NodeOptions{Logger: logger, LANTimings: members.FastTimings(),
		WANTimings: members.FastTimings(), RejoinInterval: 500 * time.Millisecond, DisableReconcilers: !c.reconcile}
	if c.tracer != nil {
		opts.Tracer = c.tracer(id)
	}
	n, err := StartNode(c.cfg(id), opts)
	if err != nil {
		c.t.Fatalf("start %s: %v", id, err)
	}
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
	return n
}

func (c *testCluster) node(id string) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// stop closes a node without draining (as a crash would, minus the disk).
func (c *testCluster) stop(id string) {
	c.mu.Lock()
	n := c.nodes[id]
	delete(c.nodes, id)
	c.mu.Unlock()
	if n != nil {
		if err := n.Close(); err != nil {
			c.t.Errorf("close %s: %v", id, err)
		}
	}
}

func (c *testCluster) closeAll() {
	c.mu.Lock()
	ids := make([]string, 0, len(c.nodes))
	for id := range c.nodes {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Go(func() { c.stop(id) })
	}
	wg.Wait()
}

func (c *testCluster) waitReady(id string) {
	c.t.Helper()
	c.waitFor(id+" ready", func() bool { return c.call(id, "GET", "/readyz", "", nil).status == http.StatusOK })
}

func (c *testCluster) waitFor(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(nodeTestWait)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out after %s waiting for %s", nodeTestWait, what)
		}
		<-tick.C
	}
}

// leader returns the id of the leader of role's group among running nodes.
func (c *testCluster) leader(role Role) string {
	c.t.Helper()
	var id string
	c.waitFor(string(role)+" leader", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for nid, n := range c.nodes {
			if n.cfg.Role == role && n.raft.IsLeader() {
				id = nid
				return true
			}
		}
		return false
	})
	return id
}

// followers returns the running nodes of role that do not lead.
func (c *testCluster) followers(role Role) []string {
	lead := c.leader(role)
	var out []string
	for _, cfg := range c.cfgs {
		if cfg.Role == role && cfg.NodeID != lead && c.node(cfg.NodeID) != nil {
			out = append(out, cfg.NodeID)
		}
	}
	return out
}

// reply is one HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// apiError decodes the envelope of an error reply; it fails the test if
// the body is not one.
func (r reply) apiError(t testing.TB) *api.Error {
	t.Helper()
	var env api.ErrorEnvelope
	if err := json.Unmarshal(r.body, &env); err != nil || env.Error == nil || env.Error.Code == "" || env.Error.Message == "" {
		t.Fatalf("status %d: body is not an error envelope: %s", r.status, r.body)
	}
	return env.Error
}

// call sends a request to node id's API.
func (c *testCluster) call(id, method, path, token string, body []byte, header ...string) reply {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nodeTestWait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.scheme+"://"+c.cfg(id).HTTPAddr+path, bytes.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s on %s: %v", method, path, id, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// submitJob submits a one-workflow job of tenant acme and returns the reply.
func (c *testCluster) submitJob(id, query, key string) reply {
	c.t.Helper()
	return c.call(id, "POST", "/v1/jobs"+query, testAcmeToken, jobBody("acme", key, "10m"))
}

// submitJobs submits n jobs of acme at g1 and returns their ids.
func (c *testCluster) submitJobs(n int) []string {
	c.t.Helper()
	var ids []string
	for range n {
		r := c.submitJob("g1", "", "")
		var sub api.SubmitJobResponse
		r.decode(c.t, &sub)
		if r.status != http.StatusCreated {
			c.t.Fatalf("submit: %d %s", r.status, r.body)
		}
		ids = append(ids, sub.JobID)
	}
	return ids
}

func jobBody(tenant, key, timeout string) []byte {
	return fmt.Appendf(nil, `{"tenant":%q,"idempotency_key":%q,"regions":["use1"],"timeout":%q,`+
		`"workflows":[{"name":"checkout","count":2,"duration":"30s","rate":200,"failure_ratio":0}]}`, tenant, key, timeout)
}

// nodeTestLogger discards, unless STRATA_GOSSIP_TEST_LOG is set.
func nodeTestLogger() *slog.Logger {
	if os.Getenv("STRATA_GOSSIP_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
