package bench

import (
	"math/bits"
	"time"
)

// Histogram geometry: log-linear buckets in the manner of HdrHistogram.
// Values below 2·histSubBuckets nanoseconds get one bucket each; above,
// every power of two is split into histSubBuckets equal buckets, so a
// bucket's width is at most 1/histSubBuckets (0.8 %) of its values.
const (
	histSubBits    = 7
	histSubBuckets = 1 << histSubBits
	// histMaxValue is the largest latency recorded as itself (about 18
	// minutes); longer ones are clamped to it. Requests time out far sooner.
	histMaxValue = 1<<40 - 1
	// histBuckets is the bucket count that covers [0, histMaxValue]:
	// 35 KiB of counters per histogram.
	histBuckets = (40-histSubBits)*histSubBuckets + histSubBuckets
)

// Histogram records latencies in fixed memory (histBuckets counters),
// whatever the number of samples. Quantiles are exact to within one
// bucket: a relative error below 1/histSubBuckets. The zero value is ready
// to use. A Histogram is not safe for concurrent use: each client keeps its
// own and they are merged at the end.
type Histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sum    uint64 // nanoseconds; overflows only after ~584 years of samples
	min    uint64
	max    uint64
}

// Record adds one latency; negative ones count as 0.
func (h *Histogram) Record(d time.Duration) {
	v := uint64(max(d, 0))
	v = min(v, histMaxValue)
	h.counts[bucketOf(v)]++
	if h.n == 0 || v < h.min {
		h.min = v
	}
	h.max = max(h.max, v)
	h.n++
	h.sum += v
}

// Merge adds every sample of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Max is the largest sample, exactly.
func (h *Histogram) Max() time.Duration { return time.Duration(h.max) }

// Mean is the average sample, exactly; 0 without samples.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(h.sum / h.n)
}

// Quantile returns the latency at or below which a fraction q of the
// samples fall (q in [0, 1]), as the upper end of the bucket holding that
// rank, but never above Max nor below the smallest sample. 0 without
// samples.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(q * float64(h.n))
	if float64(rank) < q*float64(h.n) || rank == 0 {
		rank++ // ceil, and at least the first sample
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			return time.Duration(min(max(bucketHigh(i), h.min), h.max))
		}
	}
	return time.Duration(h.max)
}

// bucketOf is the index of the bucket holding v (v <= histMaxValue).
func bucketOf(v uint64) int {
	if v < 2*histSubBuckets {
		return int(v)
	}
	shift := bits.Len64(v) - (histSubBits + 1)
	return shift*histSubBuckets + int(v>>shift)
}

// bucketHigh is the largest value bucket i holds.
func bucketHigh(i int) uint64 {
	if i < 2*histSubBuckets {
		return uint64(i)
	}
	shift := i/histSubBuckets - 1
	top := uint64(i%histSubBuckets + histSubBuckets)
	return (top+1)<<shift - 1
}
