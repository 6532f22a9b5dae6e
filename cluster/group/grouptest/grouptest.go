// Package grouptest runs real Raft groups for tests: each node has a
// raft-boltdb Raft group over TCP on its own loopback IP, the ledger on the
// in-memory store as its FSM, and a Proposer. Nodes can be stopped and
// restarted on the same directories and addresses. Packages built on a
// group (the commit pipeline) attach their parts through Hooks.
package grouptest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/internal/testkit"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/memstore"
	"github.com/strata-ledger/strata/transport/raftnet"
)

// ErrUnreachable is Forward's error for a leader that is not running.
var ErrUnreachable = errors.New("node unreachable")

// Node is one node of a test group.
type Node struct {
	ID   string
	IP   string
	Dir  string
	Addr string // Raft address, fixed at the first start

	Reg    *prometheus.Registry
	Ledger *fsm.Ledger
	FSM    *group.FSM
	Group  *group.Group
	Prop   *group.Proposer
}

// Hooks attach more parts to a node: Started runs after a (re)start, with
// the node's Raft group and proposer running; Stopping runs before they
// close.
type Hooks struct {
	Started  func(*Node)
	Stopping func(*Node)
	// Observer, if set, gives each (re)started node's ledger its
	// fsm.Observer.
	Observer func(*Node) fsm.Observer
}

// Cluster is a Raft group of Nodes.
type Cluster struct {
	t       testing.TB
	Nodes   []*Node
	propCfg group.ProposerConfig
	hooks   Hooks

	mu   sync.Mutex
	byID map[string]*Node // running nodes
}

// Start starts n nodes on 127.0.<subnet>.1..n, bootstraps them as one
// regional group and waits for a leader. Everything stops at cleanup.
func Start(t testing.TB, n, subnet int, propCfg group.ProposerConfig, hooks Hooks) *Cluster {
	t.Helper()
	c := New(t, n, subnet, propCfg, hooks)
	c.Boot()
	return c
}

// New lays out n nodes on 127.0.<subnet>.1..n without starting them, so a
// caller can keep c before its hooks run; Boot starts them.
func New(t testing.TB, n, subnet int, propCfg group.ProposerConfig, hooks Hooks) *Cluster {
	c := &Cluster{t: t, propCfg: propCfg, hooks: hooks, byID: map[string]*Node{}}
	base := t.TempDir()
	for i := range n {
		c.Nodes = append(c.Nodes, &Node{
			ID:  fmt.Sprintf("node%d", i+1),
			IP:  fmt.Sprintf("127.0.%d.%d", subnet, i+1),
			Dir: filepath.Join(base, fmt.Sprintf("node%d", i+1)),
		})
	}
	return c
}

// Boot starts every node, bootstraps them as one regional group and waits
// for a leader. Everything stops at cleanup.
func (c *Cluster) Boot() {
	t := c.t
	t.Helper()
	for _, nd := range c.Nodes {
		c.Start(nd)
	}
	var servers []group.Server
	for _, nd := range c.Nodes {
		servers = append(servers, group.Server{ID: nd.ID, Addr: nd.Addr})
	}
	for _, nd := range c.Nodes {
		if err := nd.Group.Bootstrap(servers); err != nil {
			t.Fatalf("%s: %v", nd.ID, err)
		}
	}
	t.Cleanup(func() {
		for _, nd := range c.Nodes {
			c.Stop(nd)
		}
	})
	c.Leader()
}

// Start opens a node's ledger, Raft group and proposer, then runs
// Hooks.Started.
func (c *Cluster) Start(nd *Node) {
	t := c.t
	t.Helper()
	listen := nd.Addr
	if listen == "" {
		listen = net.JoinHostPort(nd.IP, "0")
	}
	layer, err := raftnet.Listen(raftnet.Config{ListenAddr: listen})
	if err != nil {
		t.Fatalf("%s: %v", nd.ID, err)
	}
	nd.Addr = layer.Addr().String()
	nd.Reg = prometheus.NewRegistry()
	lc := fsm.Config{Store: memstore.New()}
	if c.hooks.Observer != nil {
		lc.Observer = c.hooks.Observer(nd)
	}
	if nd.Ledger, err = fsm.New(lc); err != nil {
		t.Fatal(err)
	}
	if nd.FSM, err = group.NewFSM(group.FSMConfig{Ledger: nd.Ledger, Registerer: nd.Reg}); err != nil {
		t.Fatal(err)
	}
	nd.Group, err = group.Open(group.Config{NodeID: nd.ID, Kind: group.Regional, Dir: filepath.Join(nd.Dir, "raft"), FSM: nd.FSM, Stream: layer})
	if err != nil {
		t.Fatalf("%s: %v", nd.ID, err)
	}
	pc := c.propCfg
	pc.Registerer = nd.Reg
	if nd.Prop, err = group.NewProposer(nd.Group.Raft, pc); err != nil {
		t.Fatal(err)
	}
	if c.hooks.Started != nil {
		c.hooks.Started(nd)
	}
	c.mu.Lock()
	c.byID[nd.ID] = nd
	c.mu.Unlock()
}

// Stop closes a running node in the order a node shuts down:
// Hooks.Stopping, proposer, Raft.
func (c *Cluster) Stop(nd *Node) {
	c.t.Helper()
	c.mu.Lock()
	running := c.byID[nd.ID] == nd
	delete(c.byID, nd.ID)
	c.mu.Unlock()
	if !running {
		return
	}
	if c.hooks.Stopping != nil {
		c.hooks.Stopping(nd)
	}
	nd.Prop.Close()
	if err := nd.Group.Close(); err != nil {
		c.t.Errorf("%s: close raft: %v", nd.ID, err)
	}
}

// Forward proposes on the running leader's Proposer, as the leader's
// internal API handler does for a forwarded batch.
func (c *Cluster) Forward(ctx context.Context, leader group.Leader, batch []byte) (group.Proposal, error) {
	c.mu.Lock()
	nd := c.byID[leader.ID]
	c.mu.Unlock()
	if nd == nil {
		return group.Proposal{}, fmt.Errorf("forward to %s: %w", leader.ID, ErrUnreachable)
	}
	return nd.Prop.Propose(ctx, batch)
}

// Leader waits until exactly one running node is leader and returns it.
func (c *Cluster) Leader() *Node {
	c.t.Helper()
	var leader *Node
	testkit.WaitUntil(c.t, "a leader", func() bool {
		leader = nil
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, nd := range c.byID {
			if nd.Group.IsLeader() {
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

// Follower returns a node that is not leader.
func (c *Cluster) Follower(leader *Node) *Node {
	for _, nd := range c.Nodes {
		if nd != leader {
			return nd
		}
	}
	c.t.Fatal("no follower")
	return nil
}

// WaitConverged waits until every node's ledger holds jobs (of tenant
// acme) and all have the same digest, and returns it.
func (c *Cluster) WaitConverged(jobs []string) fsm.Hash {
	c.t.Helper()
	var digest fsm.Hash
	testkit.WaitUntil(c.t, fmt.Sprintf("%d jobs on every node with one digest", len(jobs)), func() bool {
		for i, nd := range c.Nodes {
			for _, id := range jobs {
				if _, err := nd.Ledger.Job("acme", id); err != nil {
					return false
				}
			}
			d, _, err := nd.Ledger.Digest()
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

// Command is the Raft log of a command entry at index holding batches, as
// the Proposer makes it: for tests that feed a group.FSM directly.
func Command(index uint64, batches ...[]byte) *raft.Log {
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: group.AppendEntry(nil, batches)}
}

// Apply applies a command entry of batches at index to f, as Raft would,
// and returns each batch's results.
func Apply(f *group.FSM, index uint64, batches ...[]byte) ([][]fsm.Result, error) {
	return group.EntryResults(f.Apply(Command(index, batches...)))
}
