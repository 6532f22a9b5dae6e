package cluster

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/fsm/boltstore"
)

// storeCommits exports the ledger store's group commits by cause
// (boltstore.GroupStats, read at scrape time): how many Raft entries
// share a bbolt transaction is the lever of issue 19, and commits "by
// read" on a leader mean some loop reads applied rather than committed
// state (group.CommittedObserver).
type storeCommits struct {
	store   *boltstore.Store
	commits *prometheus.Desc
	updates *prometheus.Desc
}

func newStoreCommits(s *boltstore.Store) *storeCommits {
	return &storeCommits{store: s,
		commits: prometheus.NewDesc("strata_ledger_store_commits_total",
			"Commits of the ledger store's shared transactions, by cause: interval, size, read (a read needed what was pending), close.",
			[]string{"cause"}, nil),
		updates: prometheus.NewDesc("strata_ledger_store_committed_updates_total",
			"Ledger updates (one per applied Raft entry) the store's shared transactions committed.", nil, nil)}
}

func (c *storeCommits) Describe(ch chan<- *prometheus.Desc) { ch <- c.commits; ch <- c.updates }

func (c *storeCommits) Collect(ch chan<- prometheus.Metric) {
	gs := c.store.GroupStats()
	for cause, n := range map[string]uint64{"interval": gs.Interval, "size": gs.Size, "read": gs.Read, "close": gs.Close} {
		ch <- prometheus.MustNewConstMetric(c.commits, prometheus.CounterValue, float64(n), cause)
	}
	ch <- prometheus.MustNewConstMetric(c.updates, prometheus.CounterValue, float64(gs.Updates))
}
