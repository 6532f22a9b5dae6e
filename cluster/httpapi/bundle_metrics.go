package httpapi

import "github.com/prometheus/client_golang/prometheus"

// bundleMetrics are strata_bundle_* (seed 001): exports and imports, the
// entries they carried, duplicates dropped, conflicts, bytes.
type bundleMetrics struct {
	exported, imported  *prometheus.CounterVec // by format / by result
	entries, duplicates prometheus.Counter
	conflicts           prometheus.Counter
	bytesOut, bytesIn   prometheus.Counter
	importSeconds       prometheus.Histogram
}

func newBundleMetrics(reg prometheus.Registerer) *bundleMetrics {
	m := &bundleMetrics{
		exported: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_bundle_exports_total",
			Help: "Exports by format (bundle, ndjson)."}, []string{"format"}),
		imported: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_bundle_imports_total",
			Help: "Imports by result (applied, verified, refused, conflict)."}, []string{"result"}),
		entries: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_bundle_import_entries_total",
			Help: "Entries of the bundles imported."}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_bundle_import_duplicates_total",
			Help: "Imported entries the ledger held already, dropped."}),
		conflicts: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_bundle_import_conflicts_total",
			Help: "Imports refused for an event whose body differs from the ledger's."}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_bundle_export_bytes_total", Help: "Bytes exported."}),
		bytesIn:  prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_bundle_import_bytes_total", Help: "Bytes of bundles imported."}),
		importSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_bundle_import_duration_seconds",
			Help: "Time to verify and apply one import.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 10)}),
	}
	reg.MustRegister(m.exported, m.imported, m.entries, m.duplicates, m.conflicts, m.bytesOut, m.bytesIn, m.importSeconds)
	return m
}
