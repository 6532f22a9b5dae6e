package wal

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the "op" label of strata_wal_errors_total.
const (
	opWrite        = "write"
	opSync         = "sync"
	opRoll         = "roll"
	opBackpressure = "backpressure"
	opCheckpoint   = "checkpoint"
	opCompact      = "compact"
)

// metrics are the WAL's Prometheus collectors (DESIGN §12).
type metrics struct {
	fsyncSeconds prometheus.Histogram
	batchEntries prometheus.Histogram
	batchBytes   prometheus.Histogram
	entries      prometheus.Counter
	bytes        prometheus.Counter
	queueDepth   prometheus.Gauge
	errors       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		fsyncSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_wal_fsync_duration_seconds",
			Help:    "Time one batch's fdatasync took.",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 14),
		}),
		batchEntries: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_wal_batch_entries",
			Help:    "Records written by one batch (one write, one fdatasync).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
		batchBytes: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_wal_batch_bytes",
			Help:    "Bytes written by one batch.",
			Buckets: prometheus.ExponentialBuckets(128, 4, 9),
		}),
		entries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_wal_entries_total",
			Help: "Records made durable.",
		}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_wal_bytes_total",
			Help: "Record bytes made durable.",
		}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "strata_wal_queue_depth",
			Help: "Records appended and not yet durable, sampled after each batch.",
		}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "strata_wal_errors_total",
			Help: "Failed operations by op: write, sync, roll, backpressure, checkpoint, compact.",
		}, []string{"op"}),
	}
	for _, op := range []string{opWrite, opSync, opRoll, opBackpressure, opCheckpoint, opCompact} {
		m.errors.WithLabelValues(op)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.fsyncSeconds, m.batchEntries, m.batchBytes, m.entries, m.bytes, m.queueDepth, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("wal: register metrics (one WAL per registerer): %w", err)
		}
	}
	return m, nil
}
