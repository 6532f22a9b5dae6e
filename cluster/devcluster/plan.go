package devcluster

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/strata-ledger/strata/cluster"
	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/wal"
)

// Defaults of Options; the zero value of a field means its default. The
// default regions are use1, euw1 and apse1 (defaultRegions).
const (
	DefaultManagersPerRegion = 3
	DefaultGatesPerRegion    = 1
	DefaultSubnetBase        = 10   // 127.0.10.x, 127.0.11.x, 127.0.12.x
	DefaultBasePort          = 7100 // http; raft, gossip, wan and data plane follow
	DefaultLogLevel          = "info"
	// DefaultWorkerCapacity is each reference worker's capacity: with a
	// couple of workers per region, the example job (4 workflows per
	// region) runs at once.
	DefaultWorkerCapacity = 8
)

// Limits of a plan.
const (
	// maxRegions bounds the subnets a plan takes (DESIGN §13: regions per job).
	maxRegions = 16
	// maxGroupVoters is the largest Raft group bootstrap_expect allows.
	maxGroupVoters = 7
	// portStride separates the kinds of port: http at BasePort, raft at
	// BasePort+portStride, gossip at +2×, gossip WAN at +3×, data plane at +4×.
	portStride = 100
	portKinds  = 5
	// minTokenLen is the auth package's rule, checked here so a short
	// token is named once rather than once per node.
	minTokenLen = auth.MinTokenLen
	// maxWorkersPerRegion bounds the worker processes of one region.
	maxWorkersPerRegion = 64
)

func defaultRegions() []string { return []string{"use1", "euw1", "apse1"} }

// Port offsets from Options.BasePort, in units of portStride.
const (
	offsetHTTP = iota
	offsetRaft
	offsetGossip
	offsetGossipWAN
	offsetDataPlane
)

// Scopes of the dev cluster's one API token: everything, on every tenant.
var tokenScopes = []string{string(auth.ScopeOperator), string(auth.ScopeJobsRead), string(auth.ScopeJobsWrite)}

// ErrBadOptions wraps every error of Options.Validate.
var ErrBadOptions = errors.New("bad dev cluster options")

// Options is the shape and settings of a dev cluster.
type Options struct {
	DataDir           string   // the cluster's directory; node directories go under it
	Regions           []string // region codes; default use1, euw1, apse1
	ManagersPerRegion int      // one regional Raft group of this size per region
	GatesPerRegion    int      // all gates form the global Raft group
	// SubnetBase puts region r on 127.0.(SubnetBase+r).0/24.
	SubnetBase int
	// BasePort is each node's http port; the other ports follow (portStride).
	BasePort int

	WANLatency           time.Duration // added to traffic between regions
	EnableFaultInjection bool
	Token                string // the API token, bound to all tenants with every scope
	ClusterToken         string // shared by all nodes for internal calls
	LogLevel             string // debug, info, warn or error

	// WorkersPerRegion reference workers (`strata worker`) run in each
	// region, pointed at its managers; default none. Unlike nodes, their
	// number may change between runs on one data directory.
	WorkersPerRegion int
	WorkerCapacity   int // each worker's capacity; default DefaultWorkerCapacity

	// WALSegmentBytes is every node's wal_segment_bytes; 0 keeps the
	// node default (64 MiB, preallocated twice over: an idle node's
	// NodeWAL then takes 128 MiB).
	WALSegmentBytes int64

	// TLS runs every node with TLS (API, node-to-node HTTP, mutual TLS on
	// Raft) and encrypted gossip: New makes a CA and certificates under
	// DATA/tls (pki.go) and a gossip key, kept in secrets.json, reused on
	// restart. A data directory keeps the setting it was first run with.
	TLS bool
	// GossipKey is the gossip key (base64, 32 bytes) of a TLS cluster;
	// New sets it from secrets.json, making one on first start.
	GossipKey string
}

// NodeSpec is one planned node: its config and where its files go.
type NodeSpec struct {
	Config     cluster.NodeConfig
	Dir        string // DATA/<node_id>
	ConfigPath string // DATA/<node_id>/agent.yaml
	LogPath    string // DATA/<node_id>/agent.log
}

// ID is the node's id.
func (s NodeSpec) ID() string { return s.Config.NodeID }

// withDefaults returns o with every zero field set to its default.
func (o Options) withDefaults() Options {
	if len(o.Regions) == 0 {
		o.Regions = defaultRegions()
	}
	if o.ManagersPerRegion == 0 {
		o.ManagersPerRegion = DefaultManagersPerRegion
	}
	if o.GatesPerRegion == 0 {
		o.GatesPerRegion = DefaultGatesPerRegion
	}
	if o.SubnetBase == 0 {
		o.SubnetBase = DefaultSubnetBase
	}
	if o.BasePort == 0 {
		o.BasePort = DefaultBasePort
	}
	if o.LogLevel == "" {
		o.LogLevel = DefaultLogLevel
	}
	if o.WorkerCapacity == 0 {
		o.WorkerCapacity = DefaultWorkerCapacity
	}
	return o
}

// Validate checks o after defaults and names every bad field.
func (o Options) Validate() error { return o.withDefaults().validate(true) }

// validate checks o, which has its defaults; tokens only if withTokens
// (New checks the shape before it loads the tokens from the data dir).
func (o Options) validate(withTokens bool) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.DataDir == "" {
		bad("data dir is required")
	}
	if len(o.Regions) > maxRegions {
		bad("%d regions: at most %d", len(o.Regions), maxRegions)
	}
	for i, r := range o.Regions {
		if !fsm.IsRegion(r) {
			bad("region %q must be a short lowercase code such as use1", r)
		}
		if slices.Contains(o.Regions[:i], r) {
			bad("region %q listed twice", r)
		}
	}
	if o.ManagersPerRegion < 1 || o.ManagersPerRegion > maxGroupVoters {
		bad("managers per region %d: must be 1..%d (one Raft group)", o.ManagersPerRegion, maxGroupVoters)
	}
	if o.GatesPerRegion < 1 {
		bad("gates per region %d: must be at least 1", o.GatesPerRegion)
	}
	if gates := o.GatesPerRegion * len(o.Regions); gates > maxGroupVoters {
		bad("%d gates (%d per region × %d regions): the global Raft group takes at most %d", gates, o.GatesPerRegion, len(o.Regions), maxGroupVoters)
	}
	if last := o.SubnetBase + len(o.Regions) - 1; o.SubnetBase < 1 || last > 255 {
		bad("subnet base %d: 127.0.%d.x to 127.0.%d.x must lie within 127.0.1.x..127.0.255.x", o.SubnetBase, o.SubnetBase, last)
	}
	if last := o.BasePort + (portKinds-1)*portStride; o.BasePort < 1024 || last > 65535 {
		bad("base port %d: ports %d..%d must lie within 1024..65535", o.BasePort, o.BasePort, last)
	}
	if o.WANLatency < 0 {
		bad("wan latency %v must not be negative", o.WANLatency)
	}
	if o.WALSegmentBytes != 0 && (o.WALSegmentBytes < cluster.MinWALSegmentBytes || o.WALSegmentBytes > wal.MaxSegmentBytes) {
		bad("wal segment bytes %d must be %d..%d", o.WALSegmentBytes, cluster.MinWALSegmentBytes, int64(wal.MaxSegmentBytes))
	}
	if (withTokens || o.Token != "") && len(o.Token) < minTokenLen {
		bad("token: at least %d characters required", minTokenLen)
	}
	if (withTokens || o.ClusterToken != "") && len(o.ClusterToken) < minTokenLen {
		bad("cluster token: at least %d characters required", minTokenLen)
	}
	if o.GossipKey != "" {
		if _, err := cluster.DecodeGossipKey(o.GossipKey); err != nil {
			bad("gossip key: %v", err)
		}
	} else if withTokens && o.TLS {
		bad("gossip key: required with tls")
	}
	switch o.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		bad("log level %q: want debug, info, warn or error", o.LogLevel)
	}
	if o.WorkersPerRegion < 0 || o.WorkersPerRegion > maxWorkersPerRegion {
		bad("workers per region %d: must be 0..%d", o.WorkersPerRegion, maxWorkersPerRegion)
	}
	if o.WorkerCapacity < 1 || o.WorkerCapacity > cluster.MaxWorkerCapacity {
		bad("worker capacity %d: must be 1..%d", o.WorkerCapacity, cluster.MaxWorkerCapacity)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrBadOptions, errors.Join(errs...))
}

// Plan lays out every node of the cluster o describes: gates first, then
// managers, region by region. It does no I/O; tokens (and, with TLS, the
// gossip key) must already be set. Each node's config passes
// cluster.NodeConfig.Validate, which with TLS means the certificates must
// already be in DATA/tls (New makes them).
func Plan(o Options) ([]NodeSpec, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	perRegion := o.GatesPerRegion + o.ManagersPerRegion
	var wanSeeds []string
	for r := range o.Regions {
		for g := range o.GatesPerRegion {
			wanSeeds = append(wanSeeds, o.addr(r, 1+g, offsetGossipWAN))
		}
	}
	var specs []NodeSpec
	for r, region := range o.Regions {
		lanSeeds := make([]string, 0, perRegion)
		for n := 1; n <= perRegion; n++ {
			lanSeeds = append(lanSeeds, o.addr(r, n, offsetGossip))
		}
		for n := 1; n <= perRegion; n++ {
			s := o.node(r, n, region, lanSeeds)
			if s.Config.Role == cluster.RoleGate {
				s.Config.GossipWANAddr = o.addr(r, n, offsetGossipWAN)
				s.Config.JoinWAN = withoutAddr(wanSeeds, s.Config.GossipWANAddr)
				s.Config.BootstrapExpect = o.GatesPerRegion * len(o.Regions)
			} else {
				s.Config.DataPlaneAddr = o.addr(r, n, offsetDataPlane)
				s.Config.BootstrapExpect = o.ManagersPerRegion
			}
			if err := s.Config.Validate(); err != nil {
				return nil, fmt.Errorf("plan node %s: %w", s.ID(), err)
			}
			specs = append(specs, s)
		}
	}
	return specs, nil
}

// node builds the part of node n of region r that gates and managers share.
func (o Options) node(r, n int, region string, lanSeeds []string) NodeSpec {
	role, id := cluster.RoleGate, fmt.Sprintf("%s-gate%d", region, n)
	if n > o.GatesPerRegion {
		role, id = cluster.RoleManager, fmt.Sprintf("%s-mgr%d", region, n-o.GatesPerRegion)
	}
	dir := filepath.Join(o.DataDir, id)
	cfg := cluster.DefaultNodeConfig()
	cfg.NodeID = id
	cfg.Role = role
	cfg.Region = region
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.HTTPAddr = o.addr(r, n, offsetHTTP)
	cfg.RaftAddr = o.addr(r, n, offsetRaft)
	cfg.GossipAddr = o.addr(r, n, offsetGossip)
	cfg.Join = slices.Clone(lanSeeds)
	cfg.Tokens = append([]auth.TokenConfig{{Token: o.Token, Tenant: auth.AllTenants, Scopes: slices.Clone(tokenScopes)},
		{Token: ViewerToken(o.Token), Tenant: auth.AllTenants, Scopes: []string{string(auth.ScopeJobsRead)}}}, o.workerTokens()...)
	cfg.ClusterToken = o.ClusterToken
	cfg.WANLatency = o.WANLatency
	cfg.EnableFaultInjection = o.EnableFaultInjection
	cfg.LogLevel = o.LogLevel
	if o.WALSegmentBytes > 0 {
		cfg.WALSegmentBytes = o.WALSegmentBytes
	}
	if o.TLS {
		cfg.TLS = nodeTLSFiles(o.DataDir, id)
		cfg.GossipKey = o.GossipKey
	}
	return NodeSpec{
		Config:     cfg,
		Dir:        dir,
		ConfigPath: filepath.Join(dir, "agent.yaml"),
		LogPath:    filepath.Join(dir, "agent.log"),
	}
}

// ip is the loopback IP of node n (1-based) of region index r.
func (o Options) ip(r, n int) string {
	return fmt.Sprintf("127.0.%d.%d", o.SubnetBase+r, n)
}

func (o Options) addr(r, n, offset int) string {
	return net.JoinHostPort(o.ip(r, n), strconv.Itoa(o.BasePort+offset*portStride))
}

func withoutAddr(addrs []string, self string) []string {
	return slices.DeleteFunc(slices.Clone(addrs), func(a string) bool { return a == self })
}
