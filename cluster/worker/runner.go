package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/transport/api"
)

// Defaults and bounds of a Runner.
const (
	// DefaultProgressInterval is how often a running workflow reports its
	// counters (DESIGN §10: managers commit aggregates every 500 ms).
	DefaultProgressInterval = 500 * time.Millisecond
	// MaxCapacity mirrors the managers' limit on a worker's capacity.
	MaxCapacity = 1_000
	// fenceFraction of the ack window without a successful heartbeat
	// makes the worker stop everything: the manager expires it after the
	// whole window, counted from a receive time no earlier than our send
	// time, so the worker always stops first.
	fenceFraction = 0.8
	// defaultAckWindow is assumed when a manager names none.
	defaultAckWindow = 5 * time.Second
	// minHeartbeatInterval keeps a zero or tiny interval from spinning.
	minHeartbeatInterval = 10 * time.Millisecond
	// deregisterTimeout bounds the goodbye at the end of Run.
	deregisterTimeout = 5 * time.Second
)

// Config is what a Runner needs.
type Config struct {
	// Client calls the managers of Region (several addresses fail over).
	Client *api.Client
	Region string
	// Capacity is how many workflows the worker runs at once, 1..MaxCapacity.
	Capacity uint32
	// WorkerID names the worker; empty lets the manager choose one, which
	// the worker then keeps for every later registration.
	WorkerID string
	// Logger receives the worker's log; nil discards it.
	Logger *slog.Logger
	// Now is the clock of every elapsed-time and fencing decision;
	// default time.Now.
	Now func() time.Time
	// ProgressInterval paces progress reports; default
	// DefaultProgressInterval.
	ProgressInterval time.Duration
	// LeaseWait is how long a lease long-poll waits for a change;
	// default api.DefaultLeaseWait, at most api.MaxLeaseWait.
	LeaseWait time.Duration
	// Progress is how progress is sent: ProgressUDP (default; HTTP when
	// the manager offers no data plane), ProgressTCP or ProgressHTTP.
	Progress string
	// StallWindow is how long the data plane may deliver nothing (the
	// heartbeats' recorded counters stay behind and still) before UDP
	// gives way to TCP, and TCP to HTTP; default defaultStallWindow.
	StallWindow time.Duration
	// Trace, when set, starts the span of one lease's execution (a child
	// of lease.Traceparent) and returns the context the run's calls use —
	// carrying the span's traceparent (api.WithTraceparent) — and the
	// function that ends the span with the run's outcome; nil: no spans.
	// The worker stays a plain API client: the tracer lives with the
	// caller (cmd/strata wires cluster/tracing).
	Trace func(ctx context.Context, lease api.Lease) (context.Context, func(outcome string))
	// Fault, if set, is fault injection for tests and demonstrations: the
	// failure message a lease's workflow ends with instead of its load's
	// verdict ("" lets the load decide). FailFirstAttempts builds one.
	Fault func(api.Lease) string
}

// FailFirstAttempts is a Config.Fault that fails the first n attempts of
// every workflow (a retryable error) and lets the load decide the rest:
// a deterministic stand-in for a flaky job type.
func FailFirstAttempts(n uint32) func(api.Lease) string {
	return func(l api.Lease) string {
		if max(l.Attempt, 1) <= n {
			return fmt.Sprintf("injected failure of attempt %d (fail the first %d)", max(l.Attempt, 1), n)
		}
		return ""
	}
}

// Runner is one reference worker. Build it with New and call Run once.
type Runner struct {
	cfg Config
	log *slog.Logger
	now func() time.Time
	wg  sync.WaitGroup // workflow goroutines

	mu       sync.Mutex
	runCtx   context.Context // Run's context: every workflow's parent
	sess     *session        // nil between registrations
	id       string          // the worker id, once registered
	runs     map[runKey]*run // started and not yet exited
	ended    map[runKey]uint64
	list     *api.LeaseList // the last lease list of this session
	lastOK   time.Time      // send time of the last successful heartbeat
	ack      time.Duration  // the manager's ack window
	fenced   bool           // stopped everything for want of heartbeats
	closing  bool           // Run is ending: start nothing
	pressure string         // last backpressure level heard
	beats    uint64         // heartbeats answered
}

// runKey names one lease: a workflow under one lease fence.
type runKey struct {
	workflow string
	fence    uint64
}

// session is one registration: it ends when Run's context does or when
// the manager no longer knows the worker.
type session struct {
	ctx      context.Context
	cancel   context.CancelFunc
	id       string
	interval time.Duration  // heartbeat interval
	sender   *sessionSender // data-plane progress; nil: over HTTP
}

// New checks cfg and builds a Runner.
func New(cfg Config) (*Runner, error) {
	var errs []error
	if cfg.Client == nil {
		errs = append(errs, errors.New("an API client is required"))
	}
	if !fsm.IsRegion(cfg.Region) { // the managers' rules, checked before any call
		errs = append(errs, fmt.Errorf("region %q must be a short lowercase code such as use1", cfg.Region))
	}
	if cfg.Capacity < 1 || cfg.Capacity > MaxCapacity {
		errs = append(errs, fmt.Errorf("capacity %d: must be 1..%d", cfg.Capacity, MaxCapacity))
	}
	if cfg.WorkerID != "" && (!fsm.IsName(cfg.WorkerID) || cfg.WorkerID == "." || cfg.WorkerID == "..") {
		errs = append(errs, fmt.Errorf("worker id %q: want 1-64 of [A-Za-z0-9._-]", cfg.WorkerID))
	}
	if cfg.StallWindow < 0 {
		errs = append(errs, fmt.Errorf("stall window %s: want positive", cfg.StallWindow))
	}
	if cfg.ProgressInterval < 0 || cfg.LeaseWait < 0 || cfg.LeaseWait > api.MaxLeaseWait {
		errs = append(errs, fmt.Errorf("progress interval %s, lease wait %s: want positive, lease wait at most %s",
			cfg.ProgressInterval, cfg.LeaseWait, api.MaxLeaseWait))
	}
	if err := checkProgress(cfg.Progress); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ProgressInterval == 0 {
		cfg.ProgressInterval = DefaultProgressInterval
	}
	if cfg.LeaseWait == 0 {
		cfg.LeaseWait = api.DefaultLeaseWait
	}
	if cfg.StallWindow == 0 {
		cfg.StallWindow = defaultStallWindow
	}
	return &Runner{
		cfg:   cfg,
		log:   cfg.Logger.With("region", cfg.Region),
		now:   cfg.Now,
		id:    cfg.WorkerID,
		runs:  map[runKey]*run{},
		ended: map[runKey]uint64{},
	}, nil
}

// WorkerID is the worker's id: the configured one, or the one the manager
// chose once registered ("" before).
func (r *Runner) WorkerID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.id
}

// Heartbeats counts the heartbeats the managers answered, each counted
// once its stop list was applied: "stopped within two heartbeats" is
// checked against it.
func (r *Runner) Heartbeats() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.beats
}

// Running lists the workflows running now (and those stopping), by
// workflow id: what the next heartbeat reports.
func (r *Runner) Running() []api.RunningWorkflow {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]api.RunningWorkflow, 0, len(r.runs))
	for k := range r.runs {
		out = append(out, api.RunningWorkflow{Workflow: k.workflow, LeaseFence: k.fence})
	}
	slices.SortFunc(out, func(a, b api.RunningWorkflow) int {
		if c := strings.Compare(a.Workflow, b.Workflow); c != 0 {
			return c
		}
		return cmp.Compare(a.LeaseFence, b.LeaseFence)
	})
	return out
}

// Run registers and works until ctx ends, registering again whenever the
// region forgets the worker. When ctx ends it stops every workflow,
// deregisters (bounded by deregisterTimeout, so its leases go back at
// once) and returns nil. It returns an error only when the managers refuse
// the registration itself (a bad token, region or capacity).
func (r *Runner) Run(ctx context.Context) error {
	r.mu.Lock()
	r.runCtx = ctx
	r.mu.Unlock()
	var runErr error
	registered := false
	for ctx.Err() == nil {
		s, err := r.register(ctx)
		if err != nil {
			if ctx.Err() == nil {
				runErr = err
			}
			break
		}
		registered = true
		var wg sync.WaitGroup
		wg.Go(func() { r.heartbeatLoop(s) })
		wg.Go(func() { r.leaseLoop(s) })
		wg.Go(func() { r.flushLoop(s) })
		wg.Wait()
		r.endSession()
		if ctx.Err() == nil {
			r.log.Warn("the region no longer knows this worker: stopped every workflow, registering again", "worker", s.id)
		}
	}
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	r.waitRuns(r.stopAll("worker stopping"))
	r.wg.Wait()
	if registered {
		r.deregister()
	}
	return runErr
}

// register registers the worker, retrying transport failures and
// unavailable managers with backoff until ctx ends, and opens a session.
func (r *Runner) register(ctx context.Context) (*session, error) {
	var b backoff
	for {
		req := &api.RegisterWorkerRequest{WorkerID: r.WorkerID(), Region: r.cfg.Region, Capacity: r.cfg.Capacity}
		sent := r.now()
		resp, _, err := r.cfg.Client.RegisterWorker(ctx, req)
		if err == nil {
			return r.beginSession(ctx, resp, sent), nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if classify(err) == errPermanent {
			return nil, fmt.Errorf("register worker %q with region %s: %w", req.WorkerID, r.cfg.Region, err)
		}
		r.log.Warn("register: retrying", "worker", req.WorkerID, "err", err)
		if !b.wait(ctx) {
			return nil, ctx.Err()
		}
	}
}

// beginSession records a registration: the worker's id and timings, and
// the registration as the last contact the fence counts from.
func (r *Runner) beginSession(ctx context.Context, resp *api.RegisterWorkerResponse, sent time.Time) *session {
	ack, interval := timings(resp)
	sender := r.openSender(resp)
	sctx, cancel := context.WithCancel(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if resp.WorkerID != "" {
		r.id = resp.WorkerID
	}
	s := &session{ctx: sctx, cancel: cancel, id: r.id, interval: interval, sender: sender}
	r.sess, r.list, r.ack, r.lastOK, r.fenced = s, nil, ack, sent, false
	r.log.Info("registered", "worker", r.id, "capacity", r.cfg.Capacity, "ack_window", ack.String(), "heartbeat_interval", interval.String())
	return s
}

// timings reads the ack window and heartbeat interval of a registration.
// An interval missing or too long to keep the worker clear of its own
// fence is replaced by a third of the window (the managers' default).
func timings(resp *api.RegisterWorkerResponse) (ack, interval time.Duration) {
	ack = time.Duration(resp.AckWindow)
	if ack <= 0 {
		ack = defaultAckWindow
	}
	interval = time.Duration(resp.HeartbeatInterval)
	if interval <= 0 || float64(interval) > fenceFraction*float64(ack)/2 {
		interval = ack / 3
	}
	return ack, max(interval, minHeartbeatInterval)
}

// endSession closes the current session: its lease list is dropped (a new
// registration polls afresh) and every workflow is stopped and waited for.
func (r *Runner) endSession() {
	r.mu.Lock()
	if r.sess != nil {
		r.sess.cancel()
	}
	r.sess, r.list = nil, nil
	r.mu.Unlock()
	r.waitRuns(r.stopAll("registration lost"))
}

// lose ends session s: the region no longer knows the worker.
func (r *Runner) lose(s *session) { s.cancel() }

// deregister tells the managers the worker leaves, so its leases go back
// at once rather than after the ack window.
func (r *Runner) deregister() {
	ctx, cancel := context.WithTimeout(context.Background(), deregisterTimeout)
	defer cancel()
	id := r.WorkerID()
	if _, err := r.cfg.Client.DeregisterWorker(ctx, id); err != nil {
		r.log.Warn("deregister failed; the managers expire the worker after the ack window", "worker", id, "err", err)
		return
	}
	r.log.Info("deregistered", "worker", id)
}
