package faultnet

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Faults holds one node's fault rules and the connections they act on. Build
// it with New; all methods are safe for concurrent use.
type Faults struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics

	// rules is an immutable snapshot read lock-free on every write; changes
	// build a new one under mu.
	rules atomic.Pointer[ruleSet]
	// loseJobs are the jobs whose events a regional forwarder loses on
	// their way to the gates (Rules.ForwarderLoseJobs); nil: none.
	loseJobs atomic.Pointer[map[string]bool]

	mu    sync.Mutex
	conns map[string]map[*Conn]struct{} // live connections per peer key

	rngMu sync.Mutex
	rng   *rand.Rand

	delayedPackets atomic.Int64
}

// ruleSet is one immutable generation of rules.
type ruleSet struct {
	peers      map[string]PeerRule // by peer key; never mutated once published
	wanLatency time.Duration
	delaying   bool // some peer has a delay or jitter, or wanLatency > 0
}

// PeerRule is the fault state of one peer. The zero rule (apart from Peer)
// means a healthy link.
type PeerRule struct {
	Peer        string   `json:"peer"`
	Partitioned bool     `json:"partitioned"`
	Delay       Duration `json:"delay"`
	Jitter      Duration `json:"jitter"`
}

// Rules is the whole fault state of a node, as served and accepted by the
// cluster's /v1/debug/faults endpoint. Peers are sorted by key.
type Rules struct {
	WANLatency Duration   `json:"wan_latency"`
	Peers      []PeerRule `json:"peers"`
	// ForwarderLoseJobs: this node's regional forwarder loses these jobs'
	// events on their way to the gates, and advances its position as if
	// they had arrived (anti-entropy's test: DESIGN §11). At most
	// MaxLoseJobs ids.
	ForwarderLoseJobs []string `json:"forwarder_lose_jobs,omitempty"`
	// ClockOffset shifts the physical clock this node's HLC reads
	// (Config.Clock), within ±MaxClockOffset: the clock-skew fault. A
	// shift beyond the HLC max offset makes peers reject this node's
	// timestamps (forward) or this node reject theirs (backward).
	ClockOffset Duration `json:"clock_offset,omitempty"`
}

// MaxLoseJobs bounds Rules.ForwarderLoseJobs; maxLoseJobBytes bounds one
// id (fsm.MaxJobIDBytes).
const (
	MaxLoseJobs     = 1024
	maxLoseJobBytes = 96
)

// LosesForwarded reports whether the forwarder loses jobID's events.
func (f *Faults) LosesForwarded(jobID string) bool {
	m := f.loseJobs.Load()
	return m != nil && (*m)[jobID]
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("30ms"), like the durations of the HTTP API.
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string, or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var ns int64
		if err := json.Unmarshal(b, &ns); err != nil {
			return fmt.Errorf("duration %s: want a string like \"30ms\"", b)
		}
		*d = Duration(ns)
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: %w", s, err)
	}
	*d = Duration(v)
	return nil
}

// New returns a Faults with no rules but cfg.WANLatency.
func New(cfg Config) (*Faults, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("faultnet: register metrics: %w", err)
	}
	if cfg.Clock == nil {
		cfg.Clock = &Clock{}
	}
	f := &Faults{
		cfg:     cfg,
		log:     cfg.Logger,
		metrics: m,
		conns:   make(map[string]map[*Conn]struct{}),
		rng:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
	}
	f.rules.Store(newRuleSet(nil, cfg.WANLatency))
	return f, nil
}

func newRuleSet(peers map[string]PeerRule, wan time.Duration) *ruleSet {
	rs := &ruleSet{peers: peers, wanLatency: wan, delaying: wan > 0}
	for _, r := range peers {
		if r.Delay > 0 || r.Jitter > 0 {
			rs.delaying = true
		}
	}
	return rs
}

// PeerOf returns the peer key of a network address.
func (f *Faults) PeerOf(addr string) string { return f.cfg.PeerKey(addr) }

// Partition cuts peer off: see the package doc. Live connections with peer
// are closed before Partition returns.
func (f *Faults) Partition(peer string) {
	key := f.PeerOf(peer)
	f.mu.Lock()
	f.update(key, func(r *PeerRule) { r.Partitioned = true })
	cut := f.takeConnsLocked(key)
	f.mu.Unlock()
	for _, c := range cut {
		c.cut()
	}
	f.metrics.cutConns.Add(float64(len(cut)))
	f.log.Info("fault: partition", "peer", key, "connections_cut", len(cut))
}

// Heal clears every rule for peer: partition, delay and jitter.
func (f *Faults) Heal(peer string) {
	key := f.PeerOf(peer)
	f.mu.Lock()
	f.update(key, func(r *PeerRule) { *r = PeerRule{} })
	f.mu.Unlock()
	f.log.Info("fault: heal", "peer", key)
}

// HealAll clears every peer rule. The WAN latency stays: it models geography,
// not a fault.
func (f *Faults) HealAll() {
	f.mu.Lock()
	f.rules.Store(newRuleSet(nil, f.rules.Load().wanLatency))
	f.mu.Unlock()
	f.log.Info("fault: heal all")
}

// Delay holds every write to peer for d; d == 0 removes the delay.
func (f *Faults) Delay(peer string, d time.Duration) error {
	return f.DelayWithJitter(peer, d, 0)
}

// DelayWithJitter holds every write to peer for d plus a uniform random
// jitter in [0, jitter), drawn from the seeded source.
func (f *Faults) DelayWithJitter(peer string, d, jitter time.Duration) error {
	key := f.PeerOf(peer)
	if err := validRule(PeerRule{Peer: key, Delay: Duration(d), Jitter: Duration(jitter)}); err != nil {
		return err
	}
	f.mu.Lock()
	f.update(key, func(r *PeerRule) { r.Delay, r.Jitter = Duration(d), Duration(jitter) })
	f.mu.Unlock()
	f.log.Info("fault: delay", "peer", key, "delay", d, "jitter", jitter)
	return nil
}

// SetWANLatency sets the latency added to writes towards remote peers.
func (f *Faults) SetWANLatency(d time.Duration) error {
	if err := checkDuration("wan latency", d); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRule, err)
	}
	f.mu.Lock()
	f.rules.Store(newRuleSet(f.rules.Load().peers, d))
	f.mu.Unlock()
	f.log.Info("fault: wan latency", "latency", d)
	return nil
}

// Rules returns a copy of the current rules, peers sorted by key.
func (f *Faults) Rules() Rules {
	rs := f.rules.Load()
	out := Rules{WANLatency: Duration(rs.wanLatency), Peers: make([]PeerRule, 0, len(rs.peers))}
	for _, r := range rs.peers {
		out.Peers = append(out.Peers, r)
	}
	slices.SortFunc(out.Peers, func(a, b PeerRule) int { return strings.Compare(a.Peer, b.Peer) })
	if m := f.loseJobs.Load(); m != nil {
		for id := range *m {
			out.ForwarderLoseJobs = append(out.ForwarderLoseJobs, id)
		}
		slices.Sort(out.ForwarderLoseJobs)
	}
	out.ClockOffset = Duration(f.cfg.Clock.Offset())
	return out
}

// Clock is the physical clock the clock-skew fault shifts.
func (f *Faults) Clock() *Clock { return f.cfg.Clock }

// Replace swaps the whole rule set for r, as a PUT of /v1/debug/faults does:
// peers absent from r are healed, newly partitioned peers are cut. r is
// checked first; on error nothing changes.
func (f *Faults) Replace(r Rules) error {
	if err := checkDuration("wan latency", time.Duration(r.WANLatency)); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRule, err)
	}
	if err := checkClockOffset(time.Duration(r.ClockOffset)); err != nil {
		return err
	}
	if len(r.ForwarderLoseJobs) > MaxLoseJobs {
		return fmt.Errorf("%w: %d forwarder_lose_jobs, limit %d", ErrInvalidRule, len(r.ForwarderLoseJobs), MaxLoseJobs)
	}
	var lose map[string]bool
	for _, id := range r.ForwarderLoseJobs {
		if id == "" || len(id) > maxLoseJobBytes {
			return fmt.Errorf("%w: forwarder_lose_jobs: job id of %d bytes, want 1..%d", ErrInvalidRule, len(id), maxLoseJobBytes)
		}
		if lose == nil {
			lose = map[string]bool{}
		}
		lose[id] = true
	}
	peers := make(map[string]PeerRule, len(r.Peers))
	for _, pr := range r.Peers {
		pr.Peer = f.PeerOf(pr.Peer)
		if err := validRule(pr); err != nil {
			return err
		}
		if _, dup := peers[pr.Peer]; dup {
			return fmt.Errorf("%w: peer %q listed twice", ErrInvalidRule, pr.Peer)
		}
		if pr != (PeerRule{Peer: pr.Peer}) {
			peers[pr.Peer] = pr
		}
	}
	f.mu.Lock()
	f.rules.Store(newRuleSet(peers, time.Duration(r.WANLatency)))
	_ = f.cfg.Clock.SetOffset(time.Duration(r.ClockOffset)) // checked above
	if lose == nil {
		f.loseJobs.Store(nil)
	} else {
		f.loseJobs.Store(&lose)
	}
	var cut []*Conn
	for key, pr := range peers {
		if pr.Partitioned {
			cut = append(cut, f.takeConnsLocked(key)...)
		}
	}
	f.mu.Unlock()
	for _, c := range cut {
		c.cut()
	}
	f.metrics.cutConns.Add(float64(len(cut)))
	f.log.Info("fault: replace rules", "peers", len(peers), "wan_latency", time.Duration(r.WANLatency), "connections_cut", len(cut),
		"forwarder_lose_jobs", len(lose), "clock_offset", time.Duration(r.ClockOffset))
	return nil
}

func validRule(r PeerRule) error {
	if r.Peer == "" {
		return fmt.Errorf("%w: rule names no peer", ErrInvalidRule)
	}
	if err := checkDuration("delay", time.Duration(r.Delay)); err != nil {
		return fmt.Errorf("%w: peer %s: %w", ErrInvalidRule, r.Peer, err)
	}
	if err := checkDuration("jitter", time.Duration(r.Jitter)); err != nil {
		return fmt.Errorf("%w: peer %s: %w", ErrInvalidRule, r.Peer, err)
	}
	return nil
}

// update publishes a new rule set in which change has been applied to the
// rule of key. A rule that ends up healthy is removed. Callers hold mu.
func (f *Faults) update(key string, change func(*PeerRule)) {
	old := f.rules.Load()
	peers := make(map[string]PeerRule, len(old.peers)+1)
	for k, r := range old.peers {
		peers[k] = r
	}
	r := peers[key]
	change(&r)
	r.Peer = key
	if r == (PeerRule{Peer: key}) {
		delete(peers, key)
	} else {
		peers[key] = r
	}
	f.rules.Store(newRuleSet(peers, old.wanLatency))
}

// IsPartitioned reports whether a Partition rule cuts off peer (a key).
func (f *Faults) IsPartitioned(peer string) bool {
	return f.rules.Load().peers[peer].Partitioned
}

// nextDelay returns how long a write to peer (a key) made now must wait.
func (f *Faults) nextDelay(peer string) time.Duration {
	rs := f.rules.Load()
	if !rs.delaying {
		return 0
	}
	r := rs.peers[peer]
	d := time.Duration(r.Delay)
	if r.Jitter > 0 {
		f.rngMu.Lock()
		d += time.Duration(f.rng.Int64N(int64(r.Jitter)))
		f.rngMu.Unlock()
	}
	if rs.wanLatency > 0 && f.isRemote(peer) {
		d += rs.wanLatency
	}
	return d
}

func (f *Faults) isRemote(peer string) bool {
	if f.cfg.RegionOf == nil {
		return false
	}
	region := f.cfg.RegionOf(peer)
	return region != "" && region != f.cfg.LocalRegion
}

// register adds c to the live connections of its peer, unless the peer is
// partitioned. The check and the insert share mu with Partition, so a
// connection is either cut by Partition or refused here, never missed.
func (f *Faults) register(c *Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.IsPartitioned(c.peer) {
		return false
	}
	set := f.conns[c.peer]
	if set == nil {
		set = make(map[*Conn]struct{})
		f.conns[c.peer] = set
	}
	set[c] = struct{}{}
	return true
}

func (f *Faults) unregister(c *Conn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	set := f.conns[c.peer]
	delete(set, c)
	if len(set) == 0 {
		delete(f.conns, c.peer)
	}
}

// takeConnsLocked removes and returns the live connections of key. Callers
// hold mu.
func (f *Faults) takeConnsLocked(key string) []*Conn {
	set := f.conns[key]
	delete(f.conns, key)
	out := make([]*Conn, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	return out
}
