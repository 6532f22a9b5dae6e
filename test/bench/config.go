package bench

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/strata-ledger/strata/fsm"
)

// Targets: the system under test.
const (
	TargetStrata = "strata"
	TargetEtcd   = "etcd"
)

// Tiers of a Strata workload (DESIGN §4).
const (
	TierRegional = "regional"
	TierGlobal   = "global"
)

// Durability levels a Strata write may ask for (DESIGN §4).
const (
	DurabilityLocal    = "local"
	DurabilityRegional = "regional"
	DurabilityGlobal   = "global"
)

// Limits and defaults.
const (
	// MaxClients bounds concurrent clients: each holds a connection and a
	// 35 KiB histogram.
	MaxClients = 4096
	// MaxRate bounds an open-loop run's rate (requests per second over
	// all workers): one goroutine hands out every slot, and beyond this
	// its own pace, not the system's, would set the schedule.
	MaxRate = 1_000_000
	// MaxDuration bounds one run.
	MaxDuration = time.Hour
	// DefaultDuration is a run's length when none is given.
	DefaultDuration = 10 * time.Second
	// MaxBatch is the API's limit of events per batch request (DESIGN §13).
	MaxBatch = fsm.MaxBatchEvents
	// MaxEtcdPayloadBytes bounds an etcd value (etcd's default request
	// limit is 1.5 MiB; a benchmark has no use for more).
	MaxEtcdPayloadBytes = 1 << 20
	// DefaultPayloadBytes is the payload of DESIGN's comparison runs.
	DefaultPayloadBytes = 200
	// DefaultRequestTimeout bounds one request.
	DefaultRequestTimeout = 30 * time.Second
	// maxResponseBytes bounds a response body read: a batch response holds
	// one result per event, well under 1 MiB for MaxBatch events.
	maxResponseBytes = 4 << 20
	// errorBackoff is how long a client pauses after a failed request,
	// so that a refused connection does not turn into a busy loop.
	errorBackoff = 10 * time.Millisecond
	// DefaultTenant and DefaultRegion name what the workload writes.
	DefaultTenant = "bench"
	DefaultRegion = "use1"
)

// ErrInvalidConfig is returned by Config.Validate.
var ErrInvalidConfig = errors.New("bench: invalid config")

// Config describes one run. Zero fields take the defaults noted.
type Config struct {
	// Addrs are the nodes to send to, "host:port" or a URL
	// ("http://host:port"); client i sends to Addrs[i % len(Addrs)].
	Addrs []string
	// Token is sent as a bearer token (Strata only).
	Token string
	// Target is TargetStrata (default) or TargetEtcd.
	Target string
	// Tier is TierGlobal (default) or TierRegional (Strata only).
	Tier string
	// Durability is the level to wait for; default the tier's own.
	Durability string
	// Clients is the number of concurrent clients; default 1. In an open
	// loop (Rate > 0) it is the number of workers the slots are handed
	// to, so at most Clients requests are in flight.
	Clients int
	// Rate, if positive, makes the run an open loop: requests are due at
	// fixed intervals of 1/Rate seconds (Rate counts requests per second
	// over all workers), whatever the answers so far, and each request's
	// latency counts from the time it was due. 0: a closed loop, where
	// each client sends its next request when the previous one is
	// answered.
	Rate float64
	// Requests stops the run after this many requests in all; 0: none.
	Requests int64
	// Duration stops the run after this long; default DefaultDuration.
	Duration time.Duration
	// PayloadBytes is the size of each event's body (see the package
	// doc); default DefaultPayloadBytes.
	PayloadBytes int
	// Batch is the number of events per request; default 1.
	Batch int
	// Tenant and Region name what the workload writes; defaults
	// DefaultTenant and DefaultRegion. Region must be the region of the
	// managers written to in the regional tier.
	Tenant string
	Region string
	// RequestTimeout bounds one request; default DefaultRequestTimeout.
	RequestTimeout time.Duration
	// WaitReady, if positive, makes Run first wait up to this long until
	// every address passes its health check (Strata GET /readyz, etcd GET
	// /health); the wait is not part of the measurement.
	WaitReady time.Duration
	// Progress, if not nil, receives a progress bar while the run lasts.
	Progress io.Writer
	// TLS, if set, is the client's TLS config (a TLS cluster: its CA as
	// RootCAs); Addrs must then be https:// URLs.
	TLS *tls.Config
}

// withDefaults returns c with its zero fields set.
func (c Config) withDefaults() Config {
	if c.Target == "" {
		c.Target = TargetStrata
	}
	if c.Tier == "" {
		c.Tier = TierGlobal
	}
	if c.Durability == "" && c.Target == TargetStrata {
		c.Durability = c.Tier // the levels and tiers share names
	}
	if c.Clients == 0 {
		c.Clients = 1
	}
	if c.Duration == 0 {
		c.Duration = DefaultDuration
	}
	if c.PayloadBytes == 0 {
		c.PayloadBytes = DefaultPayloadBytes
	}
	if c.Batch == 0 {
		c.Batch = 1
	}
	if c.Tenant == "" {
		c.Tenant = DefaultTenant
	}
	if c.Region == "" {
		c.Region = DefaultRegion
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	return c
}

// Validate reports the first setting of c (after defaults) that is out of
// range. Payload sizes a workload cannot reach are reported when the run
// starts, by the workload.
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	if len(c.Addrs) == 0 {
		return bad("no address to send to")
	}
	for _, a := range c.Addrs {
		if _, err := baseURL(a); err != nil {
			return bad("%v", err)
		}
	}
	switch {
	case c.Target != TargetStrata && c.Target != TargetEtcd:
		return bad("target %q: want %s or %s", c.Target, TargetStrata, TargetEtcd)
	case c.Tier != TierRegional && c.Tier != TierGlobal:
		return bad("tier %q: want %s or %s", c.Tier, TierRegional, TierGlobal)
	case c.Clients < 1 || c.Clients > MaxClients:
		return bad("clients %d: want 1..%d", c.Clients, MaxClients)
	case !(c.Rate >= 0 && c.Rate <= MaxRate): // also refuses NaN
		return bad("rate %v: want 0 (closed loop) up to %d requests per second", c.Rate, MaxRate)
	case c.Requests < 0:
		return bad("requests %d: want 0 (no limit) or more", c.Requests)
	case c.Duration < 0 || c.Duration > MaxDuration:
		return bad("duration %v: want up to %v", c.Duration, MaxDuration)
	case c.Batch < 1 || c.Batch > MaxBatch:
		return bad("batch %d: want 1..%d", c.Batch, MaxBatch)
	case c.PayloadBytes < 1:
		return bad("payload %d bytes: want at least 1", c.PayloadBytes)
	case c.RequestTimeout < 0:
		return bad("request timeout %v: want a positive duration", c.RequestTimeout)
	case c.WaitReady < 0 || c.WaitReady > MaxDuration:
		return bad("wait for readiness %v: want up to %v", c.WaitReady, MaxDuration)
	}
	if c.Target == TargetEtcd {
		switch {
		case c.Batch != 1:
			return bad("batch %d: the etcd target writes one key per request", c.Batch)
		case c.Durability != "":
			return bad("durability %q: the etcd target has none to choose", c.Durability)
		case c.PayloadBytes > MaxEtcdPayloadBytes:
			return bad("payload %d bytes: the etcd target takes at most %d", c.PayloadBytes, MaxEtcdPayloadBytes)
		}
		return nil
	}
	switch c.Durability {
	case DurabilityLocal, DurabilityRegional, DurabilityGlobal:
	default:
		return bad("durability %q: want %s, %s or %s", c.Durability, DurabilityLocal, DurabilityRegional, DurabilityGlobal)
	}
	if c.Tier == TierRegional && c.Durability == DurabilityGlobal {
		return bad("durability global: regional-tier writes land in a regional ledger and never reach GLOBAL (DESIGN §4)")
	}
	if !fsm.IsRegion(c.Region) {
		return bad("region %q: want a region code of lowercase letters and digits, like use1", c.Region)
	}
	if !fsm.IsName(c.Tenant) {
		return bad("tenant %q: want 1..%d of [A-Za-z0-9._-]", c.Tenant, fsm.MaxNameBytes)
	}
	return nil
}

// baseURL turns "host:port" or a URL into a URL without a trailing slash.
func baseURL(addr string) (string, error) {
	if !strings.Contains(addr, "://") {
		addr = "http://" + addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", addr, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("address %q: want host:port or an http(s) URL", addr)
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}
