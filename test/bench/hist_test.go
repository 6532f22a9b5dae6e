package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketOf_BoundsHoldTheirValues(t *testing.T) {
	values := []uint64{0, 1, 255, 256, 257, 511, 512, 1000, 1 << 20, 1<<20 + 12345, 1<<39 + 7, histMaxValue}
	for _, v := range values {
		i := bucketOf(v)
		if i < 0 || i >= histBuckets {
			t.Fatalf("bucketOf(%d) = %d, outside [0, %d)", v, i, histBuckets)
		}
		if hi := bucketHigh(i); hi < v {
			t.Errorf("bucketHigh(bucketOf(%d)) = %d < value", v, hi)
		}
		if i > 0 && bucketHigh(i-1) >= v {
			t.Errorf("value %d also fits bucket %d (high %d)", v, i-1, bucketHigh(i-1))
		}
		if width := bucketHigh(i) - v; v >= 2*histSubBuckets && float64(width) > float64(v)/histSubBuckets {
			t.Errorf("bucket of %d is %d wide: more than 1/%d of the value", v, width, histSubBuckets)
		}
	}
}

// TestHistogram_QuantilesMatchSortedModel checks quantiles against the
// exact answer of a sorted slice, within one bucket.
func TestHistogram_QuantilesMatchSortedModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, n := range []int{1, 2, 10, 1000, 50_000} {
		var h Histogram
		model := make([]time.Duration, 0, n)
		for range n {
			// Log-uniform from 1 µs to ~1 s, like request latencies.
			d := time.Duration(math.Exp(rng.Float64()*math.Log(1e6)) * 1e3)
			h.Record(d)
			model = append(model, d)
		}
		slices.Sort(model)
		for _, q := range []float64{0, 0.5, 0.9, 0.99, 0.999, 1} {
			rank := int(math.Ceil(q * float64(n)))
			want := model[max(rank, 1)-1]
			got := h.Quantile(q)
			if got < want || float64(got-want) > float64(want)/histSubBuckets+1 {
				t.Errorf("n=%d q=%v: got %v, want %v (within 1/%d)", n, q, got, want, histSubBuckets)
			}
		}
		if h.Max() != model[n-1] || h.Count() != uint64(n) {
			t.Errorf("n=%d: max %v count %d, want %v %d", n, h.Max(), h.Count(), model[n-1], n)
		}
	}
}

func TestHistogram_MergeEqualsRecordingAll(t *testing.T) {
	var a, b, all Histogram
	for i := range 1000 {
		d := time.Duration(i*i) * time.Microsecond
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	var merged Histogram
	merged.Merge(&a)
	merged.Merge(&b)
	merged.Merge(&Histogram{})
	if merged != all {
		t.Fatalf("merged histogram differs from one that recorded every sample")
	}
}

func TestHistogram_EmptyAndClamped(t *testing.T) {
	var h Histogram
	if h.Quantile(0.5) != 0 || h.Mean() != 0 || h.Max() != 0 {
		t.Fatal("empty histogram reports non-zero latencies")
	}
	h.Record(-time.Second)
	h.Record(time.Duration(math.MaxInt64))
	if h.Quantile(0) != 0 || h.Max() != histMaxValue {
		t.Fatalf("min %v max %v, want 0 and %v", h.Quantile(0), h.Max(), time.Duration(histMaxValue))
	}
}
