package httpapi

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/quota"
	"github.com/strata-ledger/strata/fsm"
)

// quotaCollector reports, at each scrape of a gate, the quota usage of
// every tenant with a tenant-wide quota policy (issue 18 §4: quota usage
// and queue depth per tenant): strata_quota_active_jobs,
// strata_quota_allowed_jobs (the effective max_active, 0: none) and
// strata_quota_queued_jobs. Tenants without a policy are not reported, so
// the label set is bounded by the policies (at most
// fsm.MaxPoliciesPerKind); no job id is ever a label.
type quotaCollector struct {
	ledger                  *fsm.Ledger
	active, allowed, queued *prometheus.Desc
}

func newQuotaCollector(l *fsm.Ledger) *quotaCollector {
	return &quotaCollector{ledger: l,
		active:  prometheus.NewDesc("strata_quota_active_jobs", "Active jobs (PENDING not queued, RUNNING, CANCELLING) of a tenant with a quota policy.", []string{"tenant"}, nil),
		allowed: prometheus.NewDesc("strata_quota_allowed_jobs", "A tenant's effective max_active (0: none).", []string{"tenant"}, nil),
		queued:  prometheus.NewDesc("strata_quota_queued_jobs", "Queue depth: a tenant's jobs held over quota, waiting for admission.", []string{"tenant"}, nil),
	}
}

func (c *quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.active
	ch <- c.allowed
	ch <- c.queued
}

func (c *quotaCollector) Collect(ch chan<- prometheus.Metric) {
	_ = c.ledger.View(func(tx fsm.ReadTx) error {
		return tx.Policies(quota.Kind, func(r *fsm.Policy) error {
			if strings.Contains(r.Key, ":") {
				return nil // a job type's policy: its tenant's line counts it
			}
			u, err := quota.Count(tx, r.Key, "", 0)
			if err != nil {
				return err
			}
			allowed, _, err := quota.Allowed(tx, r.Key, "")
			if err != nil {
				return err
			}
			ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, float64(u.Active), r.Key)
			ch <- prometheus.MustNewConstMetric(c.allowed, prometheus.GaugeValue, float64(allowed), r.Key)
			ch <- prometheus.MustNewConstMetric(c.queued, prometheus.GaugeValue, float64(u.Queued), r.Key)
			return nil
		})
	})
}
