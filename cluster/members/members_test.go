package members

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/strata-ledger/strata/transport/faultnet"
	"github.com/strata-ledger/strata/transport/gossip"
)

// gossipWait bounds every wait for gossip to converge.
const gossipWait = 20 * time.Second

// testDeadGossip is FastTimings' GossipToTheDeadTime.
const testDeadGossip = fastDeadGossip

func gossipTestTimings() PoolTimings { return FastTimings() }

// gossipTestLogger discards, unless STRATA_GOSSIP_TEST_LOG is set.
func gossipTestLogger() *slog.Logger {
	if os.Getenv("STRATA_GOSSIP_TEST_LOG") == "" {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// memberNode is one node of a test cluster, on its own loopback IP.
type memberNode struct {
	id     string
	ip     string
	faults *faultnet.Faults
	m      *Membership
}

// memberSpec names a test node: role, region, id and IP.
type memberSpec struct {
	role   gossip.Role
	region string
	id     string
	ip     string
}

func memberMeta(s memberSpec) gossip.Meta {
	m := gossip.Meta{
		Role: s.role, Region: s.region, NodeID: s.id, Version: "test",
		APIAddr: s.ip + ":8080", RaftAddr: s.ip + ":7000",
	}
	if s.role == gossip.RoleManager {
		m.DataAddr = s.ip + ":9000"
	}
	return m
}

// startMember starts a Membership for s, closed at cleanup. lanPort is the
// LAN port to bind (0: any).
func startMember(t *testing.T, s memberSpec, lanPort int, lanSeeds, wanSeeds []string) *memberNode {
	t.Helper()
	faults, err := faultnet.New(faultnet.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Self:           memberMeta(s),
		LANAddr:        net.JoinHostPort(s.ip, strconv.Itoa(lanPort)),
		LANSeeds:       lanSeeds,
		WANSeeds:       wanSeeds,
		Faults:         faults,
		Logger:         gossipTestLogger().With("node", s.id),
		Registerer:     prometheus.NewRegistry(),
		RejoinInterval: 200 * time.Millisecond,
		LANTimings:     gossipTestTimings(),
		WANTimings:     gossipTestTimings(),
	}
	if s.role == gossip.RoleGate {
		cfg.WANAddr = s.ip + ":0"
	}
	m, err := Start(cfg)
	if err != nil {
		t.Fatalf("start %s: %v", s.id, err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("close %s: %v", s.id, err)
		}
	})
	return &memberNode{id: s.id, ip: s.ip, faults: faults, m: m}
}

func (n *memberNode) addr(t *testing.T, p Pool) string {
	t.Helper()
	a, ok := n.m.Addr(p)
	if !ok {
		t.Fatalf("%s has no %s address", n.id, p)
	}
	return a
}

// summary renders a node's view as node id -> "lan=alive wan=dead".
func memberSummary(members []Member) map[string]string {
	out := make(map[string]string, len(members))
	for _, mb := range members {
		var parts []string
		for _, pm := range mb.Pools {
			parts = append(parts, pm.Pool.String()+"="+pm.Status.String())
		}
		out[mb.Meta.NodeID] = strings.Join(parts, " ")
	}
	return out
}

// waitGossip polls cond every 10 ms until it holds, failing after gossipWait;
// describe, if not nil, explains the state at the time of failure.
func waitGossip(t *testing.T, what string, cond func() bool, describe func() string) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(gossipWait)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			msg := ""
			if describe != nil {
				msg = ": " + describe()
			}
			t.Fatalf("timed out after %v waiting for %s%s", gossipWait, what, msg)
		}
	}
}

// waitForMemberView waits until n's view summary equals want.
func waitForMemberView(t *testing.T, n *memberNode, want map[string]string) {
	t.Helper()
	waitGossip(t, n.id+" to see "+fmt.Sprint(want),
		func() bool { return maps.Equal(memberSummary(n.m.Members()), want) },
		func() string { return fmt.Sprint(memberSummary(n.m.Members())) })
}

// membersGauge reads strata_gossip_members{pool,status} of m.
func membersGauge(t *testing.T, m *Membership, pool, status string) float64 {
	t.Helper()
	var out dto.Metric
	if err := m.members.WithLabelValues(pool, status).Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetGauge().GetValue()
}

func memberIDs(members []Member) []string {
	out := make([]string, len(members))
	for i, mb := range members {
		out[i] = mb.Meta.NodeID
	}
	return out
}

// startManagerPool starts managers m1..mn of use1 on 127.0.<subnet>.1…n, joined
// through the first, and waits until all see all alive.
func startManagerPool(t *testing.T, subnet, n int) []*memberNode {
	t.Helper()
	var nodes []*memberNode
	want := map[string]string{}
	for i := range n {
		s := memberSpec{gossip.RoleManager, "use1", fmt.Sprintf("m%d", i+1), fmt.Sprintf("127.0.%d.%d", subnet, i+1)}
		var seeds []string
		if i > 0 {
			seeds = []string{nodes[0].addr(t, PoolLAN)}
		}
		nodes = append(nodes, startMember(t, s, 0, seeds, nil))
		want[s.id] = "lan=alive"
	}
	for _, nd := range nodes {
		waitForMemberView(t, nd, want)
	}
	return nodes
}

func TestMembership_TwoRegionsFormLANPoolsAndGatesShareWAN(t *testing.T) {
	byID := map[string]*memberNode{}
	for r, region := range []string{"use1", "euw1"} {
		gate := memberSpec{gossip.RoleGate, region, "g-" + region, fmt.Sprintf("127.0.1.%d", 10*r+1)}
		var wanSeeds []string
		if r > 0 {
			wanSeeds = []string{byID["g-use1"].addr(t, PoolWAN)}
		}
		g := startMember(t, gate, 0, nil, wanSeeds)
		byID[gate.id] = g
		for i := range 2 {
			s := memberSpec{gossip.RoleManager, region, fmt.Sprintf("m-%s-%d", region, i+1), fmt.Sprintf("127.0.1.%d", 10*r+2+i)}
			byID[s.id] = startMember(t, s, 0, []string{g.addr(t, PoolLAN)}, nil)
		}
	}

	for _, region := range []string{"use1", "euw1"} {
		other := map[string]string{"use1": "euw1", "euw1": "use1"}[region]
		managerView := map[string]string{
			"g-" + region: "lan=alive", "m-" + region + "-1": "lan=alive", "m-" + region + "-2": "lan=alive",
		}
		gateView := maps.Clone(managerView)
		gateView["g-"+region] = "lan=alive wan=alive"
		gateView["g-"+other] = "wan=alive"
		waitForMemberView(t, byID["g-"+region], gateView)
		waitForMemberView(t, byID["m-"+region+"-1"], managerView)
		waitForMemberView(t, byID["m-"+region+"-2"], managerView)
	}

	tests := []struct {
		name   string
		asker  string
		role   gossip.Role
		region string
		want   []string
	}{
		{"managers of own region", "m-use1-1", gossip.RoleManager, "use1", []string{"m-use1-1", "m-use1-2"}},
		{"gate asks for its region's managers", "g-euw1", gossip.RoleManager, "euw1", []string{"m-euw1-1", "m-euw1-2"}},
		{"gates of all regions", "g-use1", gossip.RoleGate, "use1", []string{"g-euw1", "g-use1"}},
		{"gates ignore region", "g-euw1", gossip.RoleGate, "", []string{"g-euw1", "g-use1"}},
		{"manager is not in the wan pool", "m-use1-1", gossip.RoleGate, "use1", []string{}},
		{"other region's managers are not in the lan pool", "m-use1-1", gossip.RoleManager, "euw1", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := memberIDs(byID[tt.asker].m.Peers(tt.role, tt.region)); !slices.Equal(got, tt.want) {
				t.Errorf("Peers(%v, %q) = %v, want %v", tt.role, tt.region, got, tt.want)
			}
		})
	}

	g := byID["g-use1"]
	if got, want := memberIDs(g.m.Members()), []string{"g-euw1", "g-use1", "m-use1-1", "m-use1-2"}; !slices.Equal(got, want) {
		t.Errorf("Members() = %v, want %v (sorted, deduplicated)", got, want)
	}
	remote, ok := g.m.Lookup("g-euw1")
	if !ok || remote.Meta != memberMeta(memberSpec{gossip.RoleGate, "euw1", "g-euw1", "127.0.1.11"}) {
		t.Errorf("Lookup(g-euw1) = %+v, %v; want its metadata", remote.Meta, ok)
	}
	if _, ok := g.m.Lookup("m-euw1-1"); ok {
		t.Errorf("Lookup(m-euw1-1) found a manager of another region")
	}
	for _, c := range []struct {
		pool string
		want float64
	}{{"lan", 3}, {"wan", 2}} {
		if got := membersGauge(t, g.m, c.pool, "alive"); got != c.want {
			t.Errorf("strata_gossip_members{pool=%q,status=alive} = %v, want %v", c.pool, got, c.want)
		}
	}
}

func TestMembership_WaitForPeersReturnsOnceTheNthMemberJoins(t *testing.T) {
	first := startMember(t, memberSpec{gossip.RoleManager, "use1", "m1", "127.0.2.1"}, 0, nil, nil)
	seeds := []string{first.addr(t, PoolLAN)}
	type result struct {
		peers []Member
		err   error
	}
	done := make(chan result, 1)
	go func() {
		p, err := first.m.WaitForPeers(context.Background(), gossip.RoleManager, "use1", 3)
		done <- result{p, err}
	}()

	startMember(t, memberSpec{gossip.RoleManager, "use1", "m2", "127.0.2.2"}, 0, seeds, nil)
	waitGossip(t, "m1 to see m2", func() bool { return len(first.m.Peers(gossip.RoleManager, "use1")) == 2 }, nil)
	select {
	case r := <-done:
		t.Fatalf("WaitForPeers(3) returned with two members known: %v, %v", memberIDs(r.peers), r.err)
	default:
	}

	startMember(t, memberSpec{gossip.RoleManager, "use1", "m3", "127.0.2.3"}, 0, seeds, nil)
	select {
	case r := <-done:
		if r.err != nil || !slices.Equal(memberIDs(r.peers), []string{"m1", "m2", "m3"}) {
			t.Fatalf("WaitForPeers(3) = %v, %v; want [m1 m2 m3]", memberIDs(r.peers), r.err)
		}
	case <-time.After(gossipWait):
		t.Fatalf("WaitForPeers(3) did not return within %v of the third join", gossipWait)
	}
}

func TestMembership_WaitForPeersStopsOnCancelCloseAndWrongPool(t *testing.T) {
	n := startMember(t, memberSpec{gossip.RoleManager, "use1", "m1", "127.0.2.11"}, 0, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := n.m.WaitForPeers(ctx, gossip.RoleManager, "use1", 5)
		errc <- err
	}()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: err = %v, want context.Canceled", err)
	}

	if _, err := n.m.WaitForPeers(context.Background(), gossip.RoleGate, "use1", 1); !errors.Is(err, ErrNotInPool) {
		t.Errorf("manager waiting for gates: err = %v, want ErrNotInPool", err)
	}
	if peers, err := n.m.WaitForPeers(context.Background(), gossip.RoleManager, "use1", 1); err != nil || !slices.Equal(memberIDs(peers), []string{"m1"}) {
		t.Errorf("WaitForPeers(1) = %v, %v; want itself", memberIDs(peers), err)
	}

	go func() {
		_, err := n.m.WaitForPeers(context.Background(), gossip.RoleManager, "use1", 5)
		errc <- err
	}()
	if err := n.m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: err = %v, want ErrClosed", err)
	}
}

// reserveGossipPort returns a port free for TCP and UDP on ip at the time of the
// call, for a node that must start after others were told its address.
func reserveGossipPort(t *testing.T, ip string) int {
	t.Helper()
	l, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	u, err := net.ListenPacket("udp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("udp port %d: %v", port, err)
	}
	_ = u.Close()
	_ = l.Close()
	return port
}

func TestMembership_StartsWithDeadSeedAndJoinsWhenItComesUp(t *testing.T) {
	seedSpec := memberSpec{gossip.RoleManager, "use1", "seed", "127.0.3.1"}
	port := reserveGossipPort(t, seedSpec.ip)
	seedAddr := net.JoinHostPort(seedSpec.ip, strconv.Itoa(port))

	late := startMember(t, memberSpec{gossip.RoleManager, "use1", "late", "127.0.3.2"}, 0, []string{seedAddr}, nil)
	if got := memberIDs(late.m.Members()); !slices.Equal(got, []string{"late"}) {
		t.Fatalf("before the seed is up: Members() = %v, want only itself", got)
	}

	seed := startMember(t, seedSpec, port, nil, nil)
	want := map[string]string{"late": "lan=alive", "seed": "lan=alive"}
	waitForMemberView(t, late, want)
	waitForMemberView(t, seed, want)
}

func TestMembership_RejoinLoopHealsPartitionWithoutManualJoin(t *testing.T) {
	nodes := startManagerPool(t, 4, 3)
	isolated, rest := nodes[2], nodes[:2]
	for _, nd := range rest {
		isolated.faults.Partition(nd.ip)
		nd.faults.Partition(isolated.ip)
	}

	// memberlist alone heals a short partition: it still gossips to a node
	// it holds dead for GossipToTheDeadTime. Wait until both sides have held
	// each other dead longer than that, so that only the rejoin loop can.
	deadLongEnough := func(observer *memberNode, id string) bool {
		mb, ok := observer.m.Lookup(id)
		if !ok {
			return false
		}
		pm, _ := mb.In(PoolLAN)
		return pm.Status == MemberDead && time.Since(pm.Since) > testDeadGossip+time.Second
	}
	waitGossip(t, "both sides to hold each other dead", func() bool {
		for _, nd := range rest {
			if !deadLongEnough(nd, isolated.id) || !deadLongEnough(isolated, nd.id) {
				return false
			}
		}
		return true
	}, func() string {
		return fmt.Sprint(memberSummary(rest[0].m.Members()), memberSummary(isolated.m.Members()))
	})

	for _, nd := range nodes {
		nd.faults.HealAll()
	}
	want := map[string]string{"m1": "lan=alive", "m2": "lan=alive", "m3": "lan=alive"}
	for _, nd := range nodes {
		waitForMemberView(t, nd, want)
	}
}

func TestMembership_CloseIsSeenAsDeadAndLeaveAsLeft(t *testing.T) {
	nodes := startManagerPool(t, 5, 3)
	observer, closed, leaver := nodes[0], nodes[1], nodes[2]

	if err := closed.m.Close(); err != nil {
		t.Fatal(err)
	}
	status := func(id string) MemberStatus {
		mb, _ := observer.m.Lookup(id)
		return mb.Status
	}
	waitGossip(t, "the closed node to be declared dead", func() bool {
		if s := status(closed.id); s == MemberLeft {
			t.Fatalf("a closed node shows as left: Close must not leave")
		}
		return status(closed.id) == MemberDead
	}, nil)

	if err := leaver.m.Leave(5 * time.Second); err != nil {
		t.Fatalf("leave: %v", err)
	}
	if err := leaver.m.Close(); err != nil {
		t.Fatal(err)
	}
	waitGossip(t, "the leaver to show as left", func() bool { return status(leaver.id) == MemberLeft },
		func() string { return fmt.Sprint(memberSummary(observer.m.Members())) })

	if err := leaver.m.Leave(time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("Leave after Close: err = %v, want ErrClosed", err)
	}
	for s, want := range map[string]float64{"alive": 1, "dead": 1, "left": 1} {
		if got := membersGauge(t, observer.m, "lan", s); got != want {
			t.Errorf("strata_gossip_members{pool=lan,status=%s} = %v, want %v", s, got, want)
		}
	}
}

func TestMembershipConfig_Validate(t *testing.T) {
	gate := memberMeta(memberSpec{gossip.RoleGate, "use1", "g1", "127.0.0.1"})
	manager := memberMeta(memberSpec{gossip.RoleManager, "use1", "m1", "127.0.0.1"})
	valid := func(self gossip.Meta) Config {
		c := Config{Self: self, LANAddr: "127.0.0.1:7946", LANSeeds: []string{"10.0.0.2:7946", "seed.example:7946"}}
		if self.Role == gossip.RoleGate {
			c.WANAddr, c.WANSeeds = "127.0.0.1:7947", []string{"10.1.0.2:7947"}
		}
		return c
	}
	tests := []struct {
		name   string
		change func(*Config)
		want   bool
	}{
		{"gate", func(c *Config) {}, true},
		{"manager", func(c *Config) { *c = valid(manager) }, true},
		{"any port, both pools", func(c *Config) { c.LANAddr, c.WANAddr = "127.0.0.1:0", "127.0.0.1:0" }, true},
		{"invalid self", func(c *Config) { c.Self.NodeID = "" }, false},
		{"lan addr is a host name", func(c *Config) { c.LANAddr = "localhost:7946" }, false},
		{"lan addr without port", func(c *Config) { c.LANAddr = "127.0.0.1" }, false},
		{"gate without wan addr", func(c *Config) { c.WANAddr = "" }, false},
		{"lan and wan on one port", func(c *Config) { c.WANAddr = c.LANAddr }, false},
		{"manager with wan seeds", func(c *Config) { *c = valid(manager); c.WANSeeds = []string{"10.1.0.2:7947"} }, false},
		{"seed without port", func(c *Config) { c.LANSeeds = []string{"10.0.0.2"} }, false},
		{"seed port 0", func(c *Config) { c.LANSeeds = []string{"10.0.0.2:0"} }, false},
		{"too many seeds", func(c *Config) { c.LANSeeds = make([]string, MaxGossipSeeds+1) }, false},
		{"negative rejoin interval", func(c *Config) { c.RejoinInterval = -time.Second }, false},
		{"negative timing", func(c *Config) { c.WANTimings.ProbeTimeout = -1 }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid(gate)
			tt.change(&c)
			err := c.Validate()
			if got := err == nil; got != tt.want {
				t.Fatalf("Validate() = %v, want ok %v", err, tt.want)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("error %v does not wrap ErrInvalidConfig", err)
			}
		})
	}
}

// at returns a fixed instant plus s seconds: the view reads no clock.
func viewTime(s int) time.Time { return time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC) }

func viewSaw(pool Pool, s memberSpec, status MemberStatus, sec int) memberEvent {
	return memberEvent{Pool: pool, Name: s.id, Addr: s.ip + ":7946", Meta: memberMeta(s), MetaOK: true, Status: status, At: viewTime(sec)}
}

func TestMemberView_ObserveMergesPoolsAndRejectsForeignMetadata(t *testing.T) {
	g := memberSpec{gossip.RoleGate, "use1", "g1", "10.0.0.1"}
	v := newMemberView("g1")
	for _, o := range []memberEvent{viewSaw(PoolLAN, g, MemberAlive, 0), viewSaw(PoolWAN, g, MemberAlive, 1), viewSaw(PoolWAN, g, MemberDead, 2)} {
		if _, err := v.observe(o); err != nil {
			t.Fatal(err)
		}
	}
	got := v.members()
	want := []PoolMember{{PoolLAN, MemberAlive, "10.0.0.1:7946", viewTime(0)}, {PoolWAN, MemberDead, "10.0.0.1:7946", viewTime(2)}}
	if len(got) != 1 || got[0].Status != MemberAlive || !slices.Equal(got[0].Pools, want) {
		t.Fatalf("members() = %+v, want one alive member with pools %+v", got, want)
	}

	foreign := viewSaw(PoolLAN, g, MemberAlive, 3)
	foreign.Name = "m9"
	if _, err := v.observe(foreign); err == nil {
		t.Errorf("observe accepted metadata naming g1 from node m9")
	}
	unreadable := viewSaw(PoolLAN, memberSpec{gossip.RoleManager, "use1", "m2", "10.0.0.2"}, MemberDead, 3)
	unreadable.MetaOK = false
	if _, err := v.observe(unreadable); err == nil {
		t.Errorf("observe accepted an unknown node without metadata")
	}
}

func TestMemberView_LeaveIntentTurnsDepartureIntoLeft(t *testing.T) {
	m2 := memberSpec{gossip.RoleManager, "use1", "m2", "10.0.0.2"}
	type step struct {
		intent bool
		status MemberStatus // if !intent
	}
	alive, dead, intent := step{status: MemberAlive}, step{status: MemberDead}, step{intent: true}
	tests := []struct {
		name  string
		steps []step
		want  MemberStatus
	}{
		{"failure", []step{alive, dead}, MemberDead},
		{"intent then departure", []step{alive, intent, dead}, MemberLeft},
		{"departure then intent", []step{alive, dead, intent}, MemberLeft},
		{"a new life after a leave fails as dead", []step{alive, intent, dead, alive, dead}, MemberDead},
		{"intent for an unknown node", []step{intent}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newMemberView("m1")
			for i, s := range tt.steps {
				if s.intent {
					v.leaveIntent(PoolLAN, m2.id, viewTime(i))
				} else if _, err := v.observe(viewSaw(PoolLAN, m2, s.status, i)); err != nil {
					t.Fatal(err)
				}
			}
			if mb, _ := v.lookup(m2.id); mb.Status != tt.want {
				t.Errorf("status = %v, want %v", mb.Status, tt.want)
			}
		})
	}
}

func TestMemberView_RejoinTargets(t *testing.T) {
	v := newMemberView("m1")
	nodes := map[string]MemberStatus{"m1": MemberAlive, "m2": MemberAlive, "d1": MemberDead, "d2": MemberDead, "d3": MemberDead, "l1": MemberLeft}
	for id, status := range nodes {
		s := memberSpec{gossip.RoleManager, "use1", id, "10.0.0." + id}
		if status != MemberAlive {
			_, _ = v.observe(viewSaw(PoolLAN, s, MemberAlive, 0))
		}
		if _, err := v.observe(viewSaw(PoolLAN, s, status, 1)); err != nil {
			t.Fatal(err)
		}
	}
	seeds := []string{"10.0.0.m1:7946", "10.0.0.m2:7946", "10.0.0.d1:7946", "10.0.0.l1:7946", "seed:7946"}
	tests := []struct {
		name  string
		round int
		limit int
		want  []string
	}{
		{"seeds not alive, then dead members", 0, 10,
			[]string{"10.0.0.d1:7946", "10.0.0.l1:7946", "seed:7946", "10.0.0.d2:7946", "10.0.0.d3:7946"}},
		{"limit keeps seeds first", 0, 4, []string{"10.0.0.d1:7946", "10.0.0.l1:7946", "seed:7946", "10.0.0.d2:7946"}},
		{"dead members rotate with the round", 1, 4, []string{"10.0.0.d1:7946", "10.0.0.l1:7946", "seed:7946", "10.0.0.d2:7946"}},
		{"rotation reaches the last dead member", 2, 4, []string{"10.0.0.d1:7946", "10.0.0.l1:7946", "seed:7946", "10.0.0.d3:7946"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := v.rejoinTargets(PoolLAN, seeds, tt.round, tt.limit); !slices.Equal(got, tt.want) {
				t.Errorf("rejoinTargets(round %d, limit %d) = %v, want %v", tt.round, tt.limit, got, tt.want)
			}
			if got := v.rejoinTargets(PoolWAN, nil, tt.round, tt.limit); len(got) != 0 {
				t.Errorf("wan pool targets = %v, want none", got)
			}
		})
	}
}

func TestMemberView_ForgetDropsOldDeadAndLeftButNeverSelf(t *testing.T) {
	v := newMemberView("m1")
	for _, o := range []struct {
		id     string
		status MemberStatus
		sec    int
	}{{"m1", MemberDead, 0}, {"old-dead", MemberDead, 0}, {"new-dead", MemberDead, 50}, {"old-left", MemberLeft, 0}, {"alive", MemberAlive, 0}} {
		if _, err := v.observe(viewSaw(PoolLAN, memberSpec{gossip.RoleManager, "use1", o.id, "10.0.0.1"}, o.status, o.sec)); err != nil {
			t.Fatal(err)
		}
	}
	if !v.forget(viewTime(10), viewTime(10)) {
		t.Errorf("forget reported nothing dropped")
	}
	if v.forget(viewTime(10), viewTime(10)) {
		t.Errorf("second forget reported a drop")
	}
	if got, want := memberIDs(v.members()), []string{"alive", "m1", "new-dead"}; !slices.Equal(got, want) {
		t.Errorf("after forget: %v, want %v", got, want)
	}
}

func TestLeaveIntent_EncodingIsGolden(t *testing.T) {
	if got, want := encodeLeaveIntent("m-1"), []byte{1, 'm', '-', '1'}; !slices.Equal(got, want) {
		t.Errorf("encodeLeaveIntent(m-1) = %v, want %v", got, want)
	}
}

func FuzzDecodeLeaveIntent(f *testing.F) {
	f.Add(encodeLeaveIntent("m1"))
	f.Add([]byte{msgLeaveIntent})
	f.Add([]byte{2, 'm'})
	f.Add(append([]byte{msgLeaveIntent}, strings.Repeat("x", gossip.MaxNodeIDBytes+1)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, err := decodeLeaveIntent(b)
		if err != nil {
			return
		}
		if len(id) > gossip.MaxNodeIDBytes {
			t.Fatalf("decoded a %d-byte node id", len(id))
		}
		if got := encodeLeaveIntent(id); !slices.Equal(got, b) {
			t.Fatalf("encode(decode(%q)) = %q", b, got)
		}
	})
}

func TestMembership_LabelsKeepRegionsLANPoolsApart(t *testing.T) {
	use1 := startMember(t, memberSpec{gossip.RoleManager, "use1", "m-use1", "127.0.6.1"}, 0, nil, nil)
	euw1 := startMember(t, memberSpec{gossip.RoleManager, "euw1", "m-euw1", "127.0.6.2"}, 0, nil, nil)
	if _, err := euw1.m.pools[PoolLAN].ml.Join([]string{use1.addr(t, PoolLAN)}); err == nil {
		t.Fatalf("a euw1 manager joined the use1 LAN pool")
	}
	if got := memberIDs(use1.m.Members()); !slices.Equal(got, []string{"m-use1"}) {
		t.Errorf("use1 members = %v, want only itself", got)
	}
}

// TestMembership_GateGossipsItsWANAPIAddrInTheWANPool: a gate on two
// networks is found at its region address by its managers and at its WAN
// address by the other regions' gates (deploy/compose).
func TestMembership_GateGossipsItsWANAPIAddrInTheWANPool(t *testing.T) {
	start := func(s memberSpec, wanAPI string, lanSeeds, wanSeeds []string) *memberNode {
		t.Helper()
		cfg := Config{
			Self: memberMeta(s), LANAddr: s.ip + ":0", LANSeeds: lanSeeds, WANSeeds: wanSeeds,
			Logger: gossipTestLogger().With("node", s.id), RejoinInterval: 200 * time.Millisecond,
			LANTimings: gossipTestTimings(), WANTimings: gossipTestTimings(),
		}
		if s.role == gossip.RoleGate {
			cfg.WANAddr, cfg.WANAPIAddr = s.ip+":0", wanAPI
		}
		m, err := Start(cfg)
		if err != nil {
			t.Fatalf("start %s: %v", s.id, err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return &memberNode{id: s.id, ip: s.ip, m: m}
	}
	const wanAPI = "10.99.0.2:7100"
	gEU := start(memberSpec{gossip.RoleGate, "euw1", "g-euw1", "127.0.1.41"}, wanAPI, nil, nil)
	gUS := start(memberSpec{gossip.RoleGate, "use1", "g-use1", "127.0.1.42"}, "", nil, []string{gEU.addr(t, PoolWAN)})
	mEU := start(memberSpec{gossip.RoleManager, "euw1", "m-euw1", "127.0.1.43"}, "", []string{gEU.addr(t, PoolLAN)}, nil)
	waitForMemberView(t, gUS, map[string]string{"g-use1": "lan=alive wan=alive", "g-euw1": "wan=alive"})
	waitForMemberView(t, mEU, map[string]string{"g-euw1": "lan=alive", "m-euw1": "lan=alive"})
	for _, tc := range []struct {
		name  string
		asker *memberNode
		want  string
	}{
		{"another region's gate: the WAN address", gUS, wanAPI},
		{"its region's manager: the region address", mEU, "127.0.1.41:8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.asker.m.Lookup("g-euw1")
			if !ok || got.Meta.APIAddr != tc.want {
				t.Errorf("Lookup(g-euw1).Meta.APIAddr = %q (found %v), want %q", got.Meta.APIAddr, ok, tc.want)
			}
		})
	}
	bad := Config{Self: memberMeta(memberSpec{gossip.RoleManager, "euw1", "m", "127.0.1.44"}), LANAddr: "127.0.1.44:0", WANAPIAddr: wanAPI}
	if err := bad.Validate(); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a manager with a WAN API address: Validate() = %v, want ErrInvalidConfig", err)
	}
}
