package devcluster

import (
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/cluster/auth"
)

const (
	testToken        = "strata-test-token-0123456789"
	testClusterToken = "cluster-test-token-0123456789"
)

func testOptions(dir string) Options {
	return Options{DataDir: dir, Token: testToken, ClusterToken: testClusterToken}
}

func TestPlan_DefaultTopology(t *testing.T) {
	specs, err := Plan(testOptions("/d"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range specs {
		ids = append(ids, s.ID())
	}
	want := []string{
		"use1-gate1", "use1-mgr1", "use1-mgr2", "use1-mgr3",
		"euw1-gate1", "euw1-mgr1", "euw1-mgr2", "euw1-mgr3",
		"apse1-gate1", "apse1-mgr1", "apse1-mgr2", "apse1-mgr3",
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	byID := make(map[string]cluster.NodeConfig)
	for _, s := range specs {
		byID[s.ID()] = s.Config
	}
	gate, mgr := byID["euw1-gate1"], byID["apse1-mgr3"]
	checks := []struct{ name, got, want string }{
		{"gate http", gate.HTTPAddr, "127.0.11.1:7100"},
		{"gate raft", gate.RaftAddr, "127.0.11.1:7200"},
		{"gate gossip", gate.GossipAddr, "127.0.11.1:7300"},
		{"gate gossip wan", gate.GossipWANAddr, "127.0.11.1:7400"},
		{"gate data plane", gate.DataPlaneAddr, ""},
		{"gate role", string(gate.Role), "gate"},
		{"mgr http", mgr.HTTPAddr, "127.0.12.4:7100"},
		{"mgr data plane", mgr.DataPlaneAddr, "127.0.12.4:7500"},
		{"mgr gossip wan", mgr.GossipWANAddr, ""},
		{"mgr role", string(mgr.Role), "manager"},
		{"mgr region", mgr.Region, "apse1"},
		{"mgr data dir", mgr.DataDir, filepath.Join("/d", "apse1-mgr3", "data")},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
}

func TestPlan_EveryNodeHasItsOwnIPAndAddresses(t *testing.T) {
	specs, err := Plan(Options{DataDir: "/d", Regions: []string{"use1", "euw1"}, GatesPerRegion: 2, ManagersPerRegion: 5,
		Token: testToken, ClusterToken: testClusterToken})
	if err != nil {
		t.Fatal(err)
	}
	ips := make(map[string]string)
	addrs := make(map[string]string)
	for _, s := range specs {
		c := s.Config
		host, _, err := net.SplitHostPort(c.HTTPAddr)
		if err != nil {
			t.Fatal(err)
		}
		if other, dup := ips[host]; dup {
			t.Errorf("%s and %s share IP %s", other, s.ID(), host)
		}
		ips[host] = s.ID()
		if !net.ParseIP(host).IsLoopback() {
			t.Errorf("%s: %s is not loopback", s.ID(), host)
		}
		for _, a := range []string{c.HTTPAddr, c.RaftAddr, c.GossipAddr, c.GossipWANAddr, c.DataPlaneAddr} {
			if a == "" {
				continue
			}
			if h, _, _ := net.SplitHostPort(a); h != host {
				t.Errorf("%s: %s is not on the node's IP %s", s.ID(), a, host)
			}
			if other, dup := addrs[a]; dup {
				t.Errorf("%s and %s share address %s", other, s.ID(), a)
			}
			addrs[a] = s.ID()
		}
		for _, p := range []string{s.Dir, s.ConfigPath, s.LogPath, c.DataDir} {
			if !strings.Contains(p, s.ID()) {
				t.Errorf("%s: path %s is not under its node dir", s.ID(), p)
			}
		}
	}
	if len(specs) != 2*(2+5) {
		t.Fatalf("%d nodes, want 14", len(specs))
	}
}

func TestPlan_SeedsAndBootstrapExpectMatchGroups(t *testing.T) {
	specs, err := Plan(testOptions("/d"))
	if err != nil {
		t.Fatal(err)
	}
	var gateWAN []string
	lan := make(map[string][]string) // region → gossip addrs of its nodes
	groupSize := make(map[string]int)
	for _, s := range specs {
		c := s.Config
		lan[c.Region] = append(lan[c.Region], c.GossipAddr)
		if c.Role == cluster.RoleGate {
			gateWAN = append(gateWAN, c.GossipWANAddr)
			groupSize["global"]++
		} else {
			groupSize[c.Region]++
		}
	}
	for _, s := range specs {
		c := s.Config
		slices.Sort(lan[c.Region])
		join := slices.Sorted(slices.Values(c.Join))
		if !slices.Equal(join, lan[c.Region]) {
			t.Errorf("%s joins %v, want its region's pool %v", s.ID(), join, lan[c.Region])
		}
		group := c.Region
		if c.Role == cluster.RoleGate {
			group = "global"
			want := slices.DeleteFunc(slices.Clone(gateWAN), func(a string) bool { return a == c.GossipWANAddr })
			if !slices.Equal(c.JoinWAN, want) {
				t.Errorf("%s joins WAN %v, want the other gates %v", s.ID(), c.JoinWAN, want)
			}
		} else if len(c.JoinWAN) != 0 {
			t.Errorf("manager %s joins WAN %v", s.ID(), c.JoinWAN)
		}
		if c.BootstrapExpect != groupSize[group] {
			t.Errorf("%s bootstrap_expect %d, want %d (%s group)", s.ID(), c.BootstrapExpect, groupSize[group], group)
		}
	}
	if groupSize["global"] != 3 || groupSize["use1"] != 3 {
		t.Fatalf("group sizes %v", groupSize)
	}
}

func TestPlan_CarriesSettingsAndTokensToEveryNode(t *testing.T) {
	o := testOptions("/d")
	o.WANLatency = 50 * time.Millisecond
	o.EnableFaultInjection = true
	o.LogLevel = "debug"
	specs, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		c := s.Config
		if c.WANLatency != o.WANLatency || !c.EnableFaultInjection || c.LogLevel != "debug" || c.ClusterToken != testClusterToken {
			t.Errorf("%s: settings not carried: %+v", s.ID(), c)
		}
		if len(c.Tokens) != 2 || c.Tokens[0].Token != testToken || c.Tokens[0].Tenant != auth.AllTenants ||
			c.Tokens[1].Token != ViewerToken(testToken) || len(c.Tokens[1].Scopes) != 1 || c.Tokens[1].Scopes[0] != string(auth.ScopeJobsRead) {
			t.Errorf("%s: tokens %+v", s.ID(), c.Tokens)
		}
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", s.ID(), err)
		}
	}
}

func TestPlan_SubnetAndBasePortMoveEveryAddress(t *testing.T) {
	o := testOptions("/d")
	o.SubnetBase, o.BasePort = 200, 20000
	specs, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	if got := specs[0].Config.HTTPAddr; got != "127.0.200.1:20000" {
		t.Errorf("first node http %s", got)
	}
	if got := specs[len(specs)-1].Config.DataPlaneAddr; got != "127.0.202.4:20400" {
		t.Errorf("last node data plane %s", got)
	}
}

func TestPlan_RejectsBadOptions(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Options)
		inErr string
	}{
		{"no data dir", func(o *Options) { o.DataDir = "" }, "data dir is required"},
		{"bad region", func(o *Options) { o.Regions = []string{"US-East"} }, `region "US-East"`},
		{"duplicate region", func(o *Options) { o.Regions = []string{"use1", "use1"} }, `"use1" listed twice`},
		{"too many managers", func(o *Options) { o.ManagersPerRegion = 8 }, "managers per region 8"},
		{"negative managers", func(o *Options) { o.ManagersPerRegion = -1 }, "managers per region -1"},
		{"negative gates", func(o *Options) { o.GatesPerRegion = -1 }, "gates per region -1"},
		{"global group too big", func(o *Options) { o.GatesPerRegion = 3 }, "9 gates"},
		{"subnet past 255", func(o *Options) { o.SubnetBase = 254 }, "subnet base 254"},
		{"negative subnet", func(o *Options) { o.SubnetBase = -3 }, "subnet base -3"},
		{"port too low", func(o *Options) { o.BasePort = 80 }, "base port 80"},
		{"port past 65535", func(o *Options) { o.BasePort = 65400 }, "base port 65400"},
		{"negative latency", func(o *Options) { o.WANLatency = -time.Millisecond }, "wan latency"},
		{"bad log level", func(o *Options) { o.LogLevel = "loud" }, `log level "loud"`},
		{"no token", func(o *Options) { o.Token = "" }, "token: at least 16"},
		{"short cluster token", func(o *Options) { o.ClusterToken = "short" }, "cluster token: at least 16"},
		{"negative workers", func(o *Options) { o.WorkersPerRegion = -1 }, "workers per region -1"},
		{"too many workers", func(o *Options) { o.WorkersPerRegion = maxWorkersPerRegion + 1 }, "workers per region 65"},
		{"negative worker capacity", func(o *Options) { o.WorkerCapacity = -2 }, "worker capacity -2"},
		{"worker capacity over the limit", func(o *Options) { o.WorkerCapacity = 1001 }, "worker capacity 1001"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOptions("/d")
			tt.edit(&o)
			_, err := Plan(o)
			if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), tt.inErr) {
				t.Fatalf("err = %v, want ErrBadOptions containing %q", err, tt.inErr)
			}
		})
	}
}

func TestPlan_SmallestClusterIsValid(t *testing.T) {
	o := testOptions("/d")
	o.Regions, o.ManagersPerRegion = []string{"use1"}, 1
	specs, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 || specs[0].Config.BootstrapExpect != 1 || specs[1].Config.BootstrapExpect != 1 || len(specs[0].Config.JoinWAN) != 0 {
		t.Fatalf("plan %+v", specs)
	}
}

func TestPlanWorkers_PerRegionAtItsManagers(t *testing.T) {
	o := testOptions("/d")
	o.WorkersPerRegion, o.LogLevel = 2, "debug"
	specs, err := Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	workers, err := PlanWorkers(o)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, w := range workers {
		ids = append(ids, w.ID)
		var managers []string
		for _, s := range specs {
			if s.Config.Role == cluster.RoleManager && s.Config.Region == w.Region {
				managers = append(managers, s.Config.HTTPAddr)
			}
		}
		if !slices.Equal(w.Managers, managers) || len(managers) != DefaultManagersPerRegion {
			t.Errorf("%s: managers %v, want its region's %v", w.ID, w.Managers, managers)
		}
		if w.Capacity != DefaultWorkerCapacity || w.Dir != filepath.Join("/d", w.ID) || w.LogPath != filepath.Join("/d", w.ID, "worker.log") {
			t.Errorf("%s: %+v", w.ID, w)
		}
	}
	want := []string{"w-use1-1", "w-use1-2", "w-euw1-1", "w-euw1-2", "w-apse1-1", "w-apse1-2"}
	if !slices.Equal(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	args := strings.Join(workers[2].Args(), " ")
	wantArgs := "worker --manager 127.0.11.2:7100,127.0.11.3:7100,127.0.11.4:7100 --region euw1 --capacity 8 --id w-euw1-1 --log-level debug"
	if args != wantArgs {
		t.Errorf("args = %s\nwant   %s", args, wantArgs)
	}
	if strings.Contains(args, testToken) {
		t.Error("the token is on the command line")
	}

	o.WorkersPerRegion = 0
	if none, err := PlanWorkers(o); err != nil || len(none) != 0 {
		t.Fatalf("no workers asked: %v, %v", none, err)
	}
}
