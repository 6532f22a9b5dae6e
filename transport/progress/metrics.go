package progress

import (
	"errors"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Drop reasons: the values of strata_progress_dropped_total{reason}.
const (
	ReasonBadMAC        = "bad_mac"
	ReasonUnknownWorker = "unknown_worker"
	ReasonStaleFence    = "stale_fence"
	ReasonMalformed     = "malformed"
	ReasonTooLarge      = "too_large"
	ReasonQueueFull     = "queue_full"
	ReasonConnLimit     = "conn_limit"
)

// Frame results: the values of strata_progress_frames_total{result}.
const (
	ResultFolded    = "folded"    // verified, newest seq of its sender
	ResultReordered = "reordered" // verified, older than the newest seq
	ResultDuplicate = "duplicate" // verified, seq seen before
	ResultDropped   = "dropped"   // refused; see dropped_total
)

var reasons = []string{ReasonBadMAC, ReasonUnknownWorker, ReasonStaleFence, ReasonMalformed, ReasonTooLarge, ReasonQueueFull, ReasonConnLimit}

// metrics are the receiver's collectors (DESIGN §12: strata_progress_*).
type metrics struct {
	frames  map[string]prometheus.Counter
	updates prometheus.Counter
	dropped map[string]prometheus.Counter
	fold    prometheus.Histogram
	// The same totals, readable without a scrape (Receiver.Stats).
	nFrames, nUpdates, nDropped atomic.Uint64
}

// Stats are a receiver's running totals since it started, for status
// pages: frames received (folded, reordered, duplicate), updates folded,
// frames and updates dropped, and the queue's fill and level now. The
// metrics carry the same counts.
type Stats struct {
	Frames, Updates, Dropped uint64
	QueueFill                float64
	Level                    Level
}

// frame counts one received frame by result.
func (m *metrics) frame(result string) {
	m.frames[result].Inc()
	m.nFrames.Add(1)
}

// folded counts n updates folded.
func (m *metrics) folded(n int) {
	m.updates.Add(float64(n))
	m.nUpdates.Add(uint64(n))
}

func newMetrics(reg prometheus.Registerer, fill func() float64) (*metrics, error) {
	frames := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_progress_frames_total",
		Help: "Progress frames received, by result (folded, reordered, duplicate, dropped).",
	}, []string{"result"})
	dropped := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "strata_progress_dropped_total",
		Help: "Progress frames dropped, by reason; for stale_fence, updates dropped (the frame's other updates are folded); for conn_limit, TCP connections refused.",
	}, []string{"reason"})
	m := &metrics{
		frames:  map[string]prometheus.Counter{},
		dropped: map[string]prometheus.Counter{},
		updates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "strata_progress_updates_total",
			Help: "Progress updates folded into the aggregates.",
		}),
		fold: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "strata_progress_fold_duration_seconds",
			Help:    "Time to decode, verify and fold one batch of queued frames.",
			Buckets: prometheus.ExponentialBuckets(1e-6, 4, 10),
		}),
	}
	for _, r := range []string{ResultFolded, ResultReordered, ResultDuplicate, ResultDropped} {
		m.frames[r] = frames.WithLabelValues(r)
	}
	for _, r := range reasons {
		m.dropped[r] = dropped.WithLabelValues(r)
	}
	fillGauge := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "strata_progress_queue_fill",
		Help: "Fill of the progress receive queue, 0 to 1.",
	}, fill)
	level := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "strata_progress_backpressure_level",
		Help: "AD-37 backpressure level from the queue fill: 0 NONE, 1 THROTTLE, 2 BATCH, 3 REJECT.",
	}, func() float64 { return float64(LevelForFill(fill())) })
	if reg != nil {
		for _, c := range []prometheus.Collector{frames, dropped, m.updates, m.fold, fillGauge, level} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// drop counts n frames (updates for stale_fence, connections for
// conn_limit) dropped for reason.
func (m *metrics) drop(reason string, n int) {
	m.dropped[reason].Add(float64(n))
	m.nDropped.Add(uint64(n))
	if reason != ReasonStaleFence && reason != ReasonConnLimit {
		m.frames[ResultDropped].Add(float64(n))
	}
}

// reasonOf maps a decode error to its drop reason.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, ErrBadMAC):
		return ReasonBadMAC
	case errors.Is(err, ErrUnknownWorker):
		return ReasonUnknownWorker
	case errors.Is(err, ErrTooLarge):
		return ReasonTooLarge
	}
	return ReasonMalformed
}
