package livestats

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/strata-ledger/strata/transport/progress"
)

// Sample is one job's load as one manager saw it over one interval.
type Sample struct {
	Job      string        `json:"job"`
	Requests uint64        `json:"requests"` // completed + failed
	Failed   uint64        `json:"failed"`
	Hist     Histogram     `json:"hist"`
	Interval time.Duration `json:"interval_ns"`
}

// Histogram is a latency histogram in the data plane's log2 buckets. Its
// JSON is an array that ends at the last non-zero bucket; a longer one
// is refused.
type Histogram [Buckets]uint64

// MarshalJSON writes the buckets up to the last non-zero one.
func (h Histogram) MarshalJSON() ([]byte, error) {
	n := len(h)
	for n > 0 && h[n-1] == 0 {
		n--
	}
	return json.Marshal(h[:n])
}

// UnmarshalJSON reads at most Buckets counts.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var v []uint64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if len(v) > Buckets {
		return fmt.Errorf("histogram of %d buckets, limit %d", len(v), Buckets)
	}
	*h = Histogram{}
	copy(h[:], v)
	return nil
}

// aggKey names one aggregate of the data plane: a workflow as one worker
// reports it.
type aggKey struct{ workflow, worker string }

// cumulative is the last counters an aggregate reported.
type cumulative struct {
	fence         uint64
	total, failed uint64
	hist          Histogram
}

// Tracker turns drained aggregates into per-job deltas. The first report
// of an aggregate (or of a new lease) is only a baseline: its counters
// include work done before this manager saw it (a resumed workflow), so
// counting them would show a burst that never happened.
type Tracker struct {
	last map[aggKey]*cumulative
	acc  map[string]*Sample // by job, since the last Take
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker {
	return &Tracker{last: map[aggKey]*cumulative{}, acc: map[string]*Sample{}}
}

// Add folds one drained aggregate (cumulative counters) into its job's
// delta.
func (t *Tracker) Add(p progress.Progress) {
	k := aggKey{p.Workflow, p.Worker}
	c := t.last[k]
	total := p.Completed + p.Failed
	if c == nil || c.fence != p.Fence {
		c = &cumulative{fence: p.Fence, total: total, failed: p.Failed}
		copy(c.hist[:], p.Histogram)
		t.last[k] = c
		return
	}
	job, _, _ := strings.Cut(p.Workflow, "/")
	s := t.acc[job]
	if s == nil {
		s = &Sample{Job: job}
		t.acc[job] = s
	}
	s.Requests += sub(total, c.total)
	s.Failed += sub(p.Failed, c.failed)
	c.total, c.failed = max(c.total, total), max(c.failed, p.Failed)
	for i, v := range p.Histogram {
		s.Hist[i] += sub(v, c.hist[i])
		c.hist[i] = max(c.hist[i], v)
	}
}

// Forget drops an aggregate whose lease ended.
func (t *Tracker) Forget(workflow, worker string) { delete(t.last, aggKey{workflow, worker}) }

// Take returns the jobs' deltas since the last Take, each covering
// interval, and starts afresh. Beyond MaxSamplesPerPush jobs the rest
// are dropped (counted in dropped): live figures are best effort.
func (t *Tracker) Take(interval time.Duration) (out []Sample, dropped int) {
	out = make([]Sample, 0, min(len(t.acc), MaxSamplesPerPush))
	for job, s := range t.acc {
		if len(out) < MaxSamplesPerPush {
			s.Interval = interval
			out = append(out, *s)
		} else {
			dropped++
		}
		delete(t.acc, job)
	}
	return out, dropped
}

// sub is a − b, 0 when the counters went back (a stale frame folded
// after a newer one cannot happen, but a restarted worker can).
func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}
