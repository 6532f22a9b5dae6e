package api

import (
	"encoding/json"
	"fmt"

	"github.com/strata-ledger/strata/fsm"
)

// Live load statistics of a running job (DESIGN §4: stats at NONE). The
// managers fold the latency histograms their workers send over the
// progress data plane and stream them, batched, to the gates, which keep
// a few seconds of them in memory. They are never written anywhere: a
// gate that restarts has none until the next push, and Durable is always
// false so that no client mistakes them for the ledger's counters.

// WatchEventLive names the watch events that carry a job's live
// statistics (data: a JobLive). A client that does not know it skips it.
const WatchEventLive = "live"

// LiveStats is one region's live load over the last few seconds.
type LiveStats struct {
	// RequestsPerS is the rate of simulated requests (completed + failed)
	// the region's workers reported over Window.
	RequestsPerS float64 `json:"requests_per_s"`
	// FailedPerS is the part of it that failed.
	FailedPerS float64 `json:"failed_per_s"`
	// P50Ms and P99Ms are latency percentiles (milliseconds) over Window,
	// interpolated within the workers' log2 histogram buckets; 0 when no
	// worker sent a histogram.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// WindowMs is the time the figures cover; AsOf when the last report
	// arrived (Unix ms, the gate's clock).
	WindowMs int64 `json:"window_ms"`
	AsOf     int64 `json:"as_of"`
	// Managers is how many managers reported in Window.
	Managers int `json:"managers"`
	// Durable is always false: these figures are not in any ledger.
	Durable bool `json:"durable"`
}

// JobLive is a job's live statistics by region: the "live" member of
// GET /v1/jobs/{id} and the data of a watch's live events.
type JobLive map[string]LiveStats

// decodeLive reads a live event's data: at most fsm.MaxRegionsPerJob
// regions, each a region name.
func decodeLive(data []byte) (JobLive, error) {
	var live JobLive
	if err := json.Unmarshal(data, &live); err != nil {
		return nil, err
	}
	if len(live) > fsm.MaxRegionsPerJob {
		return nil, fmt.Errorf("%d regions, limit %d", len(live), fsm.MaxRegionsPerJob)
	}
	for region := range live {
		if !fsm.IsRegion(region) {
			return nil, fmt.Errorf("region %q is not a region", region)
		}
	}
	return live, nil
}
