package commit

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/group/grouptest"
	"github.com/strata-ledger/strata/wal"
)

// Real parts for pipeline tests: a grouptest Raft group whose nodes also
// have a NodeWAL in a temp dir and a Pipeline over their Proposer; the
// Forwarder reaches the leader's Proposer in process. Nodes can be stopped
// and restarted on the same directories and addresses.

// pipeNode is one node of a test group with its NodeWAL and pipeline.
type pipeNode struct {
	*grouptest.Node
	wal  *wal.WAL
	pipe *Pipeline
}

// pipeCluster is a grouptest cluster of pipeNodes.
type pipeCluster struct {
	*grouptest.Cluster
	t     testing.TB
	tier  Durability
	nodes []*pipeNode

	mu sync.Mutex
	of map[*grouptest.Node]*pipeNode
	// refuse, when set, is asked before every forward to the leader: an
	// error it returns is the leader's answer (fault injection of a
	// leader that refuses a batch).
	refuse func(leader group.Leader, batch []byte) error
}

// startPipeCluster starts n nodes on 127.0.<subnet>.1..n as one group
// and waits for a leader. Everything stops at cleanup.
func startPipeCluster(t testing.TB, n, subnet int, tier Durability, propCfg group.ProposerConfig) *pipeCluster {
	t.Helper()
	c := &pipeCluster{t: t, tier: tier, of: map[*grouptest.Node]*pipeNode{}}
	c.Cluster = grouptest.New(t, n, subnet, propCfg, grouptest.Hooks{Started: c.attach, Stopping: c.detach})
	c.Boot()
	return c
}

// attach opens a (re)started node's NodeWAL and pipeline (not recovered:
// see Recover).
func (c *pipeCluster) attach(gn *grouptest.Node) {
	c.mu.Lock()
	nd := c.of[gn]
	if nd == nil {
		nd = &pipeNode{Node: gn}
		c.of[gn] = nd
		c.nodes = append(c.nodes, nd)
	}
	c.mu.Unlock()
	var err error
	if nd.wal, err = wal.Open(wal.Config{Dir: filepath.Join(gn.Dir, "wal"), SegmentBytes: 4 << 20, Registerer: gn.Reg}); err != nil {
		c.t.Fatalf("%s: %v", gn.ID, err)
	}
	nd.pipe = nil
	nd.pipe = c.newPipeline(nd, gn.Prop)
}

// detach closes a node's pipeline and NodeWAL before its proposer and
// Raft close.
func (c *pipeCluster) detach(gn *grouptest.Node) {
	c.mu.Lock()
	nd := c.of[gn]
	c.mu.Unlock()
	nd.pipe.Close()
	if err := nd.wal.Close(); err != nil {
		c.t.Errorf("%s: close wal: %v", gn.ID, err)
	}
}

// newPipeline makes a pipeline of nd over committer, registering its
// metrics on a fresh registry when nd's already holds a pipeline's.
func (c *pipeCluster) newPipeline(nd *pipeNode, committer Committer) *Pipeline {
	c.t.Helper()
	var reg prometheus.Registerer = nd.Reg
	if nd.pipe != nil {
		reg = nil
	}
	p, err := NewPipeline(PipelineConfig{
		Tier: c.tier, WAL: nd.wal, Committer: committer, Forwarder: ForwarderFunc(c.forward),
		NodeID: nd.ID, RefusalFile: filepath.Join(nd.Dir, "refusals"),
		RetryFirst: 5 * time.Millisecond, RetryMax: 100 * time.Millisecond, Registerer: reg,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return p
}

// forward is the Forwarder of every node: the refusal fault if set, else
// the leader's Proposer in process.
func (c *pipeCluster) forward(ctx context.Context, leader group.Leader, batch []byte) (group.Proposal, error) {
	c.mu.Lock()
	refuse := c.refuse
	c.mu.Unlock()
	if refuse != nil {
		if err := refuse(leader, batch); err != nil {
			return group.Proposal{}, err
		}
	}
	return c.Forward(ctx, leader, batch)
}

// setRefuse installs (nil: removes) the refusal fault.
func (c *pipeCluster) setRefuse(f func(leader group.Leader, batch []byte) error) {
	c.mu.Lock()
	c.refuse = f
	c.mu.Unlock()
}

func (c *pipeCluster) start(nd *pipeNode) { c.Cluster.Start(nd.Node) }
func (c *pipeCluster) stop(nd *pipeNode)  { c.Cluster.Stop(nd.Node) }

// leader waits until exactly one running node is leader and returns it.
func (c *pipeCluster) leader() *pipeNode { return c.node(c.Leader()) }

// follower returns a node that is not leader.
func (c *pipeCluster) follower(leader *pipeNode) *pipeNode { return c.node(c.Follower(leader.Node)) }

func (c *pipeCluster) node(gn *grouptest.Node) *pipeNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.of[gn]
}
