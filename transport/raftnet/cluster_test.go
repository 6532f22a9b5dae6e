package raftnet

import (
	"crypto/tls"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/strata-ledger/strata/transport/faultnet"
	"github.com/strata-ledger/strata/transport/tlstest"
)

// waitTimeout bounds every wait for a cluster to converge.
const waitTimeout = 15 * time.Second

// countFSM counts applied entries.
type countFSM struct {
	mu      sync.Mutex
	applied int
}

func (f *countFSM) Apply(*raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied++
	return nil
}

func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, fmt.Errorf("not supported") }
func (f *countFSM) Restore(io.ReadCloser) error         { return fmt.Errorf("not supported") }

func (f *countFSM) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.applied
}

// node is one Raft server of a test cluster.
type node struct {
	ip     string
	faults *faultnet.Faults
	trans  *raft.NetworkTransport
	raft   *raft.Raft
	fsm    *countFSM
}

// startCluster runs n Raft servers on 127.0.0.1…n, each behind its own fault
// layer, bootstrapped as one group; everything stops at cleanup.
func startCluster(t *testing.T, n int, tlsOn bool) []*node {
	t.Helper()
	return startClusterWith(t, n, tlsOn, 0, 0)
}

// startClusterWith is startCluster with every node delaying its writes to
// every peer by delay plus a jitter in [0, jitter).
func startClusterWith(t *testing.T, n int, tlsOn bool, delay, jitter time.Duration) []*node {
	t.Helper()
	var ca *tlstest.CA
	if tlsOn {
		var err error
		if ca, err = tlstest.NewCA(); err != nil {
			t.Fatal(err)
		}
	}
	nodes := make([]*node, n)
	var servers []raft.Server
	for i := range nodes {
		nd := &node{ip: fmt.Sprintf("127.0.0.%d", i+1), fsm: &countFSM{}}
		cfg := Config{ListenAddr: nd.ip + ":0"}
		if tlsOn {
			var err error
			if cfg.TLS, err = ca.MutualConfig("node"+nd.ip, nd.ip); err != nil {
				t.Fatal(err)
			}
		}
		nd.faults, nd.trans = newTransport(t, cfg)
		for j := range n {
			if err := nd.faults.DelayWithJitter(fmt.Sprintf("127.0.0.%d", j+1), delay, jitter); err != nil {
				t.Fatal(err)
			}
		}
		servers = append(servers, raft.Server{ID: raft.ServerID(nd.ip), Address: nd.trans.LocalAddr()})
		nodes[i] = nd
	}
	for _, nd := range nodes {
		store := raft.NewInmemStore()
		r, err := raft.NewRaft(raftConfig(nd.ip), nd.fsm, store, store, raft.NewInmemSnapshotStore(), nd.trans)
		if err != nil {
			t.Fatalf("raft %s: %v", nd.ip, err)
		}
		nd.raft = r
		t.Cleanup(func() {
			if err := r.Shutdown().Error(); err != nil {
				t.Errorf("shutdown %s: %v", nd.ip, err)
			}
		})
	}
	if err := nodes[0].raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		t.Fatalf("bootstrap: %v", err)
	}
	return nodes
}

// newTransport builds a Raft network transport over a StreamLayer wrapped
// in a fresh fault layer.
func newTransport(t *testing.T, cfg Config) (*faultnet.Faults, *raft.NetworkTransport) {
	t.Helper()
	layer, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("%s: jitter seed %d", cfg.ListenAddr, seed)
	faults, err := faultnet.New(faultnet.Config{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  WithFaults(layer, faults),
		MaxPool: 3,
		Timeout: 500 * time.Millisecond,
		Logger:  hclog.NewNullLogger(),
	})
	t.Cleanup(func() { _ = trans.Close() })
	return faults, trans
}

// raftConfig returns fast LAN timings.
func raftConfig(id string) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = raft.ServerID(id)
	c.HeartbeatTimeout = 200 * time.Millisecond
	c.ElectionTimeout = 200 * time.Millisecond
	c.LeaderLeaseTimeout = 100 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.Logger = hclog.NewNullLogger()
	return c
}

// waitFor polls cond until it holds or waitTimeout passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(waitTimeout)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
	}
}

// waitLeader waits until exactly one of nodes is leader and returns it.
func waitLeader(t *testing.T, nodes []*node) *node {
	t.Helper()
	var leader *node
	waitFor(t, "a leader", func() bool {
		leader = nil
		for _, nd := range nodes {
			if nd.raft.State() == raft.Leader {
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

// apply commits n entries through leader.
func apply(t *testing.T, leader *node, n int) {
	t.Helper()
	for i := range n {
		if err := leader.raft.Apply(fmt.Appendf(nil, "entry %d", i), 5*time.Second).Error(); err != nil {
			t.Fatalf("apply on %s: %v", leader.ip, err)
		}
	}
}

// waitApplied waits until every node has applied want entries.
func waitApplied(t *testing.T, nodes []*node, want int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d entries applied everywhere", want), func() bool {
		for _, nd := range nodes {
			if nd.fsm.count() != want {
				return false
			}
		}
		return true
	})
}

func TestRaft_ElectsAndReplicatesOverStreamLayer(t *testing.T) {
	tests := []struct {
		name          string
		tls           bool
		delay, jitter time.Duration
	}{
		{name: "tcp", tls: false},
		{name: "tls", tls: true},
		{name: "tcp/delay=5ms/jitter=5ms", delay: 5 * time.Millisecond, jitter: 5 * time.Millisecond},
		{name: "tls/delay=5ms/jitter=5ms", tls: true, delay: 5 * time.Millisecond, jitter: 5 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := startClusterWith(t, 3, tt.tls, tt.delay, tt.jitter)
			leader := waitLeader(t, nodes)
			apply(t, leader, 10)
			waitApplied(t, nodes, 10)
		})
	}
}

func TestRaft_PartitionedLeaderIsReplacedAndCatchesUpAfterHeal(t *testing.T) {
	nodes := startCluster(t, 3, false)
	old := waitLeader(t, nodes)
	apply(t, old, 3)
	waitApplied(t, nodes, 3)

	// One side's rules cut both directions: only the old leader holds them.
	var rest []*node
	for _, nd := range nodes {
		if nd != old {
			rest = append(rest, nd)
			old.faults.Partition(nd.ip)
		}
	}
	newLeader := waitLeader(t, rest)
	apply(t, newLeader, 3)
	waitApplied(t, rest, 6)
	waitFor(t, "the partitioned leader to step down", func() bool { return old.raft.State() != raft.Leader })
	if got := old.fsm.count(); got != 3 {
		t.Fatalf("partitioned node applied %d entries, want 3", got)
	}

	old.faults.HealAll()
	waitFor(t, "the old leader to follow and catch up", func() bool {
		return old.raft.State() == raft.Follower && old.fsm.count() == 6
	})
	leader := waitLeader(t, nodes)
	apply(t, leader, 1)
	waitApplied(t, nodes, 7)
}

// tlsPair returns configurations for two nodes of one CA, and a third from
// another CA.
func tlsPair(t *testing.T) (a, b, stranger *tls.Config) {
	t.Helper()
	ca, err := tlstest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	other, err := tlstest.NewCA()
	if err != nil {
		t.Fatal(err)
	}
	if a, err = ca.MutualConfig("a", "127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	if b, err = ca.MutualConfig("b", "127.0.0.2"); err != nil {
		t.Fatal(err)
	}
	if stranger, err = other.MutualConfig("stranger", "127.0.0.3"); err != nil {
		t.Fatal(err)
	}
	return a, b, stranger
}
