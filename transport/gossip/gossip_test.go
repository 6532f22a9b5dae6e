package gossip

import (
	"fmt"
	"io"
	"maps"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/strata-ledger/strata/transport/faultnet"
)

// waitTimeout bounds every wait for gossip to converge.
const waitTimeout = 20 * time.Second

// view records, from memberlist's events, the members a node believes alive
// and their decoded metadata. memberlist's own Node values may not be read
// outside its lock, so the test never reads them directly.
type view struct {
	mu    sync.Mutex
	alive map[string]Meta
	err   error // first metadata that failed to decode
}

var _ memberlist.EventDelegate = (*view)(nil)

func (v *view) NotifyJoin(n *memberlist.Node)   { v.set(n) }
func (v *view) NotifyUpdate(n *memberlist.Node) { v.set(n) }
func (v *view) NotifyLeave(n *memberlist.Node) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.alive, n.Name)
}

func (v *view) set(n *memberlist.Node) {
	m, err := MetaOf(n)
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil && v.err == nil {
		v.err = err
	}
	v.alive[n.Name] = m
}

func (v *view) snapshot() (map[string]Meta, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return maps.Clone(v.alive), v.err
}

// gnode is one gossiping node of a test pool.
type gnode struct {
	name   string
	addr   string // gossip host:port
	meta   Meta
	faults *faultnet.Faults
	ml     *memberlist.Memberlist
	view   *view
}

// fastConfig returns memberlist's local timings, sped up so that a failed
// node is declared dead within about a second.
func fastConfig() *memberlist.Config {
	c := memberlist.DefaultLocalConfig()
	c.ProbeInterval = 100 * time.Millisecond
	c.ProbeTimeout = 50 * time.Millisecond
	c.GossipInterval = 20 * time.Millisecond
	c.SuspicionMult = 2
	c.SuspicionMaxTimeoutMult = 2
	c.PushPullInterval = 500 * time.Millisecond
	c.TCPTimeout = 300 * time.Millisecond
	c.GossipToTheDeadTime = time.Minute
	c.LogOutput = io.Discard
	return c
}

// startNode runs a memberlist node on ip with its own fault layer; it shuts
// down at cleanup.
func startNode(t *testing.T, ip string, meta Meta, tweak func(*memberlist.Config)) *gnode {
	t.Helper()
	faults, err := faultnet.New(faultnet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTransport(TransportConfig{BindAddr: ip, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewMetaDelegate(meta)
	if err != nil {
		t.Fatal(err)
	}
	n := &gnode{
		name:   "node-" + ip,
		addr:   net.JoinHostPort(ip, strconv.Itoa(tr.Port())),
		meta:   meta,
		faults: faults,
		view:   &view{alive: map[string]Meta{}},
	}
	c := fastConfig()
	c.Name = n.name
	c.Transport = tr
	c.Delegate = d
	c.Events = n.view
	if tweak != nil {
		tweak(c)
	}
	if n.ml, err = memberlist.Create(c); err != nil {
		_ = tr.Shutdown()
		t.Fatalf("memberlist on %s: %v", ip, err)
	}
	t.Cleanup(func() {
		if err := n.ml.Shutdown(); err != nil {
			t.Errorf("shutdown %s: %v", n.name, err)
		}
	})
	return n
}

// startPool runs n nodes on 127.0.0.1…n, joined through the first; tweak,
// if not nil, adjusts each node's fastConfig.
func startPool(t *testing.T, n int, tweak func(*memberlist.Config)) []*gnode {
	t.Helper()
	nodes := make([]*gnode, n)
	for i := range nodes {
		ip := fmt.Sprintf("127.0.0.%d", i+1)
		m := Meta{
			Role: RoleManager, Region: "use1", NodeID: fmt.Sprintf("m%d", i+1),
			APIAddr: ip + ":8080", RaftAddr: ip + ":7000", DataAddr: ip + ":9000", Version: "0.1.0",
		}
		if i == 0 {
			m.Role, m.NodeID, m.DataAddr = RoleGate, "g1", ""
		}
		nodes[i] = startNode(t, ip, m, tweak)
	}
	for _, nd := range nodes[1:] {
		if _, err := nd.ml.Join([]string{nodes[0].addr}); err != nil {
			t.Fatalf("%s join: %v", nd.name, err)
		}
	}
	return nodes
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

// sees reports whether observer believes exactly the nodes of want alive,
// with their metadata.
func sees(t *testing.T, observer *gnode, want []*gnode) bool {
	t.Helper()
	alive, err := observer.view.snapshot()
	if err != nil {
		t.Fatalf("%s: %v", observer.name, err)
	}
	if len(alive) != len(want) {
		return false
	}
	for _, w := range want {
		if m, ok := alive[w.name]; !ok || m != w.meta {
			return false
		}
	}
	return true
}

func TestGossip_NodesJoinAndSeeEachOthersMetadata(t *testing.T) {
	nodes := startPool(t, 3, nil)
	waitFor(t, "every node to see all three with metadata", func() bool {
		for _, nd := range nodes {
			if !sees(t, nd, nodes) {
				return false
			}
		}
		return true
	})
}

func TestGossip_PartitionedNodeIsDeclaredDeadAndRejoinsAfterHeal(t *testing.T) {
	nodes := startPool(t, 3, nil)
	waitFor(t, "the pool to form", func() bool {
		for _, nd := range nodes {
			if !sees(t, nd, nodes) {
				return false
			}
		}
		return true
	})

	// Only the isolated node holds rules: they cut both directions.
	isolated, rest := nodes[2], nodes[:2]
	for _, nd := range rest {
		isolated.faults.Partition(nd.addr)
	}
	waitFor(t, "the others to declare the isolated node dead", func() bool {
		return sees(t, rest[0], rest) && sees(t, rest[1], rest)
	})
	waitFor(t, "the isolated node to declare the others dead", func() bool {
		return sees(t, isolated, nodes[2:])
	})

	// memberlist neither probes nor push/pulls with a node it holds dead; it
	// only gossips pending broadcasts to it, for GossipToTheDeadTime. Once
	// those are spent (any partition longer than a few gossip rounds), the
	// views merge only when one side rejoins, as the cluster's reconnect loop
	// does.
	isolated.faults.HealAll()
	if _, err := isolated.ml.Join([]string{rest[0].addr}); err != nil {
		t.Fatalf("rejoin after heal: %v", err)
	}
	waitFor(t, "every node to see all three again", func() bool {
		for _, nd := range nodes {
			if !sees(t, nd, nodes) {
				return false
			}
		}
		return true
	})
}

func TestGossip_DelayedPeerShowsInProbeRoundTrip(t *testing.T) {
	const delay = 30 * time.Millisecond
	// Ping waits ProbeTimeout for the ack: leave room for the delay.
	nodes := startPool(t, 2, func(c *memberlist.Config) { c.ProbeTimeout = 5 * time.Second })
	waitFor(t, "the pool to form", func() bool { return sees(t, nodes[0], nodes) && sees(t, nodes[1], nodes) })
	if err := nodes[0].faults.Delay(nodes[1].addr, delay); err != nil {
		t.Fatal(err)
	}
	to, err := net.ResolveUDPAddr("udp", nodes[1].addr)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		rtt, err := nodes[0].ml.Ping(nodes[1].name, to)
		if err != nil {
			t.Fatalf("ping: %v", err)
		}
		if rtt < delay {
			t.Fatalf("ping round trip %v, want >= %v", rtt, delay)
		}
	}
}

func TestTransport_ShutdownWithoutMemberlistReturns(t *testing.T) {
	faults, err := faultnet.New(faultnet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTransport(TransportConfig{BindAddr: "127.0.0.1", Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Shutdown(); err != nil {
		t.Fatalf("second shutdown: %v", err)
	}
}

func TestTransportConfig_Validate(t *testing.T) {
	tests := []struct {
		name string
		cfg  TransportConfig
		want bool
	}{
		{"ip", TransportConfig{BindAddr: "127.0.0.1"}, true},
		{"host name", TransportConfig{BindAddr: "localhost"}, false},
		{"port out of range", TransportConfig{BindAddr: "127.0.0.1", BindPort: 70000}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cfg.Validate() == nil; got != tt.want {
				t.Errorf("Validate() ok = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestGossip_WithoutFaultLayerJoinsDirectly(t *testing.T) {
	var mls []*memberlist.Memberlist
	var addrs []string
	for i := range 2 {
		ip := fmt.Sprintf("127.0.0.%d", i+1)
		tr, err := NewTransport(TransportConfig{BindAddr: ip})
		if err != nil {
			t.Fatal(err)
		}
		c := fastConfig()
		c.Name = "plain-" + ip
		c.Transport = tr
		ml, err := memberlist.Create(c)
		if err != nil {
			_ = tr.Shutdown()
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ml.Shutdown() })
		mls = append(mls, ml)
		addrs = append(addrs, net.JoinHostPort(ip, strconv.Itoa(tr.Port())))
	}
	if _, err := mls[1].Join(addrs[:1]); err != nil {
		t.Fatalf("join: %v", err)
	}
	waitFor(t, "both nodes to see two members", func() bool {
		return mls[0].NumMembers() == 2 && mls[1].NumMembers() == 2
	})
}
