package commit

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/strata-ledger/strata/cluster/internal/metrics"
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
	// foundApplied: records found applied before a retry (Applied).
	foundApplied prometheus.Counter
	refused      prometheus.Counter
	evicted      prometheus.Counter
	rejected     *prometheus.CounterVec
	watermark    prometheus.Gauge
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
		foundApplied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_pipeline_found_applied_total",
			Help: "Records whose attempt failed (a timeout, a lost answer) found already applied in this node's ledger before a retry: they reached the tier without committing duplicates.",
		}),
		// strata_pipeline_dropped_total before issue 17 finding 9: the
		// records are no longer dropped silently, their refusal is kept.
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_pipeline_refused_total",
			Help: "NodeWAL records the tier refused for good (invalid batch, malformed entry: a bug or a version skew); each refusal is kept for its client (GET /v1/writes/{node}/{lsn}).",
		}),
		evicted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_pipeline_refusals_evicted_total",
			Help: "Kept refusals dropped, oldest first, to stay within MaxRefusals and MaxRefusalBytes.",
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
	return m, metrics.Register(reg, "pipeline", m.ackVec, m.inFlight, m.reproposed, m.retries, m.forwarded, m.foundApplied, m.refused, m.evicted, m.rejected, m.watermark)
}
