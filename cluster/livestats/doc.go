// Package livestats carries the live load statistics of running jobs
// (DESIGN §4: stats at NONE) from the managers that fold the progress
// data plane to the gates that serve job views.
//
// A manager's Tracker turns the cumulative counters and latency
// histograms it drains from its progress receiver into per-job deltas
// (one Sample per job per flush); the manager pushes them, batched, to
// every gate (Push, POST Path with the cluster token). A gate's Board
// keeps the last Window of samples in memory and answers a job's live
// rate and p50/p99 per region. Nothing here is durable or replicated:
// a lost push is a gap in a graph, never a lost count (the counters
// travel through the ledger). Tracker and Board are pure: no goroutines,
// no I/O; Board takes its clock.
package livestats

import (
	"time"

	"github.com/strata-ledger/strata/transport/progress"
)

// Limits and timings.
const (
	// Path is the gates' internal endpoint for pushes.
	Path = "/internal/v1/live"
	// Window is how far back a job's live figures look.
	Window = 5 * time.Second
	// MaxJobs bounds the jobs a Board tracks; a push for a new job beyond
	// it is dropped (and counted) until old ones expire.
	MaxJobs = 10_000
	// MaxSamplesPerJob bounds the samples kept per job (all regions): a
	// few managers per region, two pushes a second, for Window.
	MaxSamplesPerJob = 256
	// MaxSamplesPerPush bounds one push; a Tracker never emits more in
	// one Take (the rest waits for the next).
	MaxSamplesPerPush = 4_096
	// MaxPushBytes bounds a push's body: MaxSamplesPerPush samples of at
	// most ~600 JSON bytes each.
	MaxPushBytes = 4 << 20
	// MaxInterval bounds a sample's interval: a manager flushes every
	// 500 ms; anything longer than Window is not live.
	MaxInterval = Window
	// Buckets is the histogram size (the data plane's log2 buckets).
	Buckets = progress.HistogramBuckets
)
