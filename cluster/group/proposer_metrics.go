package group

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/strata-ledger/strata/cluster/internal/metrics"
)

// proposerMetrics are the strata_pipeline_proposer_* collectors.
type proposerMetrics struct {
	entries       prometheus.Counter
	entryBatches  prometheus.Histogram
	entryBytes    prometheus.Histogram
	queued        prometheus.Gauge
	inFlight      prometheus.Gauge
	commitSeconds prometheus.Histogram
	rejected      *prometheus.CounterVec
}

func newProposerMetrics(reg prometheus.Registerer) (*proposerMetrics, error) {
	m := &proposerMetrics{
		entries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_pipeline_proposer_entries_total",
			Help: "Raft entries proposed (raft.Apply calls).",
		}),
		entryBatches: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_pipeline_proposer_entry_batches",
			Help:    "Client batches packed into one Raft entry.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 13),
		}),
		entryBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_pipeline_proposer_entry_bytes",
			Help:    "Size of one proposed Raft entry.",
			Buckets: prometheus.ExponentialBuckets(256, 4, 8),
		}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_pipeline_proposer_queued_batches",
			Help: "Batches waiting for a Raft entry.",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_pipeline_proposer_in_flight_entries",
			Help: "Raft entries proposed and not yet applied.",
		}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_pipeline_proposer_commit_seconds",
			Help:    "Time from raft.Apply to the entry being applied on the leader.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 20),
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_pipeline_proposer_rejected_total",
			Help: "Batches refused by the proposer, by reason (not_leader, backpressure).",
		}, []string{"reason"}),
	}
	for _, r := range []string{"not_leader", "backpressure"} {
		m.rejected.WithLabelValues(r)
	}
	return m, metrics.Register(reg, "proposer", m.entries, m.entryBatches, m.entryBytes, m.queued, m.inFlight, m.commitSeconds, m.rejected)
}
