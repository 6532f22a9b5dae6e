package cluster

import (
	"fmt"
	"time"

	"github.com/strata-ledger/strata/cluster/govern"
	"github.com/strata-ledger/strata/fsm"
)

// BreakerConfig is the breakers: block of a manager's config (issue 18
// §2); zero fields take cluster/govern's defaults (window 60s in 12
// buckets, 10 samples, failure rate 0.5, cool-down 30s, 2 probes).
type BreakerConfig struct {
	Window      time.Duration `koanf:"window"`
	Buckets     int           `koanf:"buckets"`
	MinSamples  int           `koanf:"min_samples"`
	FailureRate float64       `koanf:"failure_rate"`
	CoolDown    time.Duration `koanf:"cool_down"`
	Probes      int           `koanf:"probes"`
}

// Govern returns the breaker rules' config.
func (b BreakerConfig) Govern() govern.BreakerConfig {
	return govern.BreakerConfig{Window: b.Window, Buckets: b.Buckets, MinSamples: b.MinSamples, FailureRate: b.FailureRate,
		CoolDown: b.CoolDown, Probes: b.Probes}.WithDefaults()
}

// RetryConfig is one job type's default retry policy (retry_defaults:
// {TYPE: {...}}), used for the type's jobs whose spec has no retry.
type RetryConfig struct {
	MaxAttempts    uint32        `koanf:"max_attempts"`
	InitialBackoff time.Duration `koanf:"initial_backoff"`
	MaxBackoff     time.Duration `koanf:"max_backoff"`
	RetryOn        []string      `koanf:"retry_on"`
}

// Govern returns the retry rules' policy.
func (r RetryConfig) Govern() govern.RetryPolicy {
	return govern.RetryPolicy{MaxAttempts: r.MaxAttempts, InitialBackoff: r.InitialBackoff, MaxBackoff: r.MaxBackoff,
		RetryOn: r.RetryOn}.WithDefaults()
}

// maxRetryDefaults bounds the job types retry_defaults may name.
const maxRetryDefaults = 256

// retryDefaults is RetryDefaults in the rules' form.
func (c *NodeConfig) retryDefaults() map[string]govern.RetryPolicy {
	if len(c.RetryDefaults) == 0 {
		return nil
	}
	out := make(map[string]govern.RetryPolicy, len(c.RetryDefaults))
	for t, r := range c.RetryDefaults {
		out[t] = r.Govern()
	}
	return out
}

func (c *NodeConfig) validateGovern() []error {
	var errs []error
	if err := c.Breakers.Govern().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("breakers: %w", err))
	}
	if len(c.RetryDefaults) > maxRetryDefaults {
		errs = append(errs, fmt.Errorf("retry_defaults: %d job types, at most %d", len(c.RetryDefaults), maxRetryDefaults))
	}
	for t, r := range c.RetryDefaults {
		if !fsm.IsName(t) {
			errs = append(errs, fmt.Errorf("retry_defaults: job type %q is not a name of [A-Za-z0-9._-]", t))
			continue
		}
		if r.MaxAttempts < 1 {
			errs = append(errs, fmt.Errorf("retry_defaults.%s.max_attempts: at least 1", t))
		}
		if err := r.Govern().Validate(); err != nil {
			errs = append(errs, fmt.Errorf("retry_defaults.%s: %w", t, err))
		}
	}
	return errs
}
