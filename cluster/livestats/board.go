package livestats

import (
	"math"
	"sync"
	"time"

	"github.com/strata-ledger/strata/transport/api"
)

// stored is a sample as a gate received it.
type stored struct {
	region, node string
	at           time.Time // the gate's receive time
	s            Sample
}

// Board is a gate's memory of live samples: at most MaxJobs jobs, each
// with at most MaxSamplesPerJob samples of the last Window. Safe for
// concurrent use.
type Board struct {
	now func() time.Time

	mu      sync.Mutex
	jobs    map[string][]stored
	dropped uint64
}

// NewBoard returns an empty Board reading time from now.
func NewBoard(now func() time.Time) *Board {
	return &Board{now: now, jobs: map[string][]stored{}}
}

// Add records a push from node of region; it returns how many samples it
// dropped (new jobs beyond MaxJobs).
func (b *Board) Add(p *Push) int {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	dropped := 0
	for _, s := range p.Samples {
		ss, ok := b.jobs[s.Job]
		if !ok && len(b.jobs) >= MaxJobs {
			b.expireLocked(now)
		}
		if !ok && len(b.jobs) >= MaxJobs {
			dropped++
			continue
		}
		ss = fresh(ss, now)
		if len(ss) >= MaxSamplesPerJob {
			ss = ss[1:] // the oldest goes
		}
		b.jobs[s.Job] = append(ss, stored{region: p.Region, node: p.Node, at: now, s: s})
	}
	b.dropped += uint64(dropped)
	return dropped
}

// Dropped is the count of samples Add dropped.
func (b *Board) Dropped() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.dropped
}

// Jobs is the count of jobs tracked.
func (b *Board) Jobs() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.jobs)
}

// expireLocked drops every job without a sample in the last Window.
func (b *Board) expireLocked(now time.Time) {
	for job, ss := range b.jobs {
		if len(fresh(ss, now)) == 0 {
			delete(b.jobs, job)
		}
	}
}

// fresh is ss without the samples older than Window (ss is in arrival
// order, so they are a prefix).
func fresh(ss []stored, now time.Time) []stored {
	i := 0
	for i < len(ss) && now.Sub(ss[i].at) > Window {
		i++
	}
	return ss[i:]
}

// Live is job's live figures by region, nil when no manager reported it
// in the last Window.
func (b *Board) Live(job string) api.JobLive {
	now := b.now()
	b.mu.Lock()
	ss := fresh(b.jobs[job], now)
	if len(ss) == 0 {
		delete(b.jobs, job)
		b.mu.Unlock()
		return nil
	}
	ss = append([]stored(nil), ss...)
	b.mu.Unlock()

	type region struct {
		requests, failed uint64
		hist             Histogram
		from, last       time.Time
		nodes            map[string]bool
	}
	by := map[string]*region{}
	for _, st := range ss {
		r := by[st.region]
		if r == nil {
			r = &region{from: st.at.Add(-st.s.Interval), nodes: map[string]bool{}}
			by[st.region] = r
		}
		r.requests += st.s.Requests
		r.failed += st.s.Failed
		for i, v := range st.s.Hist {
			r.hist[i] += v
		}
		r.from = minTime(r.from, st.at.Add(-st.s.Interval))
		r.last = maxTime(r.last, st.at)
		r.nodes[st.node] = true
	}
	out := make(api.JobLive, len(by))
	for name, r := range by {
		// The figures cover from the start of the oldest sample's interval
		// to now, at most Window: a quiet second since the last push
		// lowers the rate, as it should.
		span := min(max(now.Sub(r.from), time.Millisecond), Window)
		sec := span.Seconds()
		out[name] = api.LiveStats{RequestsPerS: round3(float64(r.requests) / sec), FailedPerS: round3(float64(r.failed) / sec),
			P50Ms: round3(Quantile(&r.hist, 0.50)), P99Ms: round3(Quantile(&r.hist, 0.99)),
			WindowMs: span.Milliseconds(), AsOf: r.last.UnixMilli(), Managers: len(r.nodes)}
	}
	return out
}

// Quantile is the q-quantile (0 < q ≤ 1), in milliseconds, of a log2
// latency histogram (transport/progress: bucket 0 is under 1 µs, bucket
// i in [2^(i-1), 2^i) µs, the last one 2^30 µs and more), interpolated
// linearly within its bucket; 0 for an empty histogram.
func Quantile(h *Histogram, q float64) float64 {
	var total uint64
	for _, v := range h {
		total += v
	}
	if total == 0 {
		return 0
	}
	rank := q * float64(total)
	var below float64
	for i, v := range h {
		if v == 0 {
			continue
		}
		if below+float64(v) >= rank || i == Buckets-1 {
			lo, hi := bucketBounds(i)
			frac := min(max((rank-below)/float64(v), 0), 1)
			return (lo + (hi-lo)*frac) / 1000
		}
		below += float64(v)
	}
	return 0 // unreachable: the last non-empty bucket holds the rank
}

// bucketBounds is bucket i's range in µs; the last, open-ended bucket is
// taken as [2^30, 2^31) µs.
func bucketBounds(i int) (lo, hi float64) {
	if i == 0 {
		return 0, 1
	}
	return math.Ldexp(1, i-1), math.Ldexp(1, i)
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
