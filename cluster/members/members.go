package members

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/transport/faultnet"
	"github.com/strata-ledger/strata/transport/gossip"
)

// Sentinel errors of Membership.
var (
	// ErrClosed is returned by calls on a closed Membership.
	ErrClosed = errors.New("cluster: membership closed")
	// ErrInvalidConfig is returned by Config.Validate.
	ErrInvalidConfig = errors.New("cluster: invalid membership config")
	// ErrNotInPool is returned when a node asks about a pool it is not in: a
	// manager about the gates' WAN pool.
	ErrNotInPool = errors.New("cluster: node is not in that gossip pool")
)

// Defaults and limits of Membership.
const (
	// DefaultRejoinInterval is how often the rejoin loop contacts dead
	// members and seeds that are not alive members.
	DefaultRejoinInterval = 10 * time.Second
	// DefaultForgetDeadAfter is how long a dead member is kept (and
	// rejoined) before it is forgotten, as Serf's reconnect_timeout.
	DefaultForgetDeadAfter = 24 * time.Hour
	// DefaultForgetLeftAfter is how long a member that left is kept, so
	// that the members API shows it, as Serf's tombstone_timeout.
	DefaultForgetLeftAfter = 24 * time.Hour
	// MaxGossipSeeds bounds the seeds of one pool.
	MaxGossipSeeds = 64
	// maxRejoinTargets bounds the addresses one round of the rejoin loop
	// contacts in one pool; more dead members are taken in turns.
	maxRejoinTargets = 32
	// rejoinParallelism bounds the joins of one pool in flight at once: a
	// join to a partitioned address blocks for the pool's TCP timeout.
	rejoinParallelism = 4
)

// Config configures a Membership. Zero fields take their defaults.
type Config struct {
	// Self is the metadata this node gossips; Self.NodeID is its memberlist
	// name in every pool.
	Self gossip.Meta
	// LANAddr is the ip:port the region's LAN pool binds; port 0 picks one.
	LANAddr string
	// WANAddr is the ip:port of the gates' WAN pool: required for a gate,
	// empty for a manager.
	WANAddr string
	// WANAPIAddr, if set, is the API address a gate gossips in the WAN
	// pool instead of Self.APIAddr: a gate on two networks (its region's
	// and the WAN between gates) is reached by its region's managers at
	// Self.APIAddr and by the other regions' gates at this one. Gates
	// only; empty: Self.APIAddr in every pool.
	WANAPIAddr string
	// LANSeeds and WANSeeds are host:port addresses to join; this node's own
	// address may be listed. A down seed does not fail Start: the rejoin
	// loop keeps trying it until it is an alive member.
	LANSeeds []string
	WANSeeds []string
	// Faults, if not nil, applies the node's fault rules to gossip traffic.
	Faults *faultnet.Faults
	// Logger receives membership changes and memberlist's own log lines.
	// Default: discard.
	Logger *slog.Logger
	// Registerer receives the strata_gossip_members gauges. Nil: not
	// exported.
	Registerer prometheus.Registerer
	// RejoinInterval is the period of the rejoin loop. Default
	// DefaultRejoinInterval.
	RejoinInterval time.Duration
	// ForgetDeadAfter and ForgetLeftAfter bound how long dead and left
	// members are kept. Defaults DefaultForgetDeadAfter, DefaultForgetLeftAfter.
	ForgetDeadAfter time.Duration
	ForgetLeftAfter time.Duration
	// LANTimings and WANTimings override memberlist's LAN and WAN defaults;
	// production leaves them zero, tests shorten them.
	LANTimings PoolTimings
	WANTimings PoolTimings
	// Keyring, if not nil, encrypts and authenticates every pool's gossip
	// (AES-GCM under its primary key; any key of the ring decrypts), and
	// messages that do not decrypt are dropped. One ring serves every pool,
	// so a rotation (install, use, remove) changes them together.
	Keyring *memberlist.Keyring
}

// PoolTimings overrides memberlist timings of one pool; a zero field keeps
// memberlist.DefaultLANConfig's (LAN pool) or DefaultWANConfig's (WAN pool).
type PoolTimings struct {
	ProbeInterval       time.Duration
	ProbeTimeout        time.Duration
	SuspicionMult       int
	GossipInterval      time.Duration
	PushPullInterval    time.Duration
	TCPTimeout          time.Duration
	GossipToTheDeadTime time.Duration
}

func (t PoolTimings) validate(pool Pool) error {
	for _, d := range []time.Duration{t.ProbeInterval, t.ProbeTimeout, t.GossipInterval, t.PushPullInterval, t.TCPTimeout, t.GossipToTheDeadTime} {
		if d < 0 {
			return fmt.Errorf("%w: %s timings: negative duration %v", ErrInvalidConfig, pool, d)
		}
	}
	if t.SuspicionMult < 0 {
		return fmt.Errorf("%w: %s timings: suspicion mult %d < 0", ErrInvalidConfig, pool, t.SuspicionMult)
	}
	return nil
}

func (t PoolTimings) apply(c *memberlist.Config) {
	setIf := func(dst *time.Duration, v time.Duration) {
		if v > 0 {
			*dst = v
		}
	}
	setIf(&c.ProbeInterval, t.ProbeInterval)
	setIf(&c.ProbeTimeout, t.ProbeTimeout)
	setIf(&c.GossipInterval, t.GossipInterval)
	setIf(&c.PushPullInterval, t.PushPullInterval)
	setIf(&c.TCPTimeout, t.TCPTimeout)
	setIf(&c.GossipToTheDeadTime, t.GossipToTheDeadTime)
	if t.SuspicionMult > 0 {
		c.SuspicionMult = t.SuspicionMult
	}
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.RejoinInterval == 0 {
		c.RejoinInterval = DefaultRejoinInterval
	}
	if c.ForgetDeadAfter == 0 {
		c.ForgetDeadAfter = DefaultForgetDeadAfter
	}
	if c.ForgetLeftAfter == 0 {
		c.ForgetLeftAfter = DefaultForgetLeftAfter
	}
	return c
}

// Validate reports the first invalid field of c; zero fields that have a
// default are valid.
func (c Config) Validate() error {
	if err := c.Self.Validate(); err != nil {
		return fmt.Errorf("%w: self: %w", ErrInvalidConfig, err)
	}
	if err := checkGossipBindAddr("lan addr", c.LANAddr); err != nil {
		return err
	}
	switch c.Self.Role {
	case gossip.RoleGate:
		if err := checkGossipBindAddr("wan addr", c.WANAddr); err != nil {
			return err
		}
		if c.WANAddr == c.LANAddr && !isZeroPort(c.LANAddr) {
			return fmt.Errorf("%w: lan and wan pools both bind %s", ErrInvalidConfig, c.LANAddr)
		}
		if c.WANAPIAddr != "" {
			if _, _, err := net.SplitHostPort(c.WANAPIAddr); err != nil {
				return fmt.Errorf("%w: wan api addr %q: %w", ErrInvalidConfig, c.WANAPIAddr, err)
			}
		}
	case gossip.RoleManager:
		if c.WANAddr != "" || len(c.WANSeeds) > 0 || c.WANAPIAddr != "" {
			return fmt.Errorf("%w: a manager is not in the wan pool: wan addr, wan api addr and seeds must be empty", ErrInvalidConfig)
		}
	}
	for _, s := range []struct {
		name  string
		seeds []string
	}{{"lan seeds", c.LANSeeds}, {"wan seeds", c.WANSeeds}} {
		if err := checkGossipSeeds(s.name, s.seeds); err != nil {
			return err
		}
	}
	if c.RejoinInterval < 0 || c.ForgetDeadAfter < 0 || c.ForgetLeftAfter < 0 {
		return fmt.Errorf("%w: rejoin interval, forget dead after and forget left after must not be negative", ErrInvalidConfig)
	}
	if err := c.LANTimings.validate(PoolLAN); err != nil {
		return err
	}
	return c.WANTimings.validate(PoolWAN)
}

// checkGossipBindAddr checks an ip:port a pool binds: gossip.Transport needs an
// IP, not a host name.
func checkGossipBindAddr(name, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%w: %s %q: %w", ErrInvalidConfig, name, addr, err)
	}
	if net.ParseIP(host) == nil {
		return fmt.Errorf("%w: %s %q: host is not an IP", ErrInvalidConfig, name, addr)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("%w: %s %q: bad port", ErrInvalidConfig, name, addr)
	}
	return nil
}

func isZeroPort(addr string) bool {
	_, port, _ := net.SplitHostPort(addr)
	return port == "0"
}

func checkGossipSeeds(name string, seeds []string) error {
	if len(seeds) > MaxGossipSeeds {
		return fmt.Errorf("%w: %d %s, max %d", ErrInvalidConfig, len(seeds), name, MaxGossipSeeds)
	}
	for _, s := range seeds {
		host, port, err := net.SplitHostPort(s)
		if err != nil || host == "" {
			return fmt.Errorf("%w: %s: %q is not host:port", ErrInvalidConfig, name, s)
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return fmt.Errorf("%w: %s: %q: bad port", ErrInvalidConfig, name, s)
		}
	}
	return nil
}

// Membership runs a node's gossip pools — its region's LAN pool and, for a
// gate, the WAN pool of all gates (DESIGN §1) — and keeps the view of the
// members they report: node metadata (API, Raft and data-plane addresses)
// and status per pool.
//
// It only reports. Gossip never changes Raft membership: a member declared
// dead stays a Raft voter until an operator removes it, and Close does not
// leave the pools, because a restart is not a leave. Raft membership changes
// through the operator API, or at first start through bootstrap_expect,
// for which WaitForPeers says when enough of the group is known.
//
// memberlist never contacts a node it holds dead again, so after a
// partition longer than a few gossip rounds both sides would stay apart. A
// rejoin loop per pool, as Serf's reconnect, therefore joins the members held
// dead (until ForgetDeadAfter) and the seeds that are not alive members,
// every RejoinInterval; the first round runs at Start and joins the seeds.
//
// memberlist does not tell its event delegate whether a node that went
// away failed or left, so Leave first gossips a leave intent, as Serf does;
// a member that got it reports the departure as left, any other as dead.
//
// Gossip is encrypted when Config.Keyring is set.
//
// Not done: suspicion is not reported (see MemberStatus); a seed given by host
// name is joined every round, since it cannot be matched to a member.
//
// All methods are safe for concurrent use.
type Membership struct {
	cfg     Config
	log     *slog.Logger
	members *prometheus.GaugeVec
	pools   [poolCount]*gossipPool // pools[PoolWAN] is nil on a manager

	mu      sync.Mutex
	view    *memberView
	changed chan struct{} // closed and replaced on every change of view

	lifecycle sync.Mutex // serialises Leave and Close
	closed    bool
	done      chan struct{} // closed by Close
	stopLoops context.CancelFunc
	loops     sync.WaitGroup
}

// gossipPool is one running memberlist pool.
type gossipPool struct {
	which Pool
	seeds []string
	ml    *memberlist.Memberlist
	// intents holds the leave intents this node sends or passes on.
	intents *memberlist.TransmitLimitedQueue
}

// Start binds and starts the node's pools and their rejoin loops.
// It returns once the pools listen; joining the seeds happens in the
// background, so the first node of a cluster, or a node whose seeds are
// down, starts all the same.
func Start(cfg Config) (*Membership, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Membership{
		cfg:     cfg,
		log:     cfg.Logger,
		members: newMembersGauge(),
		view:    newMemberView(cfg.Self.NodeID),
		changed: make(chan struct{}),
		done:    make(chan struct{}),
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(m.members); err != nil {
			return nil, fmt.Errorf("register gossip metrics: %w", err)
		}
	}
	if err := m.startPool(PoolLAN, cfg.LANAddr, cfg.LANSeeds, cfg.LANTimings); err != nil {
		_ = m.shutdown()
		return nil, err
	}
	if cfg.Self.Role == gossip.RoleGate {
		if err := m.startPool(PoolWAN, cfg.WANAddr, cfg.WANSeeds, cfg.WANTimings); err != nil {
			_ = m.shutdown()
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.stopLoops = cancel
	for _, p := range m.pools {
		if p != nil {
			m.loops.Go(func() { m.rejoinLoop(ctx, p) })
		}
	}
	return m, nil
}

func newMembersGauge() *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "strata_gossip_members",
		Help: "Members of a gossip pool known to this node, by status (alive, dead, left).",
	}, []string{"pool", "status"})
}

// startPool binds one pool's transport and starts its memberlist.
func (m *Membership) startPool(which Pool, bindAddr string, seeds []string, timings PoolTimings) error {
	host, portStr, _ := net.SplitHostPort(bindAddr) // validated
	port, _ := strconv.Atoi(portStr)
	logger := m.log.With("pool", which.String())
	tr, err := gossip.NewTransport(gossip.TransportConfig{BindAddr: host, BindPort: port, Faults: m.cfg.Faults, Logger: logger})
	if err != nil {
		return fmt.Errorf("start gossip %s pool on %s: %w", which, bindAddr, err)
	}
	self := m.cfg.Self
	if which == PoolWAN && m.cfg.WANAPIAddr != "" {
		self.APIAddr = m.cfg.WANAPIAddr
	}
	meta, err := gossip.NewMetaDelegate(self)
	if err != nil {
		_ = tr.Shutdown()
		return fmt.Errorf("start gossip %s pool: %w", which, err)
	}
	conf := memberlistConfig(which, m.cfg.Self.Region, timings)
	p := &gossipPool{which: which, seeds: seeds, intents: &memberlist.TransmitLimitedQueue{
		NumNodes:       func() int { return m.aliveCount(which) },
		RetransmitMult: conf.RetransmitMult,
	}}
	conf.Name = m.cfg.Self.NodeID
	conf.Transport = tr
	if m.cfg.Keyring != nil {
		conf.Keyring = m.cfg.Keyring
		conf.GossipVerifyIncoming, conf.GossipVerifyOutgoing = true, true
	}
	conf.Delegate = poolDelegate{MetaDelegate: meta, m: m, pool: p}
	conf.Events = poolEvents{m: m, pool: which}
	conf.Logger = log.New(memberlistLog{log: logger}, "", 0)
	// memberlist reports this node's own join during Create.
	if p.ml, err = memberlist.Create(conf); err != nil {
		_ = tr.Shutdown()
		return fmt.Errorf("start gossip %s pool on %s: %w", which, bindAddr, err)
	}
	m.pools[which] = p
	return nil
}

// memberlistConfig returns memberlist's LAN or WAN defaults with timings
// applied. The label keeps pools apart: a node given another region's LAN
// address, or a WAN address as a LAN seed, is refused instead of merging
// two pools.
func memberlistConfig(which Pool, region string, timings PoolTimings) *memberlist.Config {
	var c *memberlist.Config
	if which == PoolWAN {
		c = memberlist.DefaultWANConfig()
		c.Label = "strata-wan"
	} else {
		c = memberlist.DefaultLANConfig()
		c.Label = "strata-lan-" + region
	}
	timings.apply(c)
	return c
}

// Members returns every node known in any pool, once per node id, sorted by
// node id; this node is included. It backs GET /v1/cluster/members.
func (m *Membership) Members() []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view.members()
}

// Regions returns every region a known member belongs to, alive or not,
// sorted, this node's included: a region whose nodes are all down is
// still one the cluster-wide maintenance mode must reach when it comes
// back (cluster/lifecycle).
func (m *Membership) Regions() []string { return regionsOf(m.Members()) }

// regionsOf is the sorted set of ms's regions.
func regionsOf(ms []Member) []string {
	var out []string
	for _, x := range ms {
		if r := x.Meta.Region; r != "" && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// Peers returns the alive members of role's Raft group, sorted by node id,
// this node included if it is one: for managers, the managers of region
// alive in the LAN pool; for gates, every gate alive in the WAN pool, whatever
// region says. A manager asking for gates gets none: it is not in the WAN
// pool.
func (m *Membership) Peers(role gossip.Role, region string) []Member {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view.peers(role, region)
}

// WaitForPeers blocks until at least n members of role's Raft group (as
// Peers defines it) are alive, this node included, and returns them sorted
// by node id. It wakes on memberlist's events, not on a timer; it returns
// early with ctx's error, or ErrClosed.
func (m *Membership) WaitForPeers(ctx context.Context, role gossip.Role, region string, n int) ([]Member, error) {
	if n < 1 || n > maxTrackedMembers {
		return nil, fmt.Errorf("wait for %d %s peers: want 1..%d", n, role, maxTrackedMembers)
	}
	if !m.inPool(groupPool(role)) {
		return nil, fmt.Errorf("wait for %s peers: %w (%s)", role, ErrNotInPool, groupPool(role))
	}
	for {
		m.mu.Lock()
		peers := m.view.peers(role, region)
		changed := m.changed
		m.mu.Unlock()
		if len(peers) >= n {
			return peers, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for %d %s peers in %s (have %d): %w", n, role, region, len(peers), ctx.Err())
		case <-m.done:
			return nil, ErrClosed
		}
	}
}

// Lookup returns the member whose node id (the Raft server id) is nodeID,
// e.g. to find the API address of a Raft leader to forward to.
func (m *Membership) Lookup(nodeID string) (Member, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.view.lookup(nodeID)
}

// Changed returns a channel that is closed at the next change of the view.
func (m *Membership) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.changed
}

// Addr returns this node's gossip host:port in pool p, as memberlist
// advertises it (the bound port when configured with port 0).
func (m *Membership) Addr(p Pool) (string, bool) {
	self, ok := m.Lookup(m.cfg.Self.NodeID)
	if !ok {
		return "", false
	}
	pm, ok := self.In(p)
	return pm.Addr, ok
}

// rejoinLoop runs a round at once, then every RejoinInterval, until ctx is
// cancelled.
func (m *Membership) rejoinLoop(ctx context.Context, p *gossipPool) {
	tick := time.NewTicker(m.cfg.RejoinInterval)
	defer tick.Stop()
	for round := 0; ; round++ {
		m.rejoin(ctx, p, round)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// rejoin forgets long-dead and long-left members, then joins the pool's
// rejoin targets, a few at a time. A join that fails is tried again next
// round; one that succeeds shows as memberlist events.
func (m *Membership) rejoin(ctx context.Context, p *gossipPool, round int) {
	now := time.Now()
	m.mu.Lock()
	if p.which == PoolLAN { // every node has a LAN pool: forget once per round
		if m.view.forget(now.Add(-m.cfg.ForgetDeadAfter), now.Add(-m.cfg.ForgetLeftAfter)) {
			m.publishLocked()
		}
	}
	targets := m.view.rejoinTargets(p.which, p.seeds, round, maxRejoinTargets)
	m.mu.Unlock()

	slots := make(chan struct{}, rejoinParallelism)
	var joins sync.WaitGroup
	defer joins.Wait()
	for _, addr := range targets {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		joins.Go(func() {
			defer func() { <-slots }()
			if _, err := p.ml.Join([]string{addr}); err != nil {
				m.log.Debug("gossip: rejoin failed", "pool", p.which.String(), "addr", addr, "err", err)
				return
			}
			m.log.Debug("gossip: rejoined", "pool", p.which.String(), "addr", addr)
		})
	}
}

// Leave announces to every pool that this node leaves and stops the rejoin
// loops; members then see this node as left. In each pool it gossips a
// leave intent, then memberlist's leave, waiting up to timeout for each to
// go out. It is for an operator's removal of the node, not for a restart,
// and it does not change Raft membership either. Call Close afterwards.
func (m *Membership) Leave(timeout time.Duration) error {
	m.lifecycle.Lock()
	defer m.lifecycle.Unlock()
	if m.closed {
		return ErrClosed
	}
	if timeout <= 0 {
		return fmt.Errorf("leave gossip pools: timeout %v must be positive", timeout)
	}
	m.stopLoops() // a node that left must not rejoin
	errs := make([]error, poolCount)
	var leaves sync.WaitGroup
	for _, p := range m.pools {
		if p != nil {
			leaves.Go(func() { errs[p.which] = m.leavePool(p, timeout) })
		}
	}
	leaves.Wait()
	return errors.Join(errs...)
}

func (m *Membership) leavePool(p *gossipPool, timeout time.Duration) error {
	self := m.cfg.Self.NodeID
	m.recordLeaveIntent(p.which, self) // so that this node sees itself left
	var errs []error
	if m.aliveCount(p.which) > 1 {
		b := &leaveBroadcast{node: self, sent: make(chan struct{})}
		p.intents.QueueBroadcast(b)
		timer := time.NewTimer(timeout)
		select {
		case <-b.sent:
		case <-timer.C:
			errs = append(errs, fmt.Errorf("leave gossip %s pool: intent not sent within %v", p.which, timeout))
		}
		timer.Stop()
	}
	if err := p.ml.Leave(timeout); err != nil {
		errs = append(errs, fmt.Errorf("leave gossip %s pool: %w", p.which, err))
	}
	return errors.Join(errs...)
}

// Close stops the rejoin loops and shuts the pools down WITHOUT leaving
// them: the other members see this node fail (dead), not leave, because a
// restart is not a leave (DESIGN §1). Close is idempotent.
func (m *Membership) Close() error {
	m.lifecycle.Lock()
	defer m.lifecycle.Unlock()
	if m.closed {
		return nil
	}
	m.closed = true
	m.stopLoops()
	err := m.shutdown() // also releases joins blocked on a partitioned peer
	m.loops.Wait()
	close(m.done)
	return err
}

// shutdown shuts down the pools started so far and unregisters the gauges.
func (m *Membership) shutdown() error {
	var errs []error
	for _, p := range m.pools {
		if p == nil {
			continue
		}
		if err := p.ml.Shutdown(); err != nil {
			errs = append(errs, fmt.Errorf("shut down gossip %s pool: %w", p.which, err))
		}
	}
	if m.cfg.Registerer != nil {
		m.cfg.Registerer.Unregister(m.members)
	}
	return errors.Join(errs...)
}

// memberlistLog turns memberlist's log lines ("[WARN] memberlist: …") into
// records of the same level.
type memberlistLog struct{ log *slog.Logger }

func (w memberlistLog) Write(p []byte) (int, error) {
	level := slog.LevelInfo
	for _, l := range []struct {
		prefix string
		level  slog.Level
	}{{"[DEBUG]", slog.LevelDebug}, {"[WARN]", slog.LevelWarn}, {"[ERR]", slog.LevelError}, {"[ERROR]", slog.LevelError}} {
		if bytes.HasPrefix(p, []byte(l.prefix)) {
			level = l.level
			break
		}
	}
	if w.log.Enabled(context.Background(), level) {
		w.log.Log(context.Background(), level, string(bytes.TrimSpace(p)))
	}
	return len(p), nil
}
