// Package chaincheck verifies every tenant's audit chain of a gate's
// ledger at start and then periodically (issue 13, seed 000): each link
// recomputed, page by page so a long chain never holds one read view for
// long. A broken chain is logged, counted and visible in metrics; it is
// not repaired here (the chain is evidence, and the replica check finds a
// damaged store). Run is the only goroutine; Broken may be called from
// any.
package chaincheck

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/fsm"
)

const (
	// DefaultInterval is how often every chain is verified again.
	DefaultInterval = 10 * time.Minute
	// pageEvents bounds one read view of a verification.
	pageEvents = 10_000
)

// Ledger is what the check reads.
type Ledger interface {
	View(fn func(fsm.ReadTx) error) error
	VerifyChainPage(tenant string, after uint64, link *fsm.Hash, limit int) (fsm.ChainPage, error)
}

// Checker verifies a ledger's chains.
type Checker struct {
	led      Ledger
	interval time.Duration
	page     int // events per read view
	log      *slog.Logger

	verified *prometheus.CounterVec
	broken   prometheus.Gauge

	mu      sync.Mutex
	brokenT map[string]string // tenant -> why, from the last pass
}

// New returns a Checker of led; reg may be nil.
func New(led Ledger, interval time.Duration, log *slog.Logger, reg prometheus.Registerer) (*Checker, error) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Checker{led: led, interval: interval, page: pageEvents, log: log, brokenT: map[string]string{},
		verified: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_chain_verifications_total",
			Help: "Audit chain verifications of a tenant by result (ok, broken, error)."}, []string{"result"}),
		broken: prometheus.NewGauge(prometheus.GaugeOpts{Name: "strata_chain_broken_tenants",
			Help: "Tenants whose audit chain did not verify in the last pass."}),
	}
	if reg != nil {
		for _, col := range []prometheus.Collector{c.verified, c.broken} {
			if err := reg.Register(col); err != nil {
				return nil, err
			}
		}
	}
	return c, nil
}

// Broken returns the tenants whose chain did not verify in the last pass,
// with the first broken link.
func (c *Checker) Broken() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]string, len(c.brokenT))
	for k, v := range c.brokenT {
		out[k] = v
	}
	return out
}

// Run verifies every chain now and then every interval until ctx ends.
func (c *Checker) Run(ctx context.Context) {
	for {
		c.Pass(ctx)
		t := time.NewTimer(c.interval)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// Pass verifies every tenant's chain once.
func (c *Checker) Pass(ctx context.Context) {
	var tenants []string
	err := c.led.View(func(tx fsm.ReadTx) error {
		return tx.ChainHeads(func(t string, _ fsm.ChainHead) error {
			tenants = append(tenants, t)
			return nil
		})
	})
	if err != nil {
		c.log.Warn("chain check: list tenants", "err", err)
		return
	}
	broken := map[string]string{}
	for _, t := range tenants {
		if ctx.Err() != nil {
			return
		}
		if err := c.verify(ctx, t); err != nil {
			var ce *fsm.ChainError
			if errors.As(err, &ce) {
				c.verified.WithLabelValues("broken").Inc()
				broken[t] = err.Error()
				c.log.Error("audit chain does not verify", "tenant", t, "err", err)
			} else if ctx.Err() == nil {
				c.verified.WithLabelValues("error").Inc()
				c.log.Warn("chain check: read failed", "tenant", t, "err", err)
			}
			continue
		}
		c.verified.WithLabelValues("ok").Inc()
	}
	c.mu.Lock()
	c.brokenT = broken
	c.mu.Unlock()
	c.broken.Set(float64(len(broken)))
}

// verify recomputes tenant's chain page by page.
func (c *Checker) verify(ctx context.Context, tenant string) error {
	var after uint64
	var link *fsm.Hash
	for ctx.Err() == nil {
		p, err := c.led.VerifyChainPage(tenant, after, link, c.page)
		if err != nil {
			return err
		}
		if p.Done {
			return nil
		}
		if p.Head.Seq <= after {
			return errors.New("chain check: a page did not advance")
		}
		after = p.Head.Seq
		l := p.Head.Link
		link = &l
	}
	return ctx.Err()
}
