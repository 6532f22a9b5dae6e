// Package storemetrics exports the ledger store's group commits as
// Prometheus counters, read at scrape time from what the store counts
// (boltstore.GroupStats), so the store itself stays free of metrics.
package storemetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/fsm/boltstore"
)

// Store is what the collector reads of the ledger store.
type Store interface {
	GroupStats() boltstore.GroupStats
}

// Collector exports the ledger store's group commits by cause
// (boltstore.GroupStats, read at scrape time): how many Raft entries
// share a bbolt transaction is the lever of issue 19, and commits "by
// read" on a leader mean some loop reads applied rather than committed
// state (group.CommittedObserver).
type Collector struct {
	store   Store
	commits *prometheus.Desc
	updates *prometheus.Desc
}

// New returns the collector of s's commits; register it once.
func New(s Store) *Collector {
	return &Collector{store: s,
		commits: prometheus.NewDesc("strata_ledger_store_commits_total",
			"Commits of the ledger store's shared transactions, by cause: interval, size, read (a read needed what was pending), close.",
			[]string{"cause"}, nil),
		updates: prometheus.NewDesc("strata_ledger_store_committed_updates_total",
			"Ledger updates (one per applied Raft entry) the store's shared transactions committed.", nil, nil)}
}

func (c *Collector) Describe(ch chan<- *prometheus.Desc) { ch <- c.commits; ch <- c.updates }

func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	gs := c.store.GroupStats()
	for cause, n := range map[string]uint64{"interval": gs.Interval, "size": gs.Size, "read": gs.Read, "close": gs.Close} {
		ch <- prometheus.MustNewConstMetric(c.commits, prometheus.CounterValue, float64(n), cause)
	}
	ch <- prometheus.MustNewConstMetric(c.updates, prometheus.CounterValue, float64(gs.Updates))
}
