package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/decisive"
	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/fsm"
	"github.com/strata-ledger/strata/hlc"
	"github.com/strata-ledger/strata/transport/api"
)

// ErrInvalidConfig is wrapped by the errors of Config.Validate.
var ErrInvalidConfig = errors.New("lifecycle: invalid config")

// Store is the group's ledger store. View runs fn in one consistent read
// view of the applied state; it may be called from several goroutines.
type Store interface {
	View(fn func(fsm.ReadTx) error) error
}

// Positions reads the forwarder's replicated positions (ForwardMark
// events): per tenant, the chain seq up to which it forwarded.
type Positions interface {
	ForwardMarks() (map[string]uint64, error)
}

// Submitter proposes planned events to this node's own group at the
// node's tier. Submit returns when the tier acknowledged the batch (or
// failed), with one result per event, in order; the events of one call
// land in one entry or not at all.
type Submitter interface {
	Submit(ctx context.Context, events []fsm.Event) ([]fsm.Result, error)
}

// Deliverer hands an encoded batch to another group (a region, or the
// global group), wherever its members are, and returns the results of its
// events there. It must be safe for concurrent use: deliveries to
// different groups run at once.
type Deliverer interface {
	Deliver(ctx context.Context, group string, batch []byte) ([]fsm.Result, error)
}

// Leadership is this node's view of its group's leadership. IsLeader
// reports whether the node leads and may act as leader (false once it is
// closing); Barrier waits until every entry committed before it is
// applied, or timeout.
type Leadership interface {
	IsLeader() bool
	Barrier(timeout time.Duration) error
}

// Applied tells when the node applied a new index: the channel Changed
// returns is closed at the next apply after the call.
type Applied interface {
	Changed() <-chan struct{}
}

// Stamper gives events the node's origin: an HLC of its clock, its id
// and region (commit.Stamper).
type Stamper interface {
	// Planned stamps planned events after moving the clock past after.
	Planned(events []fsm.Event, after hlc.Timestamp) error
	// Own stamps an event the node originates, with a fresh id.
	Own(e *fsm.Event) error
	// Now reads the clock.
	Now() (hlc.Timestamp, error)
}

// Config is what a Lifecycle needs; everything arrives here.
type Config struct {
	// NodeID and Region are stamped on planned events; Region is also the
	// region a manager reconciles and forwards for.
	NodeID, Region string
	// Global: a gate of the global group (the global reconciler runs);
	// otherwise a manager of Region (the regional reconciler and the
	// forwarder run).
	Global bool
	// Group names this node's group in logs.
	Group string
	// GlobalGroup is the group the forwarder delivers to (group.GlobalName;
	// the wiring passes it, so the name has one definition). Managers only.
	GlobalGroup string

	// LoseForwarded, if set, is fault injection (enable_fault_injection
	// only): the forwarder loses the events it says, as if a batch never
	// reached the gates, and advances its position anyway; anti-entropy
	// must find and repair the loss.
	LoseForwarded func(*fsm.Event) bool

	Store Store
	// CommittedView, if set, reads the store's last commit without
	// committing what is pending (boltstore.ViewCommitted): the
	// reconcilers and the forwarder read through it, except the first
	// read after a pass proposed something (that one is Store.View, so a
	// pass always sees its own proposals). Applied must then broadcast
	// commits, not applies, and the FSM's observer must hand this
	// Lifecycle an entry only once it is committed
	// (group.CommittedObserver), or a pass could take a job id from its
	// dirty set before the state it reads holds the change.
	CommittedView func(fn func(fsm.ReadTx) error) error
	Positions     Positions // managers only
	Submitter     Submitter
	Deliverer     Deliverer
	Leadership    Leadership
	Applied       Applied
	// Stamper stamps planned events (commit.Stamper, the node's one
	// stamper) and gives the global reconciler its HLC wall time.
	Stamper Stamper
	// Decisive keeps the global reconciler's completions and time-outs
	// apart from the API's cancels of the same job (cluster/decisive);
	// nil: no one else writes decisions here.
	Decisive *decisive.Jobs
	// Now is the wall clock: worker liveness, the regional reconciler,
	// the forwarder's backoff, breaker cooldown and lag; default time.Now.
	// (Timers and tickers still run on the runtime's clock: a test that
	// drives a loop rather than its steps uses testing/synctest.)
	Now func() time.Time

	Logger     *slog.Logger          // default: discard
	Registerer prometheus.Registerer // strata_forwarder_* (managers); default: a private registry

	// ReconcileInterval is how often a leader's reconcilers and
	// forwarder look without an apply waking them.
	ReconcileInterval time.Duration
	// WorkerAckWindow is how long a worker may stay silent (managers).
	WorkerAckWindow time.Duration
	// BreakerCooldown is how long the forwarder's breaker stays open
	// (managers).
	BreakerCooldown time.Duration
	// Breakers tunes the per-(tenant, job type) circuit breakers of the
	// workflows' dispatch (managers, issue 18 §2); zero fields: defaults.
	Breakers govern.BreakerConfig
	// RetryDefaults is the retry policy of each job type for jobs whose
	// spec has none (managers, issue 18 §3); nil: none.
	RetryDefaults map[string]govern.RetryPolicy
	// Regions lists the cluster's regions as gossip knows them (gates):
	// the global leader converges each to the cluster-wide maintenance
	// mode (clustermaint.go). Default: Region alone.
	Regions func() []string
}

// Validate fills defaults and checks c.
func (c *Config) Validate() error {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Registerer == nil {
		c.Registerer = prometheus.NewRegistry()
	}
	if c.Regions == nil {
		own := []string{c.Region}
		c.Regions = func() []string { return own }
	}
	var missing string
	switch {
	case c.Store == nil:
		missing = "Store"
	case c.Submitter == nil:
		missing = "Submitter"
	case c.Deliverer == nil:
		missing = "Deliverer"
	case c.Leadership == nil:
		missing = "Leadership"
	case c.Applied == nil:
		missing = "Applied"
	case c.Stamper == nil:
		missing = "Stamper"
	case !c.Global && c.Positions == nil:
		missing = "Positions"
	case !c.Global && c.GlobalGroup == "":
		missing = "GlobalGroup"
	case c.ReconcileInterval <= 0:
		missing = "ReconcileInterval"
	case !c.Global && c.WorkerAckWindow <= 0:
		missing = "WorkerAckWindow"
	case !c.Global && c.BreakerCooldown <= 0:
		missing = "BreakerCooldown"
	}
	if missing != "" {
		return fmt.Errorf("%w: %s is required", ErrInvalidConfig, missing)
	}
	c.Breakers = c.Breakers.WithDefaults()
	if err := c.Breakers.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	for t, p := range c.RetryDefaults {
		if err := p.WithDefaults().Validate(); err != nil {
			return fmt.Errorf("%w: retry default of job type %q: %w", ErrInvalidConfig, t, err)
		}
	}
	return nil
}

// Lifecycle is a node's job-lifecycle runtime (package doc): the dirty
// set its FSM feeds, the workers' liveness, the lease view, and while the
// node leads, the reconcilers and the current term's forwarder. Its
// methods are safe for concurrent use.
type Lifecycle struct {
	cfg   Config
	log   *slog.Logger
	dirty *dirtySet
	live  *liveness
	views *viewBoard
	fwdM  *forwarderMetrics         // managers only
	govM  *govMetrics               // managers only
	jobM  *jobMetrics               // job and lease metrics (jobmetrics.go)
	fwd   atomic.Pointer[forwarder] // managers: this term's forwarder
	// reads is what the reconcilers and the forwarder read (readView).
	reads *readView
}

// New returns a Lifecycle for cfg; nothing runs until Run.
func New(cfg Config) (*Lifecycle, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Lifecycle{cfg: cfg, log: cfg.Logger, dirty: newDirtySet(dirtyLimit), live: newLiveness(cfg.Now), views: newViewBoard(),
		reads: &readView{store: cfg.Store, committed: cfg.CommittedView},
		jobM:  newJobMetrics(cfg.Registerer, cfg.Global)}
	if !cfg.Global {
		l.fwdM = newForwarderMetrics(cfg.Registerer)
		l.govM = newGovMetrics(cfg.Registerer)
	}
	return l, nil
}

// Entry implements group.ApplyObserver: it records what an applied entry
// changed for the next pass, and on the leading manager counts the leases
// it took back (jobmetrics.go).
func (l *Lifecycle) Entry(results [][]fsm.Result) {
	l.dirty.Entry(results)
	if !l.cfg.Global && l.counting() {
		l.jobM.entry(results)
	}
}

// Restored implements group.ApplyObserver: a snapshot replaced the state,
// the next pass scans every job.
func (l *Lifecycle) Restored() { l.dirty.Restored() }

// Touch records a message from worker (any worker call renews its
// liveness).
func (l *Lifecycle) Touch(worker string) { l.live.Touch(worker) }

// Forget drops a worker that left.
func (l *Lifecycle) Forget(worker string) { l.live.Forget(worker) }

// LastHeard returns when worker was last heard from since this term's
// leader took over (false if never).
func (l *Lifecycle) LastHeard(worker string) (time.Time, bool) { return l.live.lastHeard(worker) }

// View is what the regional leader's reconciler last saw of its ledger's
// live workflows, published after every pass: the worker API answers
// lease long-polls from it instead of scanning the ledger. A published
// View is never changed.
type View struct {
	// Index is the applied index the pass read.
	Index uint64
	// Leases holds, per worker, the workflows LEASED to it.
	Leases map[string][]*fsm.WorkflowState
}

// LeaseView returns the first view whose Index is greater than index, or
// the current view when ctx ends first (a long poll's timeout is not an
// error).
func (l *Lifecycle) LeaseView(ctx context.Context, index uint64) *View {
	return l.views.after(ctx, index)
}

// CurrentView returns the latest view (never nil; empty outside a term).
func (l *Lifecycle) CurrentView() *View { return l.views.current() }

// PublishView makes v the current view and wakes the waiting long polls.
// The reconciler publishes after each pass; tests of the worker API
// publish their own.
func (l *Lifecycle) PublishView(v *View) { l.views.publish(v) }

// ForwarderStatus returns this term's forwarder's last status; false when
// no forwarder runs (not a leading manager).
func (l *Lifecycle) ForwarderStatus() (api.ForwarderStatus, bool) {
	f := l.fwd.Load()
	if f == nil {
		return api.ForwarderStatus{}, false
	}
	return f.Status(), true
}
