package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-ledger/strata/cluster/devcluster"
	"github.com/strata-ledger/strata/transport/api"
	"github.com/strata-ledger/strata/transport/faultnet"
)

// Control performs a verb (devcluster.VerbKill, ...) on a process of the
// dev launcher: devcluster.ControlClient through ControlOf.
type Control interface {
	Do(ctx context.Context, id, verb string) error
}

// ControlOf adapts a devcluster control client.
func ControlOf(cc *devcluster.ControlClient) Control { return controlClient{cc} }

type controlClient struct{ cc *devcluster.ControlClient }

func (c controlClient) Do(ctx context.Context, id, verb string) error {
	_, err := c.cc.Do(ctx, id, verb)
	return err
}

// Bounds and defaults of a run.
const (
	DefaultClients     = 4
	MaxClients         = 64
	DefaultRate        = 20 // operations per second, all clients together
	MaxRate            = 500
	DefaultMaxJobs     = 2_000
	MaxJobs            = 100_000
	DefaultJobTimeout  = 2 * time.Minute
	DefaultSettle      = 3 * time.Minute
	MaxSettle          = 30 * time.Minute
	DefaultCallTimeout = 5 * time.Second
	// readyWait bounds the wait for a restarted node to be ready.
	readyWait = 90 * time.Second
	// healCallTimeout bounds one healing call (a control verb drains for
	// up to devcluster.DefaultStopTimeout, but heal verbs do not stop).
	healCallTimeout = 30 * time.Second
	// Tenant is the tenant of the chaos workload's jobs.
	Tenant = "chaos"
)

// Config is what Run needs.
type Config struct {
	Seed     uint64
	Duration time.Duration // the fault and workload phase
	Kinds    []Kind
	Cluster  api.ClusterFile // DATA/cluster.json of the dev cluster
	Control  Control
	// Clients run the workload; Rate bounds its operations per second,
	// MaxJobs the jobs it submits.
	Clients int
	Rate    float64
	MaxJobs int
	// JobTimeout is each job's timeout: a job the cluster cannot finish
	// ends TIMED_OUT by then.
	JobTimeout time.Duration
	// Settle bounds the end phase: healing, resolving ambiguous submits,
	// waiting for every acknowledged job to end.
	Settle      time.Duration
	CallTimeout time.Duration  // one API call
	Schedule    ScheduleConfig // holds and gaps; Seed, Duration, Kinds, Nodes are set by Run
	Check       CheckConfig
	// Log receives a line per fault and a progress line now and then.
	Log io.Writer
}

func (c *Config) withDefaults() {
	if c.Clients == 0 {
		c.Clients = DefaultClients
	}
	if c.Rate == 0 {
		c.Rate = DefaultRate
	}
	if c.MaxJobs == 0 {
		c.MaxJobs = DefaultMaxJobs
	}
	if c.JobTimeout == 0 {
		c.JobTimeout = DefaultJobTimeout
	}
	if c.Settle == 0 {
		c.Settle = DefaultSettle
	}
	if c.CallTimeout == 0 {
		c.CallTimeout = DefaultCallTimeout
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// Validate reports the first field out of range.
func (c *Config) Validate() error {
	switch {
	case c.Clients < 1 || c.Clients > MaxClients:
		return fmt.Errorf("%w: %d clients, want 1..%d", ErrBadConfig, c.Clients, MaxClients)
	case c.Rate <= 0 || c.Rate > MaxRate:
		return fmt.Errorf("%w: rate %v, want (0, %d] per second", ErrBadConfig, c.Rate, MaxRate)
	case c.MaxJobs < 1 || c.MaxJobs > MaxJobs:
		return fmt.Errorf("%w: max jobs %d, want 1..%d", ErrBadConfig, c.MaxJobs, MaxJobs)
	case c.Settle <= 0 || c.Settle > MaxSettle:
		return fmt.Errorf("%w: settle %v, want (0, %v]", ErrBadConfig, c.Settle, MaxSettle)
	case c.JobTimeout < time.Second:
		return fmt.Errorf("%w: job timeout %v, want at least 1s", ErrBadConfig, c.JobTimeout)
	case c.CallTimeout <= 0:
		return fmt.Errorf("%w: call timeout %v", ErrBadConfig, c.CallTimeout)
	case c.Control == nil:
		return fmt.Errorf("%w: no control channel", ErrBadConfig)
	case len(gatesOf(c.Cluster)) == 0:
		return fmt.Errorf("%w: the cluster file lists no gate", ErrBadConfig)
	}
	return nil
}

// FaultRecord is what became of one scheduled fault.
type FaultRecord struct {
	Fault
	Injected time.Duration `json:"injected"` // since the start; 0: not injected
	Healed   time.Duration `json:"healed"`
	Err      string        `json:"err,omitempty"`
}

// Result is a run's outcome: the report's content.
type Result struct {
	Seed     uint64        `json:"seed"`
	Duration time.Duration `json:"duration"`
	Kinds    []Kind        `json:"kinds"`
	Faults   []FaultRecord `json:"faults"`
	// Scheduled counts the schedule's faults; those a slow heal pushed
	// past the phase are not in Faults.
	Scheduled int           `json:"scheduled"`
	Verdict   Verdict       `json:"verdict"`
	Elapsed   time.Duration `json:"elapsed"`
	// HealErr: the cluster could not be fully healed at the end (a node
	// that did not come back); the end checks ran anyway.
	HealErr string `json:"heal_error,omitempty"`
	// SkewRejections: remote timestamps the nodes refused as too far
	// ahead during the run (strata_hlc_clock_skew_rejections_total; a
	// lower bound, as a restarted node counts from 0).
	SkewRejections int `json:"hlc_skew_rejections"`
	// History is every operation, for the JSON report.
	History []Op `json:"history"`
}

// Anomalous reports whether the run found an anomaly.
func (r *Result) Anomalous() bool { return len(r.Verdict.Anomalies) > 0 }

// runner holds a run's clients and state.
type runner struct {
	cfg     Config
	hist    *History
	start   time.Time
	jobs    *api.Client            // every gate, failing over
	nodes   map[string]*api.Client // one per node, pinned (faults, readyz)
	base    map[string]faultnet.Rules
	ids     []string // node ids, plan order
	peersOf map[string][]string
	regions []string
}

// Run runs the workload and the faults for cfg.Duration, heals, waits for
// the jobs, and checks the history. An error means the run could not be
// carried out (bad config, unreachable cluster); anomalies are in the
// Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r, err := newRunner(cfg)
	if err != nil {
		return nil, err
	}
	sc := cfg.Schedule
	sc.Seed, sc.Duration, sc.Kinds, sc.Nodes = cfg.Seed, cfg.Duration, cfg.Kinds, r.ids
	schedule, err := Schedule(sc)
	if err != nil {
		return nil, err
	}
	if err := r.prepare(ctx); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Log, "chaos: seed %d, %d faults over %v (%v), %d clients at %v ops/s\n",
		cfg.Seed, len(schedule), cfg.Duration, CountByKind(schedule), cfg.Clients, cfg.Rate)
	baseline := r.skewBaseline(ctx)
	r.start = time.Now()
	r.hist = NewHistory(r.start)
	res := &Result{Seed: cfg.Seed, Duration: cfg.Duration, Kinds: cfg.Kinds}

	phase, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	w := newWorkload(r)
	var wg sync.WaitGroup
	wg.Go(func() { w.run(phase) })
	res.Faults, res.Scheduled = r.nemesis(phase, schedule), len(schedule)
	wg.Wait()

	settle, stopSettle := context.WithTimeout(context.WithoutCancel(ctx), cfg.Settle)
	defer stopSettle()
	if err := r.healAll(settle); err != nil {
		res.HealErr = err.Error()
		fmt.Fprintf(cfg.Log, "chaos: heal: %v\n", err)
	}
	w.resolve(settle)
	w.settle(settle)
	res.SkewRejections = r.skewRejections(settle, baseline)
	ops, dropped := r.hist.Ops()
	res.Verdict, res.History = Check(ops, dropped, cfg.Check), ops
	res.Elapsed = time.Since(r.start)
	return res, nil
}

func gatesOf(cf api.ClusterFile) []string {
	var out []string
	for _, n := range cf.Nodes {
		if n.Role == "gate" {
			out = append(out, n.APIAddr)
		}
	}
	return out
}

func newRunner(cfg Config) (*runner, error) {
	if cfg.Cluster.TLS != nil {
		return nil, fmt.Errorf("%w: a TLS dev cluster is not supported", ErrBadConfig)
	}
	r := &runner{cfg: cfg, nodes: map[string]*api.Client{}, base: map[string]faultnet.Rules{}, peersOf: map[string][]string{}}
	jobs, err := api.New(api.ClientConfig{Addrs: gatesOf(cfg.Cluster), Token: cfg.Cluster.Token, Timeout: cfg.CallTimeout})
	if err != nil {
		return nil, err
	}
	r.jobs = jobs
	for _, n := range cfg.Cluster.Nodes {
		cl, err := api.New(api.ClientConfig{Addrs: []string{n.APIAddr}, Token: cfg.Cluster.Token, Timeout: cfg.CallTimeout})
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", n.NodeID, err)
		}
		r.nodes[n.NodeID] = cl
		r.ids = append(r.ids, n.NodeID)
		if !slices.Contains(r.regions, n.Region) {
			r.regions = append(r.regions, n.Region)
		}
		for _, p := range cfg.Cluster.Nodes {
			if p.NodeID != n.NodeID {
				r.peersOf[n.NodeID] = append(r.peersOf[n.NodeID], faultnet.HostKey(p.RaftAddr))
			}
		}
	}
	return r, nil
}

// prepare checks every node is ready and, for partitions and skews, that
// it serves the fault endpoint; it keeps each node's rules (the WAN
// latency) to restore them when healing.
func (r *runner) prepare(ctx context.Context) error {
	needFaults := slices.Contains(r.cfg.Kinds, Partition) || slices.Contains(r.cfg.Kinds, Skew)
	for _, id := range r.ids {
		rctx, cancelReady := context.WithTimeout(ctx, readyWait)
		err := r.waitReady(rctx, id) // a dev cluster just started may still elect
		cancelReady()
		cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
		if err == nil && needFaults {
			var rules faultnet.Rules
			_, err = r.nodes[id].Faults(cctx, &rules)
			var ae *api.Error
			if errors.As(err, &ae) && ae.Status == 404 {
				err = fmt.Errorf("no fault endpoint: start the cluster with `strata dev --enable-fault-injection` (%w)", err)
			}
			r.base[id] = faultnet.Rules{WANLatency: rules.WANLatency}
		}
		cancel()
		if err != nil {
			return fmt.Errorf("node %s: %w", id, err)
		}
	}
	return nil
}

// nemesis injects and heals the schedule's faults until ctx ends; a fault
// in progress then is healed before it returns.
func (r *runner) nemesis(ctx context.Context, schedule []Fault) []FaultRecord {
	out := make([]FaultRecord, 0, len(schedule))
	// A heal that runs long (a restarted node slow to be ready) shifts
	// the rest of the schedule, so every gap and hold is kept whole; the
	// faults the shift pushes past the phase are not injected.
	var shift time.Duration
	for _, f := range schedule {
		if !sleepUntil(ctx, r.start.Add(f.At+shift)) {
			break
		}
		rec := FaultRecord{Fault: f, Injected: r.hist.Since()}
		err := r.inject(ctx, f)
		if err == nil {
			sleepUntil(ctx, r.start.Add(rec.Injected+f.Hold))
		}
		hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readyWait)
		err = errors.Join(err, r.heal(hctx, f))
		cancel()
		rec.Healed = r.hist.Since()
		shift = max(shift, rec.Healed-(f.At+f.Hold))
		if err != nil {
			rec.Err = err.Error()
		}
		fmt.Fprintf(r.cfg.Log, "chaos: %v  injected at %v, healed at %v%s\n", f, rec.Injected.Round(time.Millisecond),
			rec.Healed.Round(time.Millisecond), errSuffix(rec.Err))
		out = append(out, rec)
	}
	return out
}

func errSuffix(s string) string {
	if s == "" {
		return ""
	}
	return "; error: " + s
}

// sleepUntil waits until t or ctx's end and reports whether t came.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

func (r *runner) inject(ctx context.Context, f Fault) error {
	cctx, cancel := context.WithTimeout(ctx, healCallTimeout)
	defer cancel()
	switch f.Kind {
	case Kill:
		return r.cfg.Control.Do(cctx, f.Node, devcluster.VerbKill)
	case Pause:
		return r.cfg.Control.Do(cctx, f.Node, devcluster.VerbPause)
	case Partition:
		rules := r.base[f.Node]
		for _, p := range r.peersOf[f.Node] {
			rules.Peers = append(rules.Peers, faultnet.PeerRule{Peer: p, Partitioned: true})
		}
		_, err := r.nodes[f.Node].SetFaults(cctx, rules, nil)
		return err
	default: // Skew
		rules := r.base[f.Node]
		rules.ClockOffset = faultnet.Duration(f.Offset)
		_, err := r.nodes[f.Node].SetFaults(cctx, rules, nil)
		return err
	}
}

// heal undoes f; a killed node is restarted and waited for.
func (r *runner) heal(ctx context.Context, f Fault) error {
	switch f.Kind {
	case Kill:
		if err := r.cfg.Control.Do(ctx, f.Node, devcluster.VerbStart); err != nil && !isRunningErr(err) {
			return err
		}
		return r.waitReady(ctx, f.Node)
	case Pause:
		return r.cfg.Control.Do(ctx, f.Node, devcluster.VerbResume)
	default:
		_, err := r.nodes[f.Node].SetFaults(ctx, r.base[f.Node], nil)
		return err
	}
}

// isRunningErr: a start answered 409 because the node runs (the control
// channel's message names devcluster.ErrRunning).
func isRunningErr(err error) bool {
	return err != nil && strings.Contains(err.Error(), devcluster.ErrRunning.Error())
}

// waitReady polls the node's /readyz until it answers 200 or ctx ends.
func (r *runner) waitReady(ctx context.Context, id string) error {
	var last error
	for {
		cctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
		_, _, err := r.nodes[id].Readyz(cctx)
		cancel()
		if err == nil {
			return nil
		}
		last = err
		if !sleepUntil(ctx, time.Now().Add(200*time.Millisecond)) {
			return fmt.Errorf("node %s not ready: %w", id, last)
		}
	}
}

// healAll makes sure every node runs, unpaused, with its original rules,
// and is ready: whatever a fault cut short is undone.
func (r *runner) healAll(ctx context.Context) error {
	var errs []error
	for _, id := range r.ids {
		if err := r.cfg.Control.Do(ctx, id, devcluster.VerbResume); err != nil {
			errs = append(errs, err)
		}
		if err := r.cfg.Control.Do(ctx, id, devcluster.VerbStart); err != nil && !isRunningErr(err) {
			errs = append(errs, err)
		}
		if base, ok := r.base[id]; ok {
			if _, err := r.nodes[id].SetFaults(ctx, base, nil); err != nil {
				errs = append(errs, fmt.Errorf("node %s: reset faults: %w", id, err))
			}
		}
	}
	for _, id := range r.ids {
		if err := r.waitReady(ctx, id); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
