package replica

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/antientropy"
	"github.com/strata-ledger/strata/antientropy/ledgertree"
	"github.com/strata-ledger/strata/cluster/auth"
)

// CheckpointsPath is the internal endpoint that answers a node's
// checkpoints; with ?mark=1 the leader proposes a mark first and names it.
const CheckpointsPath = "/internal/v1/replica/checkpoints"

const (
	// DefaultInterval is how often a verified node checks again.
	DefaultInterval = 30 * time.Second
	// retryInterval is how often a node without a verdict tries again
	// (at start, or when the group has no leader).
	retryInterval = 250 * time.Millisecond
	// maxMarkWait bounds how long a peer waits to apply a mark before it
	// answers with the checkpoints it has.
	maxMarkWait = 5 * time.Second
	// maxAnswerBytes bounds a peer's answer: MaxCheckpoints entries.
	maxAnswerBytes = 64 << 10
)

// Peer is another member of the group.
type Peer struct {
	ID      string
	APIAddr string
}

// Proposer is what the checker needs of its node's group.
type Proposer interface {
	ProposeMark(ctx context.Context) (uint64, error)
	CheckLeader() error
}

// Config wires a Checker. Every field but Interval, Logger and Registerer
// is required.
type Config struct {
	NodeID       string
	Tracker      *ledgertree.Tracker
	Proposer     Proposer
	WaitApplied  func(ctx context.Context, index uint64) error
	Leader       func() Peer   // the group's leader as this node knows it ("" ID: none)
	Peers        func() []Peer // the other members of the group, with API addresses
	GroupSize    func() int
	Client       *http.Client
	ClusterToken string
	Interval     time.Duration
	// Rebuild replaces this node's ledger with the leader's (a snapshot
	// taken at or after this node's applied index) and returns the index
	// it is at; StepDown hands leadership to another voter. The checker
	// calls the first on a divergent follower, the second on a divergent
	// leader (which then rebuilds as a follower). Either may be nil: the
	// node then only stops serving.
	Rebuild    func(ctx context.Context) (uint64, error)
	StepDown   func() error
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

// Checker runs the replica check of one node.
type Checker struct {
	cfg Config
	m   metrics

	mu      sync.Mutex
	verdict Verdict
	judged  bool // a verdict (Verified or Divergent) was reached once
}

type metrics struct {
	rounds    prometheus.Counter
	divergent prometheus.Gauge
	diffs     prometheus.Counter
	bytes     prometheus.Counter
	repairs   prometheus.Counter
	duration  prometheus.Observer
}

// New returns a Checker; Run runs it.
func New(cfg Config) (*Checker, error) {
	if cfg.NodeID == "" || cfg.Tracker == nil || cfg.Proposer == nil || cfg.WaitApplied == nil || cfg.Leader == nil ||
		cfg.Peers == nil || cfg.GroupSize == nil || cfg.Client == nil || cfg.ClusterToken == "" {
		return nil, errors.New("replica: NodeID, Tracker, Proposer, WaitApplied, Leader, Peers, GroupSize, Client and ClusterToken are required")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c := &Checker{cfg: cfg, m: metrics{
		rounds: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_antientropy_rounds_total",
			Help: "Anti-entropy rounds by kind.", ConstLabels: prometheus.Labels{"kind": "replica"}}),
		divergent: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_antientropy_divergent_replicas",
			Help: "1 while this node's ledger differs from the one its group agrees on."}),
		repairs: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_antientropy_repairs_total",
			Help: "Anti-entropy repairs by kind.", ConstLabels: prometheus.Labels{"kind": "replica"}}),
		diffs: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_antientropy_differences_total",
			Help: "Records found different by anti-entropy, by kind.", ConstLabels: prometheus.Labels{"kind": "replica"}}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_antientropy_bytes_total",
			Help: "Bytes anti-entropy comparisons exchanged, both directions, by kind.", ConstLabels: prometheus.Labels{"kind": "replica"}}),
	}}
	hist := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_antientropy_round_duration_seconds",
		Help: "Duration of anti-entropy rounds by kind.", ConstLabels: prometheus.Labels{"kind": "replica"},
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)})
	c.m.duration = hist
	if cfg.Registerer != nil {
		for _, col := range []prometheus.Collector{c.m.rounds, c.m.divergent, c.m.diffs, c.m.bytes, c.m.repairs, hist} {
			if err := cfg.Registerer.Register(col); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// Verdict is the latest verdict on this node's ledger.
func (c *Checker) Verdict() Verdict {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.verdict
}

// NotReady is "" once this node's ledger was verified and has not been
// found divergent since, else why the node must not serve its ledger.
func (c *Checker) NotReady() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.verdict.State == Divergent:
		return "ledger diverged from its group: " + c.verdict.Reason
	case !c.judged:
		return "ledger not yet checked against its group: " + c.verdict.Reason
	}
	return ""
}

// Run checks until ctx ends: every retryInterval until a verdict, then
// every Interval.
func (c *Checker) Run(ctx context.Context) {
	c.setVerdict(Verdict{Reason: "first check pending"})
	retry := retryInterval
	for ctx.Err() == nil {
		start := time.Now()
		v, err := c.round(ctx)
		if err == nil {
			c.m.rounds.Inc()
			c.m.duration.Observe(time.Since(start).Seconds())
			c.setVerdict(v)
			if v.State == Divergent {
				c.m.diffs.Inc()
				c.repair(ctx)
			}
		} else if ctx.Err() == nil {
			c.cfg.Logger.Debug("replica check: round failed", "err", err)
		}
		// A node not fit to serve tries again every retryInterval; one
		// verified only as new (no shared checkpoint yet) backs off.
		wait := c.cfg.Interval
		switch v := c.Verdict(); {
		case c.NotReady() != "":
			wait = retryInterval
		case v.State != Divergent && v.Index == 0 && !v.Alone:
			wait, retry = retry, min(2*retry, c.cfg.Interval)
		default:
			retry = retryInterval
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

func (c *Checker) setVerdict(v Verdict) {
	c.mu.Lock()
	prev := c.verdict
	c.verdict = v
	if v.State != Unverified {
		c.judged = true
	}
	c.mu.Unlock()
	if v.State == Divergent {
		c.m.divergent.Set(1)
	} else if v.State == Verified {
		c.m.divergent.Set(0)
	}
	if v.State != prev.State {
		lvl := slog.LevelInfo
		if v.State == Divergent {
			lvl = slog.LevelError
		}
		c.cfg.Logger.Log(context.Background(), lvl, "replica check", "state", v.State.String(), "index", v.Index, "reason", v.Reason)
	}
}

// repair replaces a divergent ledger with the group's: a leader first
// hands leadership on (its ledger is the damaged one), a follower
// rebuilds from the leader's snapshot. It never patches single records.
// The node stays unready until a later round verifies the result.
func (c *Checker) repair(ctx context.Context) {
	if c.cfg.Proposer.CheckLeader() == nil {
		if c.cfg.StepDown != nil {
			if err := c.cfg.StepDown(); err != nil {
				c.cfg.Logger.Warn("replica check: divergent leader could not step down", "err", err)
			}
		}
		return
	}
	if c.cfg.Rebuild == nil {
		return
	}
	index, err := c.cfg.Rebuild(ctx)
	if err != nil {
		c.cfg.Logger.Warn("replica check: rebuild from the leader failed", "err", err)
		return
	}
	c.m.repairs.Inc()
	c.cfg.Logger.Warn("replica check: ledger rebuilt from the leader's snapshot; checking again", "index", index)
	c.mu.Lock()
	c.verdict = Verdict{Index: index, Reason: fmt.Sprintf("rebuilt from the leader's snapshot at index %d, not yet checked again", index)}
	c.judged = false
	c.mu.Unlock()
	c.m.divergent.Set(0)
}

// round has a mark proposed, waits until this node applied it, and judges
// the group's checkpoints.
func (c *Checker) round(ctx context.Context) (Verdict, error) {
	size := c.cfg.GroupSize()
	if size <= 1 {
		return Judge(nil, nil, size), nil
	}
	var index uint64
	var err error
	if c.cfg.Proposer.CheckLeader() == nil {
		index, err = c.cfg.Proposer.ProposeMark(ctx)
	} else {
		leader := c.cfg.Leader()
		if leader.ID == "" || leader.APIAddr == "" {
			return Verdict{}, errors.New("no leader to mark a checkpoint")
		}
		var a answer
		if a, err = c.fetch(ctx, leader.APIAddr, true, 0); err == nil {
			index = a.Mark
		}
	}
	if err != nil {
		return Verdict{}, fmt.Errorf("mark: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, c.cfg.Interval)
	defer cancel()
	if err := c.cfg.WaitApplied(wctx, index); err != nil {
		return Verdict{}, fmt.Errorf("wait for the mark at %d: %w", index, err)
	}
	peers := map[string][]ledgertree.Checkpoint{}
	for _, p := range c.cfg.Peers() {
		a, err := c.fetch(ctx, p.APIAddr, false, index)
		if err != nil {
			c.cfg.Logger.Debug("replica check: peer unreachable", "peer", p.ID, "err", err)
			continue
		}
		peers[p.ID] = a.checkpoints()
	}
	return Judge(c.cfg.Tracker.Checkpoints(), peers, size), nil
}

// answer is the body of CheckpointsPath.
type answer struct {
	Node        string           `json:"node"`
	Mark        uint64           `json:"mark,omitempty"`
	Checkpoints []checkpointWire `json:"checkpoints"`
}

type checkpointWire struct {
	Index   uint64 `json:"index"`
	Root    string `json:"root"`
	Records int    `json:"records"`
}

func (a answer) checkpoints() []ledgertree.Checkpoint {
	out := make([]ledgertree.Checkpoint, 0, len(a.Checkpoints))
	for _, w := range a.Checkpoints {
		var root antientropy.Hash
		if b, err := hex.DecodeString(w.Root); err == nil && len(b) == len(root) {
			copy(root[:], b)
			out = append(out, ledgertree.Checkpoint{Index: w.Index, Root: root, Records: w.Records})
		}
	}
	return out
}

// fetch asks the node at addr for its checkpoints: a mark first (mark),
// or once it applied index (wait > 0, so a peer a little behind still
// answers with the mark just proposed).
func (c *Checker) fetch(ctx context.Context, addr string, mark bool, wait uint64) (answer, error) {
	u := "http://" + addr + CheckpointsPath
	switch {
	case mark:
		u += "?mark=1"
	case wait > 0:
		u += "?wait=" + strconv.FormatUint(wait, 10)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, http.NoBody)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+c.cfg.ClusterToken)
	resp, err := c.cfg.Client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	c.m.bytes.Add(float64(len(body)))
	if err != nil {
		return answer{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return answer{}, fmt.Errorf("%s: %d %s", addr, resp.StatusCode, bytes.TrimSpace(body))
	}
	return decodeAnswer(body)
}

// decodeAnswer decodes a peer's answer, bounded.
func decodeAnswer(body []byte) (answer, error) {
	if len(body) > maxAnswerBytes {
		return answer{}, fmt.Errorf("answer over %d bytes", maxAnswerBytes)
	}
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		return answer{}, fmt.Errorf("answer: %w", err)
	}
	if len(a.Checkpoints) > ledgertree.MaxCheckpoints {
		return answer{}, fmt.Errorf("answer with %d checkpoints, limit %d", len(a.Checkpoints), ledgertree.MaxCheckpoints)
	}
	return a, nil
}

// Handler answers CheckpointsPath: this node's checkpoints, after
// proposing a mark when asked to and this node leads.
func (c *Checker) Handler(w http.ResponseWriter, r *http.Request) {
	if !auth.PeerTokenOK(r, c.cfg.ClusterToken) {
		http.Error(w, `{"error":{"code":"unauthenticated","message":"internal call without the cluster token"}}`, http.StatusUnauthorized)
		return
	}
	out := answer{Node: c.cfg.NodeID}
	if wait, err := strconv.ParseUint(r.URL.Query().Get("wait"), 10, 64); err == nil && wait > 0 {
		// Answer once this node applied the mark, or after a bound: a
		// replica far behind answers what it has.
		ctx, cancel := context.WithTimeout(r.Context(), maxMarkWait)
		_ = c.cfg.WaitApplied(ctx, wait)
		cancel()
	}
	if mark, _ := strconv.ParseBool(r.URL.Query().Get("mark")); mark {
		if err := c.cfg.Proposer.CheckLeader(); err != nil {
			http.Error(w, `{"error":{"code":"unavailable","message":"not the leader"}}`, http.StatusMisdirectedRequest)
			return
		}
		index, err := c.cfg.Proposer.ProposeMark(r.Context())
		if err != nil {
			http.Error(w, fmt.Sprintf(`{"error":{"code":"unavailable","message":%q}}`, err.Error()), http.StatusServiceUnavailable)
			return
		}
		out.Mark = index
	}
	for _, cp := range c.cfg.Tracker.Checkpoints() {
		out.Checkpoints = append(out.Checkpoints, checkpointWire{Index: cp.Index, Root: hex.EncodeToString(cp.Root[:]), Records: cp.Records})
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}
