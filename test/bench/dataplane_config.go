package bench

import (
	"crypto/tls"
	"fmt"
	"io"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// `strata bench progress`: simulated workers firing cumulative progress
// counters at a region's managers over the progress data plane (UDP, TCP)
// or the HTTP progress call, then checking that the regional ledger holds
// exactly the last counters sent. See dataplane.go.

// How the simulated workers send progress (DataPlaneConfig.Transport).
const (
	TransportUDP  = "udp"  // data-plane frames over UDP (the default)
	TransportTCP  = "tcp"  // data-plane frames, length-prefixed over TCP
	TransportHTTP = "http" // POST /v1/workers/{id}/progress, durability local
)

// Data-plane bench limits and defaults.
const (
	// MaxDataPlaneWorkers bounds the simulated workers: each is a
	// registration, a heartbeat loop and a sending goroutine.
	MaxDataPlaneWorkers = 256
	// MaxDataPlaneWorkflows bounds the job's workflows: every one is a
	// workflow in the regional ledger, read back at the end in one
	// GET /v1/jobs/{id}/workflows (api.MaxResponseBytes).
	MaxDataPlaneWorkflows = 10_000
	// maxWorkflowsPerWorker is the managers' limit on a worker's capacity
	// (cluster/worker.MaxCapacity).
	maxWorkflowsPerWorker = 1_000
	// MaxDataPlaneRate bounds --rate (updates per second over all workers).
	MaxDataPlaneRate = 100_000_000
	// DefaultDataPlaneWorkers and DefaultDataPlaneWorkflows size a run.
	DefaultDataPlaneWorkers   = 4
	DefaultDataPlaneWorkflows = 1_000
	// DefaultSettleTimeout bounds the wait for the ledger at the end.
	DefaultSettleTimeout = 30 * time.Second
	// DefaultLeaseTimeout bounds the wait for every workflow to be leased.
	DefaultLeaseTimeout = 60 * time.Second
)

// DataPlaneConfig describes one `strata bench progress` run. Zero fields
// take the defaults noted.
type DataPlaneConfig struct {
	// Addrs are the API addresses of the managers of Region: where the
	// workers register and whose /metrics are read.
	Addrs []string
	// Token must allow registering workers of any id (the operator scope:
	// the token of a `strata dev` cluster file).
	Token string
	// Region and Tenant name the job; defaults DefaultRegion, DefaultTenant.
	Region string
	Tenant string
	// Workers simulated workers (DefaultDataPlaneWorkers) share Workflows
	// leased workflows (DefaultDataPlaneWorkflows), at most
	// maxWorkflowsPerWorker each.
	Workers   int
	Workflows int
	// Rate is updates per second over all workers (one update: one
	// workflow's counters in one frame); 0 sends as fast as possible.
	Rate float64
	// Duration is how long the load lasts (DefaultDuration).
	Duration time.Duration
	// Loss and Dup are the probabilities, in [0, 1), that a frame is
	// dropped or sent twice before it leaves the bench; Reorder holds a
	// random half of each round's frames back until after the next round.
	// Data plane only.
	Loss, Dup float64
	Reorder   bool
	// Transport is TransportUDP (default), TransportTCP or TransportHTTP.
	Transport string
	// SettleTimeout bounds the wait for the ledger to hold the last
	// counters (DefaultSettleTimeout); LeaseTimeout the wait for the
	// job's workflows to be leased (DefaultLeaseTimeout).
	SettleTimeout time.Duration
	LeaseTimeout  time.Duration
	// RequestTimeout bounds one API call (DefaultRequestTimeout).
	RequestTimeout time.Duration
	// WaitReady, if positive, first waits up to this long for every
	// address to pass GET /readyz.
	WaitReady time.Duration
	// Seed seeds the loss, duplication and reordering draws; 0 picks one.
	Seed uint64
	// Progress, if not nil, receives a progress bar while the load runs.
	Progress io.Writer
	// TLS, if set, is the API client's TLS config (a TLS cluster); Addrs
	// must then be https:// URLs. Frames are MAC'd, not encrypted: the
	// data plane itself is the same with or without it.
	TLS *tls.Config
}

func (c DataPlaneConfig) withDefaults() DataPlaneConfig {
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.Tenant == "" {
		c.Tenant = DefaultTenant
	}
	if c.Workers == 0 {
		c.Workers = DefaultDataPlaneWorkers
	}
	if c.Workflows == 0 {
		c.Workflows = DefaultDataPlaneWorkflows
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.Transport == "" {
		c.Transport = TransportUDP
	}
	if c.SettleTimeout == 0 {
		c.SettleTimeout = DefaultSettleTimeout
	}
	if c.LeaseTimeout == 0 {
		c.LeaseTimeout = DefaultLeaseTimeout
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	return c
}

// Validate reports the first setting of c (after defaults) that is out of
// range, wrapping ErrInvalidConfig.
func (c DataPlaneConfig) Validate() error {
	c = c.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	if len(c.Addrs) == 0 {
		return bad("no manager address to send to")
	}
	for _, a := range c.Addrs {
		if _, err := baseURL(a); err != nil {
			return bad("%v", err)
		}
	}
	prob := func(p float64) bool { return p >= 0 && p < 1 } // also refuses NaN
	switch {
	case c.Workers < 1 || c.Workers > MaxDataPlaneWorkers:
		return bad("workers %d: want 1..%d", c.Workers, MaxDataPlaneWorkers)
	case c.Workflows < 1 || c.Workflows > MaxDataPlaneWorkflows:
		return bad("workflows %d: want 1..%d", c.Workflows, MaxDataPlaneWorkflows)
	case c.Workflows > c.Workers*maxWorkflowsPerWorker:
		return bad("workflows %d over %d workers: a worker holds at most %d; add workers", c.Workflows, c.Workers, maxWorkflowsPerWorker)
	case c.Workflows < c.Workers:
		return bad("workflows %d for %d workers: every worker needs at least one workflow", c.Workflows, c.Workers)
	case !(c.Rate >= 0 && c.Rate <= MaxDataPlaneRate):
		return bad("rate %v: want 0 (as fast as possible) up to %d updates per second", c.Rate, MaxDataPlaneRate)
	case c.Duration < 0 || c.Duration > MaxDuration:
		return bad("duration %v: want up to %v", c.Duration, MaxDuration)
	case !prob(c.Loss):
		return bad("loss %v: want a probability in [0, 1)", c.Loss)
	case !prob(c.Dup):
		return bad("dup %v: want a probability in [0, 1)", c.Dup)
	case c.Transport != TransportUDP && c.Transport != TransportTCP && c.Transport != TransportHTTP:
		return bad("transport %q: want %s, %s or %s", c.Transport, TransportUDP, TransportTCP, TransportHTTP)
	case c.Transport == TransportHTTP && (c.Loss > 0 || c.Dup > 0 || c.Reorder):
		return bad("loss, dup and reorder act on data-plane frames; the HTTP progress call has none")
	case c.SettleTimeout < 0 || c.SettleTimeout > MaxDuration:
		return bad("settle timeout %v: want up to %v", c.SettleTimeout, MaxDuration)
	case c.LeaseTimeout < 0 || c.LeaseTimeout > MaxDuration:
		return bad("lease timeout %v: want up to %v", c.LeaseTimeout, MaxDuration)
	case c.RequestTimeout < 0:
		return bad("request timeout %v: want a positive duration", c.RequestTimeout)
	case c.WaitReady < 0 || c.WaitReady > MaxDuration:
		return bad("wait for readiness %v: want up to %v", c.WaitReady, MaxDuration)
	case !fsm.IsRegion(c.Region):
		return bad("region %q: want a region code of lowercase letters and digits, like use1", c.Region)
	case !fsm.IsName(c.Tenant):
		return bad("tenant %q: want 1..%d of [A-Za-z0-9._-]", c.Tenant, fsm.MaxNameBytes)
	}
	return nil
}

// roundInterval is how often each worker sends a round (each of its
// workflows' counters once) to keep to c.Rate over all workers: every
// worker holds its share of the workflows, so the interval is the same for
// all. 0: as fast as possible.
func (c DataPlaneConfig) roundInterval() time.Duration {
	if c.Rate == 0 {
		return 0
	}
	return time.Duration(float64(c.Workflows) / c.Rate * float64(time.Second))
}
