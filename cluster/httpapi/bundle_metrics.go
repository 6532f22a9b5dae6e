package httpapi

import "github.com/prometheus/client_golang/prometheus"

// bundleMetrics are strata_bundle_* (seed 001): exports and imports, the
// entries they carried, duplicates dropped, conflicts by kind, bytes,
// how long an export and an import take.
//
// Seed 001 also counts entries merged: merging runs offline only
// (strata bundle merge, bundle.Merge, whose result reports what it merged
// and dropped); the server neither merges bundles nor sees a merge, so it
// has no such counter. An import's own ordering of one bundle's events
// against the ledger shows as entries, duplicates and conflicts.
type bundleMetrics struct {
	exported, imported  *prometheus.CounterVec // by format / by result
	entries, duplicates prometheus.Counter
	conflicts           *prometheus.CounterVec // by kind
	bytesOut, bytesIn   prometheus.Counter
	importSeconds       prometheus.Histogram
	exportSeconds       *prometheus.HistogramVec // by format
}

// Conflict kinds (the kind label of strata_bundle_import_conflicts_total).
const (
	// conflictBody: an event id the ledger holds with other content; the
	// whole bundle is refused (409), counted once per import.
	conflictBody = "body"
	// conflictRejected: an event the ledger's apply refused (not stored:
	// a job id another event created, a workflow that exists), per event.
	conflictRejected = "rejected"
	// conflictAbsorbed: an event stored that did not take effect as it
	// asked (a transition of a job that moved on), per event.
	conflictAbsorbed = "absorbed"
)

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
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "strata_bundle_import_conflicts_total",
			Help: "Import conflicts by kind: body (an import refused for an event whose body differs from the ledger's), " +
				"rejected (events the ledger's apply refused), absorbed (events stored without taking effect)."}, []string{"kind"}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_bundle_export_bytes_total", Help: "Bytes exported."}),
		bytesIn:  prometheus.NewCounter(prometheus.CounterOpts{Name: "strata_bundle_import_bytes_total", Help: "Bytes of bundles imported."}),
		importSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "strata_bundle_import_duration_seconds",
			Help: "Time to verify and apply one import.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 10)}),
		exportSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "strata_bundle_export_duration_seconds",
			Help: "Time to write one export, by format.", Buckets: prometheus.ExponentialBuckets(0.01, 4, 10)}, []string{"format"}),
	}
	for _, k := range []string{conflictBody, conflictRejected, conflictAbsorbed} {
		m.conflicts.WithLabelValues(k)
	}
	reg.MustRegister(m.exported, m.imported, m.entries, m.duplicates, m.conflicts, m.bytesOut, m.bytesIn, m.importSeconds, m.exportSeconds)
	return m
}
