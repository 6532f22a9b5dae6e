package cluster

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/strata-ledger/strata/antientropy/ledgertree"
	"github.com/strata-ledger/strata/cluster/aestatus"
	"github.com/strata-ledger/strata/cluster/auth"
	"github.com/strata-ledger/strata/cluster/backup"
	"github.com/strata-ledger/strata/cluster/chaincheck"
	"github.com/strata-ledger/strata/cluster/commit"
	"github.com/strata-ledger/strata/cluster/dataplane"
	"github.com/strata-ledger/strata/cluster/decisive"
	"github.com/strata-ledger/strata/cluster/group"
	"github.com/strata-ledger/strata/cluster/httpapi"
	"github.com/strata-ledger/strata/cluster/lifecycle"
	"github.com/strata-ledger/strata/cluster/livestats"
	"github.com/strata-ledger/strata/cluster/members"
	"github.com/strata-ledger/strata/cluster/peer"
	"github.com/strata-ledger/strata/cluster/regionsync"
	"github.com/strata-ledger/strata/cluster/replica"
	"github.com/strata-ledger/strata/cluster/storemetrics"
	"github.com/strata-ledger/strata/cluster/tracing"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/fsm/boltstore"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/faultnet"
	"github.com/strata-ledger/strata/transport/gossip"
	"github.com/strata-ledger/strata/transport/raftnet"
	"github.com/strata-ledger/strata/wal"
)

// Node timings.
const (
	// drainTimeout bounds a graceful stop: leadership transfer, in-flight
	// HTTP requests, the pipeline.
	drainTimeout = 10 * time.Second
	// bootstrapRetry is the pause between two waits for bootstrap peers.
	bootstrapRetry = time.Second
)

// NodeOptions are what a NodeConfig does not say: the process's logger and
// version, and test hooks.
type NodeOptions struct {
	Logger  *slog.Logger
	Version string
	// OnFatal is called once when the node cannot go on (its ledger store
	// or NodeWAL failed); the agent exits. Default: log only.
	OnFatal func(error)
	// Membership overrides gossip timings (tests shorten them).
	LANTimings, WANTimings members.PoolTimings
	RejoinInterval         time.Duration
	// DisableReconcilers keeps the job-lifecycle reconcilers and the
	// forwarder from running on this node's leadership (tests of the API
	// alone).
	DisableReconcilers bool
	// Tracer records the node's spans; nil: the one cfg.Tracing
	// describes (tests hand in one with an in-memory exporter).
	Tracer *tracing.Tracer
}

// Node is one gate or manager: NodeWAL, Raft group with the ledger as its
// FSM, gossip membership, commit pipeline and the HTTP API
// (cluster/DESIGN.md).
type Node struct {
	cfg     NodeConfig
	role    roleParts // what the role decides, chosen once
	opts    NodeOptions
	log     *slog.Logger
	reg     *prometheus.Registry
	auth    *auth.Authenticator
	clock   *hlc.Clock
	stamper *commit.Stamper // the one place events get their origin
	store   *boltstore.Store
	ledger  *fsm.Ledger
	applied *group.AppliedIndex
	// commits counts the store's commits: the lifecycle loops wake on it
	// and read the last commit (issue 19, group.CommittedObserver).
	commits *group.AppliedIndex
	faults  *faultnet.Faults

	// physical is the wall clock the HLC reads, shifted by the
	// clock-skew fault (faultnet.Rules.ClockOffset) when fault injection is on.
	physical faultnet.Clock

	raft    *group.Group
	wal     *wal.WAL
	prop    *group.Proposer
	pipe    *commit.Pipeline
	members *members.Membership
	jobIDs  *fsm.JobIDGenerator // gates only
	// decisive keeps a gate's cancels and its reconciler's completions of
	// one job apart (gates only).
	decisive *decisive.Jobs
	peers    *peer.Peers     // node-to-node calls
	api      *httpapi.Server // the HTTP API, served on ln
	ln       net.Listener
	lnWAN    net.Listener // a gate's second API listener (http_wan_addr, wire_wanapi.go), or nil

	dp   *dataplane.Manager   // progress receiver and flush (wire_dataplane.go); nil on gates
	live *livestats.Board     // jobs' live statistics pushed by managers; gates only
	life *lifecycle.Lifecycle // reconcilers, forwarder, workers' liveness, lease view (wire_lifecycle.go)

	tree    *ledgertree.Tracker // the ledger's Merkle tree and checkpoints (wire_replica.go)
	replica *replica.Checker    // is this ledger the one its group holds?
	// The regional ↔ global view (wire_regionsync.go): a gate's per
	// region, a manager's of its region and its syncer.
	regionViews *ledgertree.Regions
	regionView  *ledgertree.Tracker
	regionSync  *regionsync.Syncer
	ae          *aestatus.Gatherer // GET /v1/cluster/antientropy
	backups     *backup.Backups    // scheduled backups (nil without backup.dir)
	signingKey  ed25519.PrivateKey // signs exports and checkpoints (nil: unsigned)
	sec         security           // TLS, gossip keyring, admin listener (wire_tls.go)

	regions atomic.Pointer[map[string]string] // peer IP -> region, for WAN latency

	ctx      context.Context // ends at Close
	cancel   context.CancelFunc
	bg       sync.WaitGroup
	fatal    sync.Once
	closing  atomic.Bool
	closeMu  sync.Once
	closeErr error
	// ownTracer is the tracer StartNode built (and Close flushes); nil
	// when NodeOptions brought one.
	ownTracer *tracing.Tracer
}

// roleParts is everything a node's role decides, chosen once here: a gate
// runs the global group (WAN timings, GLOBAL tier), makes job ids and
// joins the WAN pool; a manager runs its region's group (LAN timings,
// REGIONAL tier).
type roleParts struct {
	gate  bool
	tier  commit.Durability
	group string // the group's name: session tokens, deliveries, metrics
	kind  group.Kind
}

func roleOf(cfg NodeConfig) roleParts {
	if cfg.Role == RoleGate {
		return roleParts{gate: true, tier: commit.DurabilityGlobal, group: GlobalGroup, kind: group.Global}
	}
	return roleParts{tier: commit.DurabilityRegional, group: cfg.Region, kind: group.Regional}
}

// StartNode opens everything under cfg.DataDir, starts Raft, gossip and the
// HTTP API, and returns. Bootstrap (first start) and NodeWAL recovery run in
// the background; /readyz says when the node serves.
func StartNode(cfg NodeConfig, opts NodeOptions) (_ *Node, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "(devel)"
	}
	opts.Version = gossip.FitVersion(opts.Version)
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	n := &Node{cfg: cfg, opts: opts, log: opts.Logger.With("node", cfg.NodeID), reg: prometheus.NewRegistry()}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.role = roleOf(cfg)
	empty := map[string]string{}
	n.regions.Store(&empty)
	defer func() {
		if err != nil {
			n.closeParts()
		}
	}()
	if n.opts.Tracer == nil {
		if n.ownTracer, err = tracing.New(cfg.Tracing, "strata-"+string(cfg.Role), cfg.NodeID); err != nil {
			return nil, err
		}
		n.opts.Tracer = n.ownTracer
	}
	n.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := group.BridgeRaftMetrics(n.reg); err != nil {
		n.log.Warn("raft metrics not exported", "err", err)
	}
	if n.auth, err = auth.NewAuthenticator(cfg.Tokens); err != nil {
		return nil, err
	}
	if cfg.SigningKey != "" {
		if n.signingKey, err = loadSigningKey(cfg.SigningKey); err != nil {
			return nil, fmt.Errorf("signing_key: %w", err)
		}
	}
	if err = n.openSecurity(); err != nil {
		return nil, err
	}
	if err = n.openClockAndLedger(); err != nil {
		return nil, err
	}
	if err = n.openRaft(); err != nil {
		return nil, err
	}
	n.registerNodeMetrics()
	if err = n.listenHTTP(); err != nil {
		return nil, err
	}
	if err = n.startMembership(); err != nil {
		return nil, err
	}
	if err = n.openPipeline(); err != nil {
		return nil, err
	}
	if err = n.openDataPlane(); err != nil {
		return nil, err
	}
	if n.role.gate {
		n.live = livestats.NewBoard(time.Now)
	}
	if err = n.startAPI(); err != nil {
		return nil, err
	}
	n.runDataPlane()
	n.bg.Go(n.bootstrap)
	n.bg.Go(n.recoverPipeline)
	n.bg.Go(n.trackRegions)
	n.bg.Go(func() { n.replica.Run(n.ctx) })
	if n.regionSync != nil {
		n.bg.Go(func() { n.regionSync.Run(n.ctx) })
	}
	if cfg.Backup.Dir != "" {
		if n.backups, err = backup.New(backup.Config{Dir: cfg.Backup.Dir, Interval: cfg.Backup.Interval, Retain: cfg.Backup.Retain,
			Group: n.role.group, Ledger: n.ledger, IsLeader: n.raft.IsLeader, Term: n.raft.Raft.CurrentTerm, Logger: n.log.With("component", "backup"), Registerer: n.reg}); err != nil {
			return nil, err
		}
		n.bg.Go(func() { n.backups.Run(n.ctx) })
	}
	if n.role.gate {
		cc, err := chaincheck.New(n.ledger, cfg.ChainVerifyInterval, n.log.With("component", "chain-check"), n.reg)
		if err != nil {
			return nil, err
		}
		n.bg.Go(func() { cc.Run(n.ctx) })
	}
	if !opts.DisableReconcilers {
		n.bg.Go(func() { n.life.Run(n.ctx) })
	}
	n.log.Info("node started", "role", cfg.Role, "region", cfg.Region, "api", n.ln.Addr().String(),
		"raft", n.raft.Transport.LocalAddr(), "had_state", n.raft.HadState)
	return n, nil
}

// GlobalGroup names the gates' Raft group in session tokens and the API.
const GlobalGroup = group.GlobalName

func (n *Node) openClockAndLedger() error {
	skew := prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_hlc_clock_skew_rejections_total",
		Help: "Remote HLC timestamps rejected for being more than max_offset ahead."})
	ticks := prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_hlc_ticks_total",
		Help: "HLC timestamps handed out (Now and accepted Update)."})
	n.reg.MustRegister(skew, ticks)
	var err error
	n.clock, err = hlc.New(hlc.Config{
		Node: n.cfg.Ordinal(), Physical: n.physical.UnixMilli,
		Persister: NewClockFile(n.cfg.DataDir), MaxOffset: n.cfg.HLCMaxOffset, SkewRejections: skew, Ticks: ticks,
	})
	if err != nil {
		return fmt.Errorf("clock: %w", err)
	}
	n.registerClockMetrics()
	if n.stamper, err = commit.NewStamper(n.clock, n.cfg.NodeID, n.cfg.Region); err != nil {
		return err
	}
	// Group commit (issue 19): Raft entries share bbolt transactions; a
	// read commits what is pending, a crash loses only what Raft replays.
	if n.store, err = boltstore.Open(boltstore.Config{Path: filepath.Join(n.cfg.DataDir, "ledger.db"),
		CommitInterval: n.cfg.LedgerCommitInterval, Logger: n.log}); err != nil {
		return fmt.Errorf("ledger store: %w", err)
	}
	n.reg.MustRegister(storemetrics.New(n.store))
	if why := n.store.Rebuilt(); why != "" {
		n.log.Warn("ledger store rebuilt from raft", "reason", why)
	}
	obs, err := n.newTrees()
	if err != nil {
		return err
	}
	lc := fsm.Config{Store: n.store, Observer: obs, Admission: admissionHook(n.role.gate), Meter: meterHook(n.role.gate)}
	if n.role.gate { // job latency and failures (lifecycle/jobmetrics.go); n.life is set before Raft applies
		lc.Ended = func(e fsm.JobEnd) { n.life.JobEnded(e) }
	}
	if n.ledger, err = fsm.New(lc); err != nil {
		return err
	}
	if err = n.buildTree(); err != nil {
		return err
	}
	n.applied = group.NewAppliedIndex(n.ledger.AppliedIndex())
	n.commits = group.NewAppliedIndex(0)
	if n.role.gate {
		n.decisive = decisive.New()
	}
	if n.life, err = n.newLifecycle(); err != nil {
		return err
	}
	if n.role.gate {
		n.jobIDs, err = fsm.NewJobIDGenerator(fsm.JobIDConfig{Region: n.cfg.Region, Gate: gateName(n.cfg.NodeID), Clock: n.stamper.Now})
	}
	return err
}

// gateName is the node id reduced to the letters and digits a job id's
// gate part allows.
func gateName(nodeID string) string {
	b := make([]byte, 0, len(nodeID))
	for i := 0; i < len(nodeID); i++ {
		if c := nodeID[i]; c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b = append(b, c)
		}
	}
	return string(b)
}

func (n *Node) openRaft() error {
	var err error
	n.faults, err = faultnet.New(faultnet.Config{
		LocalRegion: n.cfg.Region, WANLatency: n.cfg.WANLatency, Logger: n.log, Registerer: n.reg,
		RegionOf: func(peer string) string { return (*n.regions.Load())[peer] }, Clock: &n.physical,
	})
	if err != nil {
		return err
	}
	layer, err := raftnet.Listen(raftnet.Config{ListenAddr: n.cfg.RaftAddr, Logger: n.log, TLS: n.raftTLS()})
	if err != nil {
		return fmt.Errorf("raft listen: %w", err)
	}
	var stream raft.StreamLayer = layer
	if n.usesFaults() {
		stream = raftnet.WithFaults(layer, n.faults)
	}
	// The lifecycle learns of an entry once the store committed it: its
	// loops read the last commit (wire_lifecycle.go).
	committed := group.NewCommittedObserver(n.life, n.store, n.commits)
	n.store.SetOnCommit(committed.Committed)
	lf, err := group.NewFSM(group.FSMConfig{Ledger: n.ledger, Logger: n.log, Registerer: n.reg, OnFatal: n.onFatal,
		OnApplied: n.applied.Set, Observer: committed})
	if err != nil {
		layer.Close()
		return err
	}
	n.raft, err = group.Open(group.Config{NodeID: n.cfg.NodeID, Kind: n.role.kind, Dir: filepath.Join(n.cfg.DataDir, "raft"),
		FSM: lf, Stream: stream, LogSink: slogWriter{n.log.With("component", "raft")},
		SnapshotThreshold: n.cfg.SnapshotThreshold, SnapshotInterval: n.cfg.SnapshotInterval})
	if err != nil {
		layer.Close()
		return err
	}
	return nil
}

// usesFaults: the fault layer sits in the path only when it can act, so a
// production node pays nothing for it.
func (n *Node) usesFaults() bool { return n.cfg.EnableFaultInjection || n.cfg.WANLatency > 0 }

func (n *Node) openPipeline() error {
	var err error
	// The tier watermark holds segments back too: compaction can never
	// pass a record Recover would replay, whatever COMPACTED says.
	if n.wal, err = wal.Open(wal.Config{Dir: filepath.Join(n.cfg.DataDir, "wal"), SegmentBytes: n.cfg.WALSegmentBytes,
		Retain: []wal.Level{commit.WALLevel(n.role.tier), wal.Compacted}, Logger: n.log, Registerer: n.reg}); err != nil {
		return fmt.Errorf("nodewal: %w", err)
	}
	if n.prop, err = group.NewProposer(n.raft.Raft, group.ProposerConfig{Registerer: n.reg}); err != nil {
		return err
	}
	n.peers, err = peer.New(peer.Config{NodeID: n.cfg.NodeID, Role: n.cfg.Role, Region: n.cfg.Region, Group: n.role.group,
		ClusterToken: n.cfg.ClusterToken, HTTPAddr: n.peerSourceAddr(), Faults: n.faults, Members: n.members,
		Proposer: n.prop, Registerer: n.reg, TLS: n.sec.tls})
	if err != nil {
		return err
	}
	n.bg.Go(func() { n.peers.Run(n.ctx) })
	n.pipe, err = commit.NewPipeline(commit.PipelineConfig{Tier: n.role.tier, WAL: n.wal, Committer: n.prop,
		Forwarder: n.peers, OnFatal: n.onFatal, Logger: n.log, Registerer: n.reg,
		NodeID: n.cfg.NodeID, RefusalFile: filepath.Join(n.cfg.DataDir, "refusals"), OnStaged: n.onStaged,
		Applied: n.batchApplied})
	if err != nil {
		return err
	}
	n.bg.Go(n.watchLeader)
	if err := n.startWALGC(); err != nil {
		return err
	}
	if err := n.newReplicaCheck(); err != nil {
		return err
	}
	if err := n.newRegionSync(); err != nil {
		return err
	}
	return n.newAEStatus()
}

// watchLeader tells the pipeline of every leader change Raft observes, so
// records waiting to retry try the new leader at once.
func (n *Node) watchLeader() { n.raft.WatchLeader(n.ctx, n.pipe.LeaderChanged) }

func (n *Node) startMembership() error {
	var wanAddr string
	var wanSeeds []string
	if n.role.gate {
		wanAddr, wanSeeds = n.cfg.GossipWANAddr, n.cfg.JoinWAN
	}
	mc := members.Config{
		Self: gossip.Meta{Role: n.cfg.Role, Region: n.cfg.Region, NodeID: n.cfg.NodeID, APIAddr: n.ln.Addr().String(),
			RaftAddr: n.raft.LocalAddr(), DataAddr: n.cfg.DataPlaneAddr, Version: n.opts.Version},
		LANAddr: n.cfg.GossipAddr, WANAddr: wanAddr, WANAPIAddr: n.wanAPIAddr(), LANSeeds: n.cfg.Join, WANSeeds: wanSeeds,
		Logger: n.log, Registerer: n.reg, LANTimings: n.opts.LANTimings, WANTimings: n.opts.WANTimings,
		RejoinInterval: n.opts.RejoinInterval, Keyring: n.sec.keyring,
	}
	if n.usesFaults() {
		mc.Faults = n.faults
	}
	var err error
	n.members, err = members.Start(mc)
	return err
}

// bootstrap forms the group on a first start: it waits until gossip shows
// bootstrap_expect members of the group, then every one of them proposes
// the same sorted configuration (identical bootstraps are accepted by
// hashicorp/raft). A node with Raft state never bootstraps.
func (n *Node) bootstrap() {
	if n.raft.HadState {
		return
	}
	for n.ctx.Err() == nil {
		peers, err := n.members.WaitForPeers(n.ctx, n.cfg.Role, n.cfg.Region, n.cfg.BootstrapExpect)
		if err != nil {
			if n.ctx.Err() == nil {
				n.log.Warn("bootstrap: waiting for peers", "err", err)
				sleepCtx(n.ctx, bootstrapRetry)
			}
			continue
		}
		servers := make([]group.Server, 0, len(peers))
		for _, p := range peers {
			servers = append(servers, group.Server{ID: p.Meta.NodeID, Addr: p.Meta.RaftAddr})
		}
		if err := n.raft.Bootstrap(servers); err != nil {
			n.log.Error("bootstrap failed", "err", err)
			return
		}
		n.log.Info("bootstrapped raft group", "group", n.role.group, "servers", len(servers))
		return
	}
}

// recoverPipeline re-proposes what the NodeWAL holds above the tier
// watermark (DESIGN §4).
func (n *Node) recoverPipeline() {
	count, err := n.pipe.Recover(n.ctx)
	switch {
	case err != nil && n.ctx.Err() == nil:
		n.onFatal(fmt.Errorf("nodewal recovery: %w", err))
	case count > 0:
		n.log.Info("nodewal recovery re-proposed records", "records", count)
	}
}

// trackRegions keeps the peer-IP-to-region map the fault layer's WAN
// latency reads on every write.
func (n *Node) trackRegions() {
	for {
		m := map[string]string{}
		for _, mem := range n.members.Members() {
			for _, a := range []string{mem.Meta.RaftAddr, mem.Meta.APIAddr} {
				if host, _, err := net.SplitHostPort(a); err == nil {
					m[host] = mem.Meta.Region
				}
			}
			for _, pm := range mem.Pools {
				if host, _, err := net.SplitHostPort(pm.Addr); err == nil {
					m[host] = mem.Meta.Region
				}
			}
		}
		n.regions.Store(&m)
		select {
		case <-n.members.Changed():
		case <-n.ctx.Done():
			return
		}
	}
}

func (n *Node) onFatal(err error) {
	n.fatal.Do(func() {
		n.log.Error("fatal: node must stop", "err", err)
		if n.opts.OnFatal != nil {
			n.opts.OnFatal(err)
		}
	})
}

// Addr is the HTTP API's address.
func (n *Node) Addr() string { return n.ln.Addr().String() }

// ID is the node id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Faults is the node's fault-injection layer.
func (n *Node) Faults() *faultnet.Faults { return n.faults }

// Drain stops the node gracefully (SIGTERM): it transfers leadership if it
// leads, stops taking requests and finishes those in flight, then closes.
// It never leaves the Raft group or the gossip pools: a restart is not a
// leave.
func (n *Node) Drain(ctx context.Context) error {
	n.closing.Store(true)
	if n.raft.IsLeader() {
		if err := n.raft.Raft.LeadershipTransfer().Error(); err != nil {
			n.log.Warn("drain: leadership transfer failed", "err", err)
		} else {
			n.log.Info("drain: leadership transferred")
		}
	}
	sctx, cancel := context.WithTimeout(ctx, drainTimeout)
	defer cancel()
	if err := n.api.Shutdown(sctx); err != nil {
		n.log.Warn("drain: http shutdown", "err", err)
	}
	return n.Close()
}

// Close stops everything at once, without a leadership transfer.
func (n *Node) Close() error {
	n.closeMu.Do(func() {
		n.closing.Store(true)
		n.closeErr = n.closeParts()
	})
	return n.closeErr
}

// closeParts closes what was opened, in reverse order of StartNode.
func (n *Node) closeParts() error {
	if n.cancel != nil {
		n.cancel()
	}
	var errs []error
	errs = append(errs, n.closeAdmin())
	if n.api != nil {
		errs = append(errs, n.api.Close())
	} else if n.ln != nil { // listening, never served
		errs = append(errs, n.ln.Close())
		if n.lnWAN != nil {
			errs = append(errs, n.lnWAN.Close())
		}
	}
	if n.members != nil {
		errs = append(errs, n.members.Close())
	}
	n.bg.Wait()
	if n.dp != nil {
		n.dp.Close()
	}
	if n.pipe != nil {
		errs = append(errs, n.pipe.Close())
	}
	if n.prop != nil {
		errs = append(errs, n.prop.Close())
	}
	if n.raft != nil {
		errs = append(errs, n.raft.Close())
	}
	if n.wal != nil {
		errs = append(errs, n.wal.Close())
	}
	if n.store != nil {
		errs = append(errs, n.store.Close())
	}
	if err := n.ownTracer.Close(); err != nil { // a collector that is down costs a log line, not the close
		n.log.Warn("tracing: spans not flushed", "err", err)
	}
	var out []error
	for _, e := range errs {
		if e != nil && !errors.Is(e, http.ErrServerClosed) && !errors.Is(e, group.ErrClosed) && !errors.Is(e, members.ErrClosed) {
			out = append(out, e)
		}
	}
	return errors.Join(out...)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// slogWriter turns hashicorp/raft's JSON log lines into slog records.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.log.Warn(string(trimNewline(p)))
	return len(p), nil
}

func trimNewline(p []byte) []byte {
	for len(p) > 0 && (p[len(p)-1] == '\n' || p[len(p)-1] == '\r') {
		p = p[:len(p)-1]
	}
	return p
}

// listenHTTP listens on http_addr, through the fault layer, so a
// partition cuts node-to-node calls in both directions (clients on other
// addresses are not affected).
func (n *Node) listenHTTP() error {
	ln, err := net.Listen("tcp", n.cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("http listen: %w", err)
	}
	n.ln = n.faults.WrapListener(ln)
	return n.listenHTTPWAN()
}

// startAPI serves the HTTP API on the listener.
func (n *Node) startAPI() error {
	var err error
	n.api, err = httpapi.New(httpapi.Config{
		NodeID: n.cfg.NodeID, Role: n.cfg.Role, Region: n.cfg.Region, Group: n.role.group, Tier: n.role.tier,
		MaxStaleness: n.cfg.MaxStaleness, SessionWait: n.cfg.SessionWait, WorkerAckWindow: n.cfg.WorkerAckWindow,
		EnableFaultInjection: n.cfg.EnableFaultInjection, ClusterToken: n.cfg.ClusterToken,
		Auth: n.auth, Ledger: n.ledger, Store: n.store, Applied: n.applied, Writer: n.pipe, Consensus: n.raft,
		Members: n.members, Peers: internalRoutes{n.peers, n}, Workers: n.life, DataPlane: n.dataPlaneAPI(), Live: n.liveAPI(),
		LedgerCheck: n.replica.NotReady, AntiEntropy: n.antiEntropyAPI(), SigningKey: n.signingKey, WAL: n.wal, Stamper: n.stamper, JobIDs: n.jobIDs, Decisive: n.decisive,
		Faults: n.faults, Registry: n.reg, Logger: n.log, Closing: n.closing.Load,
		TLS: n.apiTLS(), Security: n.securityStatus, Keyring: n.keyringAPI(), Tracer: n.opts.Tracer,
		RateLimit: httpapi.RateLimit{PerSecond: n.cfg.APIRateLimit, Burst: cmp.Or(n.cfg.APIRateBurst, n.cfg.APIRateLimit)},
	})
	if err != nil {
		return err
	}
	n.api.Serve(n.ln)
	if n.lnWAN != nil {
		n.api.Serve(n.lnWAN)
	}
	return n.startAdmin()
}
