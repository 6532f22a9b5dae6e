package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/fsmtest"
	"github.com/strata-ledger/strata/fsm/memstore"
	"github.com/strata-ledger/strata/transport/raftnet"
	"github.com/strata-ledger/strata/wal"
)

// Real parts for pipeline tests: each node has a NodeWAL in a temp dir, a
// raft-boltdb Raft group over TCP on its own loopback IP, and a ledger on
// the in-memory store. Nodes can be stopped and restarted on the same
// directories and addresses.

// pipelineWait bounds every wait for a cluster to converge.
const pipelineWait = 20 * time.Second

// pipeNode is one node of a test group.
type pipeNode struct {
	id   string
	ip   string
	dir  string
	addr string // Raft address, fixed at the first start

	reg    *prometheus.Registry
	ledger *fsm.Ledger
	fsm    *ledgerFSM
	group  *RaftGroup
	wal    *wal.WAL
	prop   *Proposer
	pipe   *Pipeline
}

// pipeCluster is a Raft group of pipeNodes and the in-process Forwarder
// that reaches a leader's Proposer.
type pipeCluster struct {
	t     testing.TB
	tier  Durability
	nodes []*pipeNode
	// propCfg is the Proposer config of every node.
	propCfg ProposerConfig

	mu   sync.Mutex
	byID map[string]*pipeNode // running nodes
}

// startPipeCluster starts n nodes on 127.0.<subnet>.1..n, bootstraps them
// as one group and waits for a leader. Everything stops at cleanup.
func startPipeCluster(t testing.TB, n, subnet int, tier Durability, propCfg ProposerConfig) *pipeCluster {
	t.Helper()
	c := &pipeCluster{t: t, tier: tier, propCfg: propCfg, byID: map[string]*pipeNode{}}
	base := t.TempDir()
	for i := range n {
		c.nodes = append(c.nodes, &pipeNode{
			id:  fmt.Sprintf("node%d", i+1),
			ip:  fmt.Sprintf("127.0.%d.%d", subnet, i+1),
			dir: filepath.Join(base, fmt.Sprintf("node%d", i+1)),
		})
	}
	for _, nd := range c.nodes {
		c.start(nd)
	}
	var servers []raft.Server
	for _, nd := range c.nodes {
		servers = append(servers, raft.Server{ID: raft.ServerID(nd.id), Address: raft.ServerAddress(nd.addr)})
	}
	for _, nd := range c.nodes {
		if err := nd.group.Bootstrap(servers); err != nil {
			t.Fatalf("%s: %v", nd.id, err)
		}
	}
	t.Cleanup(func() {
		for _, nd := range c.nodes {
			c.stop(nd)
		}
	})
	c.leader()
	return c
}

// start opens a node's ledger, Raft group, NodeWAL, proposer and pipeline
// (not recovered: see recover).
func (c *pipeCluster) start(nd *pipeNode) {
	t := c.t
	t.Helper()
	listen := nd.addr
	if listen == "" {
		listen = net.JoinHostPort(nd.ip, "0")
	}
	layer, err := raftnet.Listen(raftnet.Config{ListenAddr: listen})
	if err != nil {
		t.Fatalf("%s: %v", nd.id, err)
	}
	nd.addr = layer.Addr().String()
	nd.reg = prometheus.NewRegistry()
	if nd.ledger, err = fsm.New(fsm.Config{Store: memstore.New()}); err != nil {
		t.Fatal(err)
	}
	if nd.fsm, err = newLedgerFSM(ledgerFSMConfig{Ledger: nd.ledger, Registerer: nd.reg}); err != nil {
		t.Fatal(err)
	}
	nd.group, err = OpenRaftGroup(RaftGroupConfig{NodeID: nd.id, Kind: GroupRegional, Dir: filepath.Join(nd.dir, "raft"), FSM: nd.fsm, Stream: layer})
	if err != nil {
		t.Fatalf("%s: %v", nd.id, err)
	}
	if nd.wal, err = wal.Open(wal.Config{Dir: filepath.Join(nd.dir, "wal"), SegmentBytes: 4 << 20, Registerer: nd.reg}); err != nil {
		t.Fatalf("%s: %v", nd.id, err)
	}
	pc := c.propCfg
	pc.Registerer = nd.reg
	if nd.prop, err = NewProposer(nd.group.Raft, pc); err != nil {
		t.Fatal(err)
	}
	nd.pipe = nil
	nd.pipe = c.newPipeline(nd, nd.prop)
	c.mu.Lock()
	c.byID[nd.id] = nd
	c.mu.Unlock()
}

// newPipeline makes a pipeline of nd over committer, registering its
// metrics on a fresh registry when nd's already holds a pipeline's.
func (c *pipeCluster) newPipeline(nd *pipeNode, committer Committer) *Pipeline {
	c.t.Helper()
	var reg prometheus.Registerer = nd.reg
	if nd.pipe != nil {
		reg = nil
	}
	p, err := NewPipeline(PipelineConfig{
		Tier: c.tier, WAL: nd.wal, Committer: committer, Forwarder: ForwarderFunc(c.forward),
		RetryFirst: 5 * time.Millisecond, RetryMax: 100 * time.Millisecond, Registerer: reg,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

// stop closes a running node in the order a node shuts down: pipeline,
// proposer, Raft, NodeWAL.
func (c *pipeCluster) stop(nd *pipeNode) {
	c.t.Helper()
	c.mu.Lock()
	running := c.byID[nd.id] == nd
	delete(c.byID, nd.id)
	c.mu.Unlock()
	if !running {
		return
	}
	nd.pipe.Close()
	nd.prop.Close()
	if err := nd.group.Close(); err != nil {
		c.t.Errorf("%s: close raft: %v", nd.id, err)
	}
	if err := nd.wal.Close(); err != nil {
		c.t.Errorf("%s: close wal: %v", nd.id, err)
	}
}

// forward is the in-process Forwarder: it proposes on the leader's
// Proposer, as the leader's internal API handler will.
func (c *pipeCluster) forward(ctx context.Context, leader Leader, batch []byte) (Proposal, error) {
	c.mu.Lock()
	nd := c.byID[leader.ID]
	c.mu.Unlock()
	if nd == nil {
		return Proposal{}, fmt.Errorf("forward to %s: %w", leader.ID, errUnreachable)
	}
	return nd.prop.Propose(ctx, batch)
}

var errUnreachable = errors.New("node unreachable")

// leader waits until exactly one running node is leader and returns it.
func (c *pipeCluster) leader() *pipeNode {
	c.t.Helper()
	var leader *pipeNode
	waitUntil(c.t, "a leader", func() bool {
		leader = nil
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, nd := range c.byID {
			if nd.group.Raft.State() == raft.Leader {
				if leader != nil {
					return false
				}
				leader = nd
			}
		}
		return leader != nil
	})
	return leader
}

// follower returns a running node that is not leader.
func (c *pipeCluster) follower(leader *pipeNode) *pipeNode {
	for _, nd := range c.nodes {
		if nd != leader {
			return nd
		}
	}
	c.t.Fatal("no follower")
	return nil
}

// waitConverged waits until every node's ledger holds jobs and all have
// the same digest, and returns it.
func (c *pipeCluster) waitConverged(jobs []string) fsm.Hash {
	c.t.Helper()
	var digest fsm.Hash
	waitUntil(c.t, fmt.Sprintf("%d jobs on every node with one digest", len(jobs)), func() bool {
		for i, nd := range c.nodes {
			for _, id := range jobs {
				if _, err := nd.ledger.Job("acme", id); err != nil {
					return false
				}
			}
			d, _, err := nd.ledger.Digest()
			if err != nil {
				c.t.Fatal(err)
			}
			if i > 0 && d != digest {
				return false
			}
			digest = d
		}
		return true
	})
	return digest
}

// waitUntil polls cond every 5 ms until it holds or pipelineWait passes.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(pipelineWait)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", pipelineWait, what)
		}
		<-tick.C
	}
}

// jobEvent returns the JobCreated of job number i: unique job id and
// event id.
func jobEvent(i int) fsm.Event {
	j := fsmtest.NewJob(jobID(i), "acme", uint64(i)*4, "use1")
	return j.Created()
}

func jobID(i int) string {
	return fmt.Sprintf("use1-%d-gate1-%05d", 1704931200000+int64(i/99_999), i%99_999+1)
}

// jobEvents returns the JobCreated events of jobs from..from+n-1 and
// their ids.
func jobEvents(from, n int) ([]fsm.Event, []string) {
	evs := make([]fsm.Event, n)
	ids := make([]string, n)
	for k := range n {
		evs[k], ids[k] = jobEvent(from+k), jobID(from+k)
	}
	return evs, ids
}

// metricValue returns the value of a counter or gauge (or the sample count
// of a histogram) named name whose labels include the given pairs.
func metricValue(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, labels) {
				switch {
				case m.Counter != nil:
					return m.Counter.GetValue()
				case m.Gauge != nil:
					return m.Gauge.GetValue()
				case m.Histogram != nil:
					return float64(m.Histogram.GetSampleCount())
				}
			}
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return 0
}

func hasLabels(m *dto.Metric, pairs []string) bool {
	for i := 0; i+1 < len(pairs); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == pairs[i] && l.GetValue() == pairs[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
