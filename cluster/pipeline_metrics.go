package cluster

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// pipelineMetrics are the strata_pipeline_* collectors of a Pipeline
// (DESIGN §12).
type pipelineMetrics struct {
	ackVec     *prometheus.HistogramVec
	ack        [DurabilityGlobal + 1]prometheus.Observer // by level
	inFlight   prometheus.Gauge
	reproposed prometheus.Counter
	retries    prometheus.Counter
	forwarded  prometheus.Counter
	dropped    prometheus.Counter
	rejected   *prometheus.CounterVec
	watermark  prometheus.Gauge
}

func newPipelineMetrics(reg prometheus.Registerer) (*pipelineMetrics, error) {
	m := &pipelineMetrics{
		ackVec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "strata_pipeline_ack_seconds",
			Help:    "Time from Submit to acknowledgement, by acknowledged level (NONE, LOCAL, REGIONAL, GLOBAL).",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 20),
		}, []string{"level"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_pipeline_in_flight",
			Help: "NodeWAL records appended and not yet at the node's tier.",
		}),
		reproposed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_pipeline_reproposed_total",
			Help: "NodeWAL records re-proposed by recovery after a restart.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_pipeline_propose_retries_total",
			Help: "Propose or forward attempts that failed and were retried after a backoff.",
		}),
		forwarded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_pipeline_forwarded_total",
			Help: "Batches forwarded to the leader by a follower.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_pipeline_dropped_total",
			Help: "NodeWAL records the tier refused as malformed (a bug: never expected).",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_pipeline_rejected_total",
			Help: "Submits refused before the NodeWAL append, by reason (level, invalid, backpressure).",
		}, []string{"reason"}),
		watermark: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_pipeline_watermark_lsn",
			Help: "The tier watermark written to the NodeWAL checkpoint.",
		}),
	}
	for d := DurabilityNone; d <= DurabilityGlobal; d++ {
		m.ack[d] = m.ackVec.WithLabelValues(d.String())
	}
	for _, r := range []string{"level", "invalid", "backpressure"} {
		m.rejected.WithLabelValues(r)
	}
	return m, registerMetrics(reg, "pipeline", m.ackVec, m.inFlight, m.reproposed, m.retries, m.forwarded, m.dropped, m.rejected, m.watermark)
}

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
	return m, registerMetrics(reg, "proposer", m.entries, m.entryBatches, m.entryBytes, m.queued, m.inFlight, m.commitSeconds, m.rejected)
}

// registerMetrics registers cs with reg (nil: nothing).
func registerMetrics(reg prometheus.Registerer, what string, cs ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("cluster: register %s metrics: %w", what, err)
		}
	}
	return nil
}
